"""`bench --only search` writes its rows as an ingest writes them and ends as an ingest ends: the BM25 counts its
writes left pending are merged (left pending, every keyword search of the bench read all ~6 million of them and
its chat-turn figure measured a state no ingest leaves)."""

from __future__ import annotations

import random

import psycopg

from benchmarks import datasets
from benchmarks.corpus import question_about, sentences
from rag.store import Store


def test_the_search_bench_leaves_no_bm25_counts_pending(store: Store, pg_uri: str) -> None:
    datasets.fill(pg_uri, 400, 16, bulk=False)
    with psycopg.connect(pg_uri) as conn:
        assert conn.execute("SELECT count(*) FROM bm25_pending").fetchone() == (0,)
        assert conn.execute("SELECT sum(chunks)::int FROM bm25_knowledge").fetchone() == (400,)
    question = question_about(random.Random(1), sentences(1, seed=0)[0])  # about the first row written
    assert store.keyword_search(question, list(datasets.NAMES), top_k=3)
