"""What a stopped ingest keeps: the vectors of the chunks it embedded (rag.store.vector_cache), so that
the next Ingest of the file embeds only the rest.

The document itself stays atomic in the knowledge base (one transaction, all or nothing); only its
vectors outlive a stop. `Resume` is one file's embedding's cache (`rag.embeddings.batches.reusing`):
it finds what was kept, keeps each batch as it is done, and counts both, so a stop can say how many
chunks are kept and a resumed ingest how many it reused."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag.errors import RagError, one_line

if TYPE_CHECKING:
    import numpy as np

    from rag.embeddings import Embedder
    from rag.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kept:
    """Of a file's `total` chunks, how many have their vectors kept (`kept`), `reused` of them found kept
    when its embedding began."""

    kept: int
    total: int
    reused: int = 0


class Resume:
    """One file's embedding with the vector cache: a `batches.BatchCache` that counts. A cache that
    fails (the database refused a write) only costs the resume, never the ingest: it is logged."""

    def __init__(self, store: Store, embedder: Embedder, knowledge: str, filename: str, total: int) -> None:
        # Here, not at the top: rag.ingest does not import the store (psycopg); it is passed in.
        from rag.store.vector_cache import embedder_key

        self._cache = store.vector_cache
        self._embedder = embedder_key(embedder.name, embedder.dimension)
        self._file = (knowledge, filename)
        self.total = total
        self.reused = 0
        self.embedded = 0
        """Chunks embedded and kept in this run."""
        self._keys: list[bytes] = []

    @property
    def kept(self) -> int:
        return self.reused + self.embedded

    def found(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        try:
            hits = self._cache.found(self._embedder, keys)
        except RagError as exc:
            log.warning("cannot read the vectors kept from stopped ingests: %s", one_line(exc, None))
            return {}
        self.reused = sum(key in hits for key in keys)
        self._keys.extend(hits)
        _note(self._file, Kept(self.kept, self.total, self.reused))
        return hits

    def keep(self, keys: Sequence[bytes], rows: np.ndarray) -> None:
        try:
            self._cache.keep(self._embedder, keys, rows)
        except RagError as exc:
            log.warning("cannot keep %d embedded chunks for a resume: %s", len(keys), one_line(exc, None))
            return
        self.embedded += len(keys)
        self._keys.extend(keys)
        _note(self._file, Kept(self.kept, self.total, self.reused))

    def stopped(self) -> Kept:
        """What this embedding kept, now that it was stopped (forgotten by `kept_after_stop`)."""
        _forget(self._file)
        return Kept(self.kept, self.total, self.reused)

    def stored(self) -> None:
        """The document is stored: its rows are dropped (its vectors are in the knowledge base now), and
        the cache pruned to its bounds (rag.store.vector_cache)."""
        _forget(self._file)
        try:
            if self._keys:
                self._cache.drop(self._embedder, self._keys)
            self._cache.prune()
        except RagError as exc:
            log.warning("cannot drop the vectors kept for a stored document: %s", one_line(exc, None))


# What the embedding of each (knowledge base, file) in progress has kept, for `kept_after_stop`: a stop that
# ends the run from a progress callback (the Upload page's Stop, Ctrl+C) leaves no result to carry it.
_KEPT: dict[tuple[str, str], Kept] = {}
_LOCK = threading.Lock()
_MAX_NOTES = 256
"""Notes of files whose ingest failed otherwise (never read) are dropped beyond this many."""


def _note(file: tuple[str, str], kept: Kept) -> None:
    with _LOCK:
        _KEPT.pop(file, None)
        _KEPT[file] = kept
        while len(_KEPT) > _MAX_NOTES:
            del _KEPT[next(iter(_KEPT))]


def _forget(file: tuple[str, str]) -> None:
    with _LOCK:
        _KEPT.pop(file, None)


def kept_after_stop(knowledge: str, filename: str) -> Kept | None:
    """What the stopped embedding of `filename` into `knowledge` in this process kept (None: it kept
    nothing, or it ran elsewhere), forgotten once told."""
    with _LOCK:
        return _KEPT.pop((knowledge, filename), None)
