"""rag.documents.model: the frozen Document and the pages a span of its text covers."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.documents import Document, Page, load_bytes, page_label


def _doc(*texts: str, numbers: tuple[int, ...] | None = None) -> Document:
    numbers = numbers or tuple(range(1, len(texts) + 1))
    pages = tuple(Page(n, t) for n, t in zip(numbers, texts))
    return Document("t.txt", "txt", pages, page_count=max(numbers), dropped_pages=())


def test_document_is_frozen() -> None:
    doc = _doc("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.kind = "pdf"  # type: ignore[misc]


def test_pages_for_span_across_page_boundaries() -> None:
    doc = load_bytes(b"alpha\fbeta\f\fgamma", "span.txt")
    assert doc.text == "alpha\n\nbeta\n\ngamma"
    assert doc.page_starts == (0, 7, 13)
    end = len(doc.text)
    cases = {
        (0, 5): (1,),
        (0, 6): (1,),  # runs into the separator only
        (5, 7): (1,),  # the separator alone maps to the page before
        (5, 8): (2,),  # starts on the separator, first text is page 2
        (3, 9): (1, 2),
        (8, 15): (2, 4),  # page 3 was dropped, so it never appears
        (0, end): (1, 2, 4),
        (7, 7): (2,),
        (6, 6): (1,),
        (11, 13): (2,),
        (12, 14): (4,),
        (end, end): (4,),
    }
    assert {span: doc.pages_for_span(*span) for span in cases} == cases


@pytest.mark.parametrize("span", [(-1, 3), (4, 2), (0, 10**6)])
def test_pages_for_span_rejects_spans_outside_the_text(span: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        _doc("alpha", "beta").pages_for_span(*span)


def _pages_by_brute_force(doc: Document, start: int, end: int) -> tuple[int, ...]:
    hits = []
    for page, page_start in zip(doc.pages, doc.page_starts):
        page_end = page_start + len(page.text)
        if start < page_end and end > page_start:
            hits.append(page.number)
    if not hits:  # empty span or separator only: the last page starting at or before it
        hits = [page.number for page, s in zip(doc.pages, doc.page_starts) if s <= start][-1:]
    return tuple(hits)


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.text(alphabet="ab\n", min_size=1, max_size=6).filter(str.strip), min_size=1, max_size=5),
    data=st.data(),
)
def test_pages_for_span_matches_brute_force(texts: list[str], data: st.DataObject) -> None:
    doc = _doc(*texts)
    start = data.draw(st.integers(0, len(doc.text)))
    end = data.draw(st.integers(start, len(doc.text)))
    assert doc.pages_for_span(start, end) == _pages_by_brute_force(doc, start, end)


def test_page_label_collapses_consecutive_numbers() -> None:
    assert page_label([]) == ""
    assert page_label((4,)) == "4"
    assert page_label([5, 3, 4, 2]) == "2–5"
    assert page_label([7, 1, 3]) == "1, 3, 7"
