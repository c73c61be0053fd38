"""Embeddings shared across chunk settings and sessions: a text is embedded once per embedder."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag.embeddings import Embedder, ProgressCallback, timing
from rag.errors import RagError
from rag.text import Text

_Key = tuple[str, bool, bytes]
"""(embedder name, a query rather than a passage, sha256 of the text)."""


@dataclass(frozen=True)
class CacheStats:
    entries: int
    hits: int
    misses: int
    evictions: int


class EmbeddingCache:
    """Vectors by (embedder name, passage or query, sha256 of the text), least recently used evicted first.

    A question is kept apart from the same text as a passage: e5 reads "query: " before one and
    "passage: " before the other, so their vectors differ (the chat searches with `embed_queries`).

    Thread-safe: one instance can serve every session of the app. Embedding happens outside
    the lock, so two sessions asking for the same new text at the same time may both embed it.
    """

    SLICE = 16
    """Texts embedded and stored at a time (see `embed`)."""

    def __init__(self, max_entries: int = 50_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._vectors: OrderedDict[_Key, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._evictions = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._vectors), self._hits, self._misses, self._evictions)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def missing(self, embedder: str, texts: Sequence[str], *, queries: bool = False) -> list[str]:
        """The distinct texts of `texts` (in order) that have no vector under `embedder`'s name (as
        queries, with `queries`): what `embed` would send to the embedder. Counts nothing as a hit or a miss."""
        seen: set[bytes] = set()
        left: list[str] = []
        with self._lock:
            for text in texts:
                digest = _digest(text)
                if digest not in seen and (embedder, queries, digest) not in self._vectors:
                    left.append(text)
                seen.add(digest)
        return left

    def fill(self, embedder: str, vectors: Mapping[str, np.ndarray]) -> int:
        """Keep `vectors` (text -> vector of `embedder`, e.g. the ones a knowledge base holds), as if
        `embed` had embedded them as passages; how many were new here."""
        added = 0
        with self._lock:
            for text, vector in vectors.items():
                key = (embedder, False, _digest(text))
                if key in self._vectors:
                    continue
                row = np.array(vector, dtype=np.float32)
                row.flags.writeable = False
                self._vectors[key] = row
                added += 1
            while len(self._vectors) > self.max_entries:
                self._vectors.popitem(last=False)
                self._evictions += 1
        return added

    def embed(
        self,
        embedder: Embedder,
        texts: Sequence[str],
        progress: ProgressCallback | None = None,
        *,
        queries: bool = False,
    ) -> np.ndarray:
        """Vectors for `texts` (rows in order), embedding only texts not seen before: as passages
        (`embedder.embed`), or with `queries` as questions to search with (`embedder.embed_queries`).

        `progress(done, total)` counts the texts actually sent to the embedder, after each slice; it is not
        called when every text was cached. A text repeated within `texts` is embedded once. If the
        embedder or `progress` raises, the slices embedded before are kept.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        name = embedder.name
        keys = [(name, queries, _digest(t)) for t in texts]
        found: dict[_Key, np.ndarray] = {}
        missing: dict[_Key, str] = {}
        with self._lock:
            for key, text in zip(keys, texts):
                if key in found or key in missing:
                    continue
                vector = self._vectors.get(key)
                if vector is None:
                    missing[key] = text
                else:
                    self._vectors.move_to_end(key)
                    found[key] = vector
            self._hits += len(found)
            self._misses += len(missing)
        # Embedded and kept a slice at a time: a check stopped halfway (the Chunk Lab's Stop, or any
        # click, ends the script run inside `progress`) keeps what it embedded, and the next run
        # embeds only the rest. 16 texts are 2-5 s with the e5 embedder on 2 cores.
        pending = list(missing.items())
        timed = isinstance(embedder, timing.Paced)  # e5 times its own batches, in tokens
        total = len(pending)
        for start in range(0, total, self.SLICE):
            part = pending[start : start + self.SLICE]
            started = time.perf_counter()
            batch = [text for _, text in part]
            fresh = np.asarray(embedder.embed_queries(batch) if queries else embedder.embed(batch), dtype=np.float32)
            if not timed:  # so that the next check's estimate (rag.evaluation.plan) has a rate to go by
                timing.record_batch(name, len(part), time.perf_counter() - started)
            if fresh.ndim != 2 or fresh.shape[0] != len(part):
                raise RagError(
                    Text(
                        "the embedder {name} returned {got} vectors for {count} texts",
                        name=name,
                        got=fresh.shape[0] if fresh.ndim else 0,
                        count=len(part),
                    )
                )
            fresh.flags.writeable = False
            with self._lock:
                for (key, _), vector in zip(part, fresh):
                    found[key] = vector
                    self._vectors[key] = vector
                    self._vectors.move_to_end(key)
                while len(self._vectors) > self.max_entries:
                    self._vectors.popitem(last=False)
                    self._evictions += 1
            if progress is not None:  # after the slice is kept: this is where a stop lands
                progress(start + len(part), total)
        if not keys:
            dimension = _dimension_of(embedder)
            return np.empty((0, dimension), dtype=np.float32)
        return np.stack([found[key] for key in keys])


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _dimension_of(embedder: Embedder) -> int:
    try:
        return int(embedder.dimension)
    except RagError:
        return 0
