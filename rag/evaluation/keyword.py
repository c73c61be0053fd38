"""BM25 over one document's chunks, in memory: the keyword half of the Chunk Lab's check.

The Chunk Lab measures settings before anything is stored, so it cannot ask PostgreSQL; this is
the same formula as the stored keyword search (rag/store/keyword_sql.py: Lucene's idf, k1 1.2,
b 0.75) over the same words and Chinese character bigrams (`rag.query.keywords.search_text`),
without the stemming of PostgreSQL's 'english' configuration.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from rag.query.keywords import search_text

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens, each run of CJK characters as its overlapping bigrams (the benchmark's BM25
    peers tokenise with it too, so that they differ from ours in ranking only)."""
    return [w.lower() for w in _WORD.findall(search_text(text))]


class ChunkBM25:
    """BM25 scores of every chunk text for a query (0 where no query word occurs)."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self._docs = [Counter(tokens(t)) for t in texts]
        df = Counter(term for doc in self._docs for term in doc)
        n = len(self._docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        lengths = np.array([sum(d.values()) for d in self._docs], dtype=np.float64)
        average = float(lengths.mean()) if n and lengths.any() else 1.0
        self._k1 = k1
        self._norm = k1 * (1 - b + b * lengths / average)

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self._docs), dtype=np.float64)
        for term in set(tokens(query)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            tf = np.fromiter((d.get(term, 0) for d in self._docs), dtype=np.float64, count=len(self._docs))
            out += idf * tf * (self._k1 + 1) / (tf + self._norm)
        return out
