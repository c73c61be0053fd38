"""The plain BM25 peers the retrieval benchmark compares with: `rank-bm25` and `bm25s` over the same passages.

Tokens are lower-cased words plus Chinese character bigrams: the text our keyword index stores
(`rag.query.keywords.search_text`), split into its words (`rag.evaluation.keyword.tokens`), so a peer
differs from our keyword search in ranking only, not in what it can match.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag.errors import RagError
from rag.evaluation.keyword import tokens


class BM25Peer:
    """Okapi BM25 (rank-bm25's defaults: k1 1.5, b 0.75) over `texts`; `rank` gives indices, best first."""

    def __init__(self, texts: Sequence[str]) -> None:
        try:
            from rank_bm25 import BM25Okapi
        except ImportError as exc:
            raise RagError(
                "the BM25 peer needs rank-bm25: make bench, or pip install -r requirements-bench.txt"
            ) from exc
        self._bm25 = BM25Okapi([tokens(t) for t in texts])

    def rank(self, query: str, top_k: int) -> list[int]:
        scores = self._bm25.get_scores(tokens(query))
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [int(i) for i in order if scores[i] > 0]


class Bm25sPeer:
    """`bm25s` (its defaults: Lucene's BM25, k1 1.5, b 0.75) over the same tokens: the fast BM25 library a
    user would reach for; `rank` as BM25Peer's. Unknown query words are dropped (bm25s indexes only the
    corpus's vocabulary)."""

    def __init__(self, texts: Sequence[str]) -> None:
        try:
            import bm25s
        except ImportError as exc:
            raise RagError("the bm25s peer needs bm25s: make bench, or pip install -r requirements-bench.txt") from exc
        import logging

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it sets its own logger to DEBUG on import
        corpus = [tokens(t) for t in texts]
        self._vocabulary = {w for doc in corpus for w in doc}
        self._bm25 = bm25s.BM25()
        self._bm25.index(corpus, show_progress=False)

    def rank(self, query: str, top_k: int) -> list[int]:
        words = [w for w in tokens(query) if w in self._vocabulary]
        if not words:
            return []
        docs, scores = self._bm25.retrieve([words], k=top_k, show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]
