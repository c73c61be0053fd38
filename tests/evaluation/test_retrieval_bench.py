"""The retrieval benchmark's harness on the real store: one set ingested, every mode and the peer measured."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from benchmarks.retrieval import measure_set
from rag import retrieve
from rag.evaluation import Question, retrieval_set
from rag.evaluation.sets import EvalSet
from rag.evaluation.vectors import CachedEmbedder, DiskVectors
from rag.settings import Settings
from rag.store import Store


def test_measure_set_scores_every_mode_and_the_bm25_peer(
    store: Store, settings: Settings, pg_uri: str, tmp_path: Path
) -> None:
    data = retrieval_set()
    small = EvalSet(
        "en_small", data.passages + data.distractors, tuple(Question(q.question, "", q.passage) for q in data.questions)
    )
    embedder = retrieve.embedder_named_or_default(settings)
    cache = DiskVectors(tmp_path, embedder)
    with retrieve.use_embedder(CachedEmbedder(cache)) as cached:
        figures = measure_set(store, pg_uri, settings, small, cached, 20)
    assert (figures.passages, figures.questions) == (len(small.passages), 20)
    assert set(figures.hit5) == set(figures.mrr) == {*retrieve.MODES, "bm25", "bm25s"}
    assert figures.hit5["bm25s"] > 0.5 and set(figures.peer_ms) == {"bm25", "bm25s"}
    # Every passage and question was embedded once, through the cache, with the real embedder.
    assert cache.embedded == len(small.passages) + 20
    stored = cache.vectors([small.passages[0].text])
    assert np.allclose(stored, embedder.embed([small.passages[0].text]), atol=1e-6)
    # The peer's hit@5, counted here straight from rank-bm25.
    words = [p.text.lower().split() for p in small.passages]
    assert figures.hit5["bm25"] > 0.5
    bm25 = BM25Okapi([w for w in words])
    keys = [p.key for p in small.passages]
    english = [q for q in small.sample(20) if q.text.isascii()]
    assert english, "the sample has English questions"
    top = {q.text: [keys[i] for i in np.argsort(-bm25.get_scores(q.text.lower().split()))[:5]] for q in english}
    assert sum(q.file in top[q.text] for q in english) >= 0.5 * len(english)
