"""The Chunk Lab's check ranks as the chat's search modes do: BM25 over the chunks, and the fusion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag.chunking import ChunkSettings
from rag.errors import RagError
from rag.evaluation import EmbeddingCache, Question, evaluate
from rag.evaluation.keyword import ChunkBM25
from tests.evaluation.test_evaluation import DOC, QUESTIONS, SMALL, BagOfWords, chunk_set


def test_chunk_bm25_is_the_formula_by_hand() -> None:
    texts = ["red apple pie", "green apple tart", "blue sky today", "red sky tonight red"]
    scores = ChunkBM25(texts).scores("red apple")
    n, k1, b = 4, 1.2, 0.75
    lengths = [3, 3, 3, 4]
    average = sum(lengths) / n

    def term(tf: int, df: int, length: int) -> float:
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))

    expected = [term(1, 2, 3) + term(1, 2, 3), term(1, 2, 3), 0.0, term(2, 2, 4)]
    assert scores == pytest.approx(expected)
    assert ChunkBM25(texts).scores("nothing shared").tolist() == [0.0, 0.0, 0.0, 0.0]
    # Chinese through character bigrams: 宝玉 matches the chunk holding it, not the one holding 宝钗.
    zh = ChunkBM25(["贾宝玉来了", "薛宝钗来了"]).scores("宝玉")
    assert zh[0] > 0 == zh[1]


def test_keyword_mode_ranks_by_bm25_where_cosine_ties() -> None:
    # "red apple": cosine ties chunks 1 and 3 (one shared word each) and ranks the target, chunk 1, 2nd
    # behind chunk 0; BM25 agrees on chunk 0 first, and its idf is what orders the rest.
    cache = EmbeddingCache()
    vector = evaluate({"small": SMALL}, DOC, QUESTIONS, BagOfWords(), cache, mode="vector").result("small")
    keyword = evaluate({"small": SMALL}, DOC, QUESTIONS, BagOfWords(), cache, mode="keyword").result("small")
    bm25 = ChunkBM25([c.text for c in SMALL.chunks])
    for q, result in zip(QUESTIONS, keyword.questions):
        row = bm25.scores(q.text)
        order = list(np.argsort(-row, kind="stable"))
        assert result.rank == 1 + min(order.index(t) for t in result.targets)
        assert result.top_index == SMALL.chunks[order[0]].index
    assert [q.rank for q in vector.questions] == [2, 1, 2]


def test_hybrid_finds_what_either_mode_puts_first_when_they_agree() -> None:
    agree = chunk_set(
        ("red apple pie", "green apple tart", "blue sky today", "red sky tonight"),
        ChunkSettings(strategy="token", chunk_size=3, chunk_overlap=0),
    )
    questions = [Question("blue sky today", "blue sky today")]
    result = evaluate({"s": agree}, DOC, questions, BagOfWords(), EmbeddingCache(), mode="hybrid").result("s")
    assert result.questions[0].rank == 1
    assert result.questions[0].top_score == pytest.approx(1.0)  # first in both lists: the fused maximum


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(RagError, match="unknown search mode 'semantic'"):
        evaluate({"small": SMALL}, DOC, QUESTIONS, BagOfWords(), EmbeddingCache(), mode="semantic")
