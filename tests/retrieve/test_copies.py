"""Copies of one passage in several documents are kept once, the others named on it (rag.retrieve.copies)."""

from __future__ import annotations

import uuid

import pytest

from rag import retrieve
from rag.evaluation.datasets import Passage
from rag.retrieve import copies, searching
from rag.settings import Settings
from rag.store import Hit, Store
from tests.retrieve.test_retrieval_modes import write_passages

WATCH = (
    "School Watch is a programme in which volunteers visit schools once a week. They talk with pupils about road "
    "safety, help teachers with reading groups and report broken fences to the council. The programme began in "
    "2019 and now reaches forty schools in the district."
)
SLEEP = (
    "Sleep lessons for teenagers who do not get enough sleep will be offered to schools across Scotland from "
    "next year. Each lesson explains why screens keep pupils awake and how a regular bedtime helps."
)


def hit(content: str, filename: str, page: int = 1) -> Hit:
    return Hit(uuid.uuid4(), content, {"original_filename": filename, "pages": [page]}, 0.5)


def test_chunks_of_one_passage_cut_at_other_places_are_one_passage() -> None:
    shifted = "Last week's notes. " + WATCH[:180]
    other = WATCH[60:] + " Next: the autumn fair."
    assert copies.same_passage(WATCH, shifted) and copies.same_passage(WATCH, other)
    assert not copies.same_passage(WATCH, SLEEP)  # one topic word (schools), not one passage
    assert copies.same_passage("十二生肖是中国古代的纪年方法", "前言：十二生肖是中国古代的纪年方法。")
    assert not copies.same_passage("十二生肖是中国古代的纪年方法", "二十四节气是中国古代的历法")


def test_the_first_copy_is_kept_and_names_the_others() -> None:
    hits = [hit(WATCH, "a.pdf", 11), hit("Notes. " + WATCH, "b.pdf", 8), hit(SLEEP, "c.pdf"), hit(WATCH, "d.pdf", 3)]
    kept = copies.keep_once(hits, 3)
    assert [h.original_filename for h in kept] == ["a.pdf", "c.pdf"]  # fewer than asked: the rest were copies
    assert [h.original_filename for h in copies.keep_once(hits, 1)] == ["a.pdf"]
    assert [c.label for c in kept[0].copies] == ["b.pdf p. 8", "d.pdf p. 3"] and kept[1].copies == ()
    assert kept[0].as_dict()["copies"][0] == {"filename": "b.pdf", "pages": [8], "location": ""}


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_a_search_gives_other_passages_beside_one_copied_into_many_documents(
    store: Store, settings: Settings, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk: one passage in four PDFs filled all four sources, the one that answered left out. The copies
    fill the first reading (2 x top_k), so the lists are read again deeper: the question is embedded once."""
    passages = [Passage(f"watch-{i}.pdf", f"Volume {i} of the newsletter. " + WATCH) for i in range(4)]
    write_passages(store, settings, "news", [*passages, Passage("sleep.pdf", SLEEP)])
    embedded: list[str] = []
    embed = searching.query_vectors
    monkeypatch.setattr(searching, "query_vectors", lambda e, q: embedded.extend(q) or embed(e, q))
    question = "Which schools will the programme be offered to?"
    hits = retrieve.search(store, settings, question, ["news"], top_k=2, mode=mode)
    assert sorted(h.original_filename.split("-")[0] for h in hits) == ["sleep.pdf", "watch"]
    [watch] = [h for h in hits if h.original_filename.startswith("watch")]
    assert watch.copies and all(c.label.startswith("watch-") and c.label.endswith("p. 1") for c in watch.copies)
    assert embedded == ([] if mode == "keyword" else [question])
    if mode == "hybrid":
        assert [h.fused_rank for h in hits] == [1, 2]
