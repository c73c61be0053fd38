"""A knowledge base's saved question set and its runs, on the real embedded PostgreSQL."""

from __future__ import annotations

import pytest
from psycopg.types.json import Jsonb

from rag.errors import RagError
from rag.store import Store
from rag.store.question_sets import RunFigures, SavedQuestion, fingerprint


def make_kb(store: Store, name: str) -> None:
    with store._conn() as conn:
        conn.execute(
            "INSERT INTO knowledge_bases (name, embedder, dimension, chunk_settings) VALUES (%s, %s, %s, %s)",
            (name, "local:wordllama", 256, Jsonb({"strategy": "spring", "chunk_size": 128})),
        )


def q(text: str, document: str, start: int = 0) -> SavedQuestion:
    return SavedQuestion(text, "答案", start, start + 2, "zh", document)


def test_a_set_is_replaced_per_document_and_goes_with_its_knowledge_base(store: Store) -> None:
    with pytest.raises(RagError, match="no knowledge base named 'kb'"):
        store.question_sets.replace("kb", "a.pdf", [q("谁？", "a.pdf")])
    make_kb(store, "kb")
    assert store.question_sets.replace("kb", "a.pdf", [q("谁？", "a.pdf"), q("何时？", "a.pdf", 9)]) == 2
    assert store.question_sets.replace("kb", "b.pdf", [q("哪里？", "b.pdf")]) == 3
    assert store.question_sets.replace("kb", "a.pdf", [q("为何？", "a.pdf", 4)]) == 2
    assert store.question_sets.questions("kb") == [q("为何？", "a.pdf", 4), q("哪里？", "b.pdf")]
    store.delete_knowledge_base("kb")
    assert store.question_sets.questions("kb") == []


def test_runs_are_saved_and_the_last_one_per_mode_returned(store: Store) -> None:
    make_kb(store, "kb")
    saved = [q("谁？", "a.pdf")]
    assert store.question_sets.last_run("kb", "hybrid") is None

    def run(mode: str, mrr: float) -> RunFigures:
        return RunFigures("local:wordllama", {"chunk_size": 128}, mode, 1, fingerprint(saved), mrr, mrr, 1.0, mrr)

    first = store.question_sets.save_run("kb", run("hybrid", 0.5))
    store.question_sets.save_run("kb", run("keyword", 0.25))
    second = store.question_sets.save_run("kb", run("hybrid", 1.0))
    last = store.question_sets.last_run("kb", "hybrid")
    assert last == second and last is not None and last.mrr == 1.0
    assert first.ran_at is not None and last.ran_at is not None and last.ran_at > first.ran_at
    assert fingerprint(saved) != fingerprint([q("谁？", "a.pdf", 1)])
