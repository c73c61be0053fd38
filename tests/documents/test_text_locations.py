"""A TXT/MD chunk's location: its heading and the file's lines it covers ('第二回 … · lines 120–164'),
counted in the file as it was (form feeds, CRLF, blank pages and blank page ends that `text` drops
or adds); other formats keep theirs."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.documents import Document, Page, load_bytes
from tests.docgen import make_pdf

# --- lines of the file ---------------------------------------------------------------------------

# A file line: its segments, a form feed (a page break) before each but the first. Each segment starts
# with a marker naming its line, so any character of `text` can be traced back to its file line.
_segment = st.tuples(st.sampled_from(["", " ", "  ", "\t"]), st.text(alphabet="ab 甲", max_size=4))
_line = st.lists(_segment, min_size=1, max_size=3)


def _file(lines: list[list[tuple[str, str]]], ending: str, blank: set[int]) -> str:
    out = []
    for number, segments in enumerate(lines, start=1):
        if number in blank:  # a blank line, or a page of nothing but blanks
            out.append("\f  " if number % 2 else "")
            continue
        out.append("\f".join(f"{lead}<{number}>{rest}" for lead, rest in segments))
    return ending.join(out)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_line, min_size=1, max_size=12), ending=st.sampled_from(["\n", "\r\n", "\r"]), data=st.data())
def test_every_character_maps_to_its_line_in_the_file(
    lines: list[list[tuple[str, str]]], ending: str, data: st.DataObject
) -> None:
    blank = set(data.draw(st.lists(st.integers(1, len(lines)), max_size=4)))
    if len(blank) == len(lines):
        blank.discard(1)
    doc = load_bytes(_file(lines, ending, blank).encode(), "lines.txt")
    markers = list(re.finditer(r"<(\d+)>", doc.text))
    assert {int(m.group(1)) for m in markers} == set(range(1, len(lines) + 1)) - blank
    for marker in markers:
        # Each character of the segment and the newline after it (the first of a separator after a
        # page's last line) is on the marker's line.
        newline = doc.text.find("\n", marker.start())
        stop = len(doc.text) if newline < 0 else newline + 1
        for offset in range(marker.start(), stop):
            assert doc.line_at(offset) == int(marker.group(1)), (offset, doc.text)


def test_lines_count_the_file_not_the_text() -> None:
    raw = "one\r\ntwo\r\n\r\n\r\n\fthree\n\f\n\n\fRFC\ffour"
    doc = load_bytes(raw.encode(), "rfc.txt")
    assert doc.text == "one\ntwo\n\nthree\n\nRFC\n\nfour"
    assert doc.first_lines == (1, 5, 8, 8)  # the third part (blank) was dropped but its lines count
    assert [doc.line_at(doc.text.index(w)) for w in ("one", "two", "three", "RFC", "four")] == [1, 2, 5, 8, 8]
    assert doc.line_at(len(doc.text)) == 8
    assert doc.line_at(doc.text.index("RFC") - 1) == 5  # a separator: the last line of the page before
    with pytest.raises(ValueError):
        doc.line_at(len(doc.text) + 1)


def test_a_document_made_without_first_lines_counts_its_text() -> None:
    doc = Document("t.txt", "txt", (Page(1, "a\nb"), Page(2, "c")), page_count=2, dropped_pages=())
    assert [doc.line_at(doc.text.index(c)) for c in "abc"] == [1, 2, 4]


# --- the location a chunk's citation says --------------------------------------------------------

NOVEL = "\n".join(
    [
        "红楼梦",  # 1
        "　　前言的正文。",  # 2
        "第一回　甄士隐梦幻识通灵　贾雨村风尘怀闺秀",  # 3
        "　　此开卷第一回也。",  # 4
        "　　作者自云。",  # 5
        "",  # 6
        "第二回　贾夫人仙逝扬州城　冷子兴演说荣国府",  # 7
        "　　诗云：一局输赢料不真。",  # 8
        "　　香销茶尽尚逡巡。",  # 9
    ]
)


def span(doc: Document, first: str, last: str) -> tuple[int, int]:
    return doc.text.index(first), doc.text.index(last) + len(last)


def test_a_chunk_names_its_chapter_and_lines() -> None:
    doc = load_bytes(NOVEL.encode(), "红楼梦.txt")
    second = "第二回 贾夫人仙逝扬州城 冷子兴演说荣国府"
    assert doc.span_location(*span(doc, "诗云", "逡巡。")) == f"{second} · lines 8–9"
    assert doc.span_location(*span(doc, "第二回", "诗云")) == f"{second} · lines 7–8"
    assert doc.span_location(*span(doc, "香销", "逡巡")) == f"{second} · line 9"
    # At or before the start: a chunk from the end of chapter one into chapter two is chapter one's.
    assert doc.span_location(*span(doc, "作者", "诗云")) == "第一回 甄士隐梦幻识通灵 贾雨村风尘怀闺秀 · lines 5–8"
    # Blank characters at either end do not count: this span starts on line 6 (blank), ends on line 7's newline.
    blank = doc.text.index("作者自云。") + len("作者自云。")
    assert doc.span_location(blank, doc.text.index("第二回") + 22) == f"{second} · line 7"
    assert doc.span_location(*span(doc, "红楼梦", "前言的正文")) == "lines 1–2"  # before any heading
    assert doc.span_location(3, 3) == "line 1"  # an empty span: where it is
    with pytest.raises(ValueError):
        doc.span_location(5, len(doc.text) + 1)


def test_markdown_chunks_name_their_heading_path() -> None:
    doc = load_bytes(b"# Guide\n\nWelcome.\n\n## Install\n\nRun pip.\nThen test.\n", "guide.md")
    assert doc.span_location(*span(doc, "Run pip", "test.")) == "Guide › Install · lines 7–8"
    assert doc.chunk_extras((1,), *span(doc, "Welcome", "Welcome")) == {"location": "Guide · line 3"}


def test_chunk_extras_and_location_of_text_and_other_formats() -> None:
    doc = load_bytes(NOVEL.encode(), "红楼梦.txt")
    start, end = span(doc, "诗云", "逡巡。")
    where = "第二回 贾夫人仙逝扬州城 冷子兴演说荣国府 · lines 8–9"
    assert doc.by_lines
    assert doc.chunk_extras((1,), start, end) == {"location": where}
    assert doc.chunk_location((1,), start, end) == where
    assert doc.chunk_extras((1,)) == {}  # no span: nothing to say (as before)
    # A PDF's chunk says its pages, as before; a section's its heading path.
    pdf = load_bytes(make_pdf(["第一回 page one", "page two"]), "book.pdf")
    assert not pdf.by_lines
    assert pdf.chunk_extras((1, 2), 0, len(pdf.text)) == {}
    assert pdf.chunk_location((1, 2), 0, len(pdf.text)) == "pp. 1–2"
    docx = Document("r.docx", "docx", (Page(1, "Body", "Report › Results"),), page_count=1, dropped_pages=())
    assert docx.chunk_extras((1,), 0, 4) == {"location": "Report › Results"}
    assert docx.chunk_location((1,), 0, 4) == "Report › Results"
