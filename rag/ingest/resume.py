"""What a stopped ingest keeps: the vectors of the chunks it embedded (rag.store.vector_cache), so that
the next Ingest of the file embeds only the rest.

The document itself stays atomic in the knowledge base (one transaction, all or nothing); only its
vectors outlive a stop. `Resume` is one file's embedding's cache (`rag.embeddings.batches.reusing`):
it finds what was kept, keeps each batch as it is done, and counts both, so a stop can say how many
chunks are kept and a resumed ingest how many it reused."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
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
    when its embedding began. `settled` False: counted while its embedding was still running (a batch in
    flight may be kept after), so `kept` is a lower bound."""

    kept: int
    total: int
    reused: int = 0
    settled: bool = True


class Resume:
    """One file's embedding with the vector cache: a `batches.BatchCache` that counts. A cache that
    fails (the database refused a write) only costs the resume, never the ingest: it is logged."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        knowledge: str,
        filename: str,
        total: int,
        on_found: Callable[[int], None] | None = None,
        *,
        look: bool = True,
    ) -> None:
        """`on_found(reused)` hears how many chunks were found kept, once the lookup is done and before
        any batch: where a progress bar starts (the kept share, not 0). `look` False: the cache is known to hold
        none of this embedder's vectors, so none is looked up (`found` finds nothing, at once)."""
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
        self._on_found = on_found
        self._look = look

    @property
    def kept(self) -> int:
        return self.reused + self.embedded

    def found(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        try:
            hits = self._cache.found(self._embedder, keys) if self._look else {}
        except RagError as exc:
            log.warning("cannot read the vectors kept from stopped ingests: %s", one_line(exc, None))
            hits = {}
        self.reused = sum(key in hits for key in keys)
        self._keys.extend(hits)
        _note(self._file, Kept(self.kept, self.total, self.reused))
        if self._on_found is not None:
            self._on_found(self.reused)
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

    @contextmanager
    def running(self) -> Iterator[None]:
        """Around the embedding: while it runs, `kept_after_stop` of its file waits for it to end. A stop
        that ends a script run elsewhere (Streamlit's fast rerun starts the next run while the stopped one
        still finishes its batch, then keeps it) is counted once that batch is kept, not before."""
        with _SETTLED:
            _RUNNING[self._file] = _RUNNING.get(self._file, 0) + 1
        try:
            yield
        finally:
            with _SETTLED:
                left = _RUNNING.pop(self._file, 1) - 1
                if left:
                    _RUNNING[self._file] = left
                _SETTLED.notify_all()

    def stopped(self) -> Kept:
        """What this embedding kept, now that it was stopped (forgotten by `kept_after_stop`)."""
        _forget(self._file)
        return Kept(self.kept, self.total, self.reused)

    def stored(self) -> None:
        """The document is stored: its rows are dropped (its vectors are in the knowledge base now). The cache is
        pruned to its bounds once the ingest is done (`prune_vector_cache`)."""
        _forget(self._file)
        if not self._keys:
            return
        try:
            self._cache.drop(self._embedder, self._keys)
        except RagError as exc:
            log.warning("cannot drop the vectors kept for a stored document: %s", one_line(exc, None))


def prune_vector_cache(store: Store) -> None:
    """The vector cache pruned to its bounds (rag.store.vector_cache) at an ingest's end, whether it finished or
    stopped: once an ingest rather than once a document, whose own rows go as it is stored (`Resume.stored`). A
    document at a time, its two statements and their transaction were 800 of the ~3,100 round trips to the server
    of an ingest of the peers bench's 200 PDFs. A failure is logged, never raised: the rows wait for the next."""
    try:
        store.vector_cache.prune()
    except RagError as exc:
        log.warning("cannot prune the vectors kept from stopped ingests: %s", one_line(exc, None))


class _Always:
    def is_set(self) -> bool:
        return True


class _Probe:
    """A `batches.BatchCache` that only looks: which inputs the vector cache holds, nothing kept."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        from rag.store.vector_cache import embedder_key

        self._cache = store.vector_cache
        self._embedder = embedder_key(embedder.name, embedder.dimension)
        self.held: list[bool] = []

    def found(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        hits = self._cache.found(self._embedder, keys)
        self.held = [key in hits for key in keys]
        return hits

    def keep(self, keys: Sequence[bytes], rows: np.ndarray) -> None:
        pass


def already_embedded(store: Store, embedder: Embedder, texts: Sequence[str]) -> list[bool]:
    """For each of `texts` (a file's chunks), whether its vector is kept from a stopped ingest, so that
    an ingest now would not embed it again: what an estimate leaves out. The keys are the embedder's
    own (its `embed` plans the inputs, e5 cutting long ones, and stops before its first batch: nothing is
    embedded); no key is worked out while the cache holds nothing of an embedder of that name (one
    query: the common case). A cache that cannot be read holds nothing here, as in an ingest."""
    from rag.embeddings import EmbeddingCancelled, batches

    none = [False] * len(texts)
    if not texts:
        return none
    try:
        if not store.vector_cache.holds(embedder.name):
            return none
        probe = _Probe(store, embedder)
        with batches.reusing(probe):
            try:
                embedder.embed(texts, cancel=_Always())
            except EmbeddingCancelled:
                pass
    except RagError as exc:
        log.warning("cannot read the vectors kept from stopped ingests: %s", one_line(exc, None))
        return none
    return probe.held if len(probe.held) == len(texts) else none


def left_to_embed(store: Store, embedder: Embedder, texts: Sequence[str]) -> tuple[list[str], int]:
    """Of `texts`, those an ingest would embed now (`already_embedded` aside), and how many are aside."""
    held = already_embedded(store, embedder, texts)
    return [text for text, kept in zip(texts, held) if not kept], sum(held)


# What the embedding of each (knowledge base, file) in progress has kept, for `kept_after_stop`: a stop that
# ends the run from a progress callback (the Upload page's Stop, Ctrl+C) leaves no result to carry it.
_KEPT: dict[tuple[str, str], Kept] = {}
_LOCK = threading.Lock()
_RUNNING: dict[tuple[str, str], int] = {}
"""The files whose embedding runs now (`Resume.running`), how many times each."""
_SETTLED = threading.Condition(_LOCK)
"""Told when an embedding ends."""
STOP_WAIT_SECONDS = 120.0
"""How long `kept_after_stop` waits for a stopped embedding's batch in flight (e5 takes seconds to tens of
seconds a batch on a busy machine); past it the count is a lower bound (`Kept.settled`)."""
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


def kept_after_stop(knowledge: str, filename: str, wait: float = STOP_WAIT_SECONDS) -> Kept | None:
    """What the stopped embedding of `filename` into `knowledge` in this process kept (None: it kept
    nothing, or it ran elsewhere), forgotten once told. An embedding of it still running (a stopped run
    finishing the batch it was in) is waited for, up to `wait` seconds: the count is then what the next
    ingest reuses; past the wait it is `settled` False, a lower bound."""
    file = (knowledge, filename)
    with _SETTLED:
        settled = _SETTLED.wait_for(lambda: file not in _RUNNING, timeout=wait)
        kept = _KEPT.pop(file, None)
    if kept is not None and not settled:
        kept = Kept(kept.kept, kept.total, kept.reused, settled=False)
    return kept
