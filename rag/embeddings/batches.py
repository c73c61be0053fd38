"""How every embedder walks its input: in batches, reporting progress after each, stoppable between two.

A batch is a range of input positions. WordLlama and Ollama cut by count; e5 cuts by total tokens,
since its time grows with tokens, not texts (a 12-token line costs ~1/40 of a 500-token chunk).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

import numpy as np

from rag.embeddings.vectors import check_texts, l2_normalise
from rag.errors import RagError
from rag.text import Text

if TYPE_CHECKING:
    from rag.embeddings import ProgressCallback


class CancelSignal(Protocol):
    """What `cancel` is: a `threading.Event`, or anything answering is_set()."""

    def is_set(self) -> bool: ...


class EmbeddingCancelled(RagError):
    """Embedding stopped between two batches because the caller asked for it; nothing was stored."""

    def __init__(self, done: int, total: int) -> None:
        self.done = done
        self.total = total
        super().__init__(
            Text("embedding cancelled after {done} of {total} texts: nothing of it was stored", done=done, total=total)
        )


def by_count(total: int, size: int) -> list[range]:
    """Consecutive ranges of at most `size` positions covering 0..total."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    return [range(start, min(start + size, total)) for start in range(0, total, size)]


def by_padded_size(lengths: Sequence[int], max_items: int, budget: int) -> list[range]:
    """Consecutive ranges of at most `max_items` whose padded size (count x the longest) stays within
    `budget` (a longer text alone): an embedder that pads a batch to its longest text needs memory for
    that product, not for the sum."""
    if max_items < 1 or budget < 1:
        raise ValueError(f"max_items and budget must be at least 1, got {max_items}, {budget}")
    spans: list[range] = []
    start, longest = 0, 0
    for i, length in enumerate(lengths):
        wider = max(longest, length)
        if i > start and (i - start >= max_items or (i - start + 1) * wider > budget):
            spans.append(range(start, i))
            start, wider = i, length
        longest = wider
    if start < len(lengths):
        spans.append(range(start, len(lengths)))
    return spans


def by_tokens(tokens: Sequence[int], budget: int) -> list[range]:
    """Consecutive ranges whose token counts sum to at most `budget` (a longer text alone)."""
    if budget < 1:
        raise ValueError(f"token budget must be at least 1, got {budget}")
    spans: list[range] = []
    start, used = 0, 0
    for i, count in enumerate(tokens):
        if i > start and used + count > budget:
            spans.append(range(start, i))
            start, used = i, 0
        used += count
    if start < len(tokens):
        spans.append(range(start, len(tokens)))
    return spans


class BatchCache(Protocol):
    """Where `embed_in_batches` finds the vectors of inputs embedded before, and keeps each batch it
    embeds as soon as it is done (before `progress` hears of it: a stop raised there keeps the batch).
    A key is `input_key` of what the model reads; the embedder's identity is the cache's own concern."""

    def found(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]: ...

    def keep(self, keys: Sequence[bytes], rows: np.ndarray) -> None: ...


KEEP_AFTER_SECONDS_A_CHUNK = 0.02
"""A batch that embedded faster than this a chunk is cheaper to embed again than to keep (keeping writes a row a
chunk, ~0.2-0.5 ms): WordLlama embeds 800-token chunks in 0.25 ms each alone and ~1 ms beside an ingest's other
stages, and keeping its batches took a 4,000-chunk ingest from 6.9-14.5 s to 13.7-16.9 s; e5 takes 40-70 ms a
320-token chunk on two quiet cores (14-25 chunks/s, `bench --only embed`) and ~135 ms in an ingest of the Upload page,
where the write is ~1 % of it. A batch's time rather than a chunk's was asked before (1 s): once e5 ran a 2,048-token
batch in ~0.4 s (issue 32), none of its batches was kept, and a stopped ingest embedded everything again."""

_CACHE: ContextVar[BatchCache | None] = ContextVar("rag_embedding_cache", default=None)
"""The cache of the `embed` running in this context. A context variable rather than a parameter: the
Embedder protocol (three embedders and the tests' wrapping fakes) stays as it is, and nothing but the
ingest pipeline's `embed` (passages to store) reuses vectors: the Chunk Lab and questions never do."""


@contextmanager
def reusing(cache: BatchCache) -> Iterator[None]:
    """Within this block, `embed_in_batches` (every embedder's `embed`) embeds only the inputs `cache`
    lacks and keeps each batch in it."""
    token = _CACHE.set(cache)
    try:
        yield
    finally:
        _CACHE.reset(token)


def input_key(text: str, prefix: str = "") -> bytes:
    """The SHA-256 of what the model reads: `prefix` (e5's "passage: ") and the input as cut."""
    return hashlib.sha256((prefix + text).encode("utf-8", "surrogatepass")).digest()


def run(
    spans: Sequence[range],
    embed_span: Callable[[range], np.ndarray],
    progress: ProgressCallback | None = None,
    cancel: CancelSignal | None = None,
) -> np.ndarray:
    """`embed_span` over each span in order, rows concatenated; `progress(done, total)` after each
    batch; EmbeddingCancelled before the next batch once `cancel` is set."""
    total = spans[-1].stop if spans else 0
    parts: list[np.ndarray] = []
    done = 0
    for span in spans:
        if cancel is not None and cancel.is_set():
            raise EmbeddingCancelled(done, total)
        parts.append(np.asarray(embed_span(span), dtype=np.float32))
        done = span.stop
        if progress is not None:
            progress(done, total)
    return np.concatenate(parts)


def embed_in_batches(
    texts: Sequence[str],
    dimension: Callable[[], int],
    plan: Callable[[list[str]], tuple[list[str], Sequence[range]]],
    embed_batch: Callable[[list[str]], np.ndarray],
    progress: ProgressCallback | None = None,
    cancel: CancelSignal | None = None,
    *,
    prefix: str = "",
) -> np.ndarray:
    """What every embedder's `embed` does: check the texts, let `plan` say what to embed for them (e5
    cuts long ones) in which batches, embed each batch with `embed_batch` (see `run`) and return unit
    rows; (0, dimension()) for no texts. Within `reusing(cache)`, the inputs found in the cache are not
    embedded (`progress` counts them done at once) and each batch embedded is kept there; `prefix` is
    what the model puts before each input (e5's "passage: "), part of the cache's key."""
    items = check_texts(texts)
    if not items:
        return np.empty((0, dimension()), dtype=np.float32)
    inputs, spans = plan(items)
    cache = _CACHE.get()
    if cache is not None:
        return _reusing(cache, inputs, spans, prefix, embed_batch, progress, cancel)
    # Each batch is made unit length on its own (rows do not depend on one another): what a cache
    # keeps is then exactly what this returns for the same input.
    return run(spans, lambda span: l2_normalise(embed_batch(inputs[span.start : span.stop])), progress, cancel)


def _left_to_embed(
    cache: BatchCache, inputs: list[str], spans: Sequence[range], prefix: str
) -> tuple[list[range], dict[bytes, np.ndarray], list[bytes]]:
    """The planned batches less the inputs `cache` holds (a batch's rest split where a found input was:
    a subset of a batch fits every plan's limits, count, tokens or padded size; after a stop the rest is
    the plan's last batches whole), the vectors found, and every input's key."""
    keys = [input_key(text, prefix) for text in inputs]
    found = cache.found(keys)
    if not found:
        return list(spans), found, keys
    left: list[range] = []
    for span in spans:
        start = None
        for i in span:
            if keys[i] in found:
                if start is not None:
                    left.append(range(start, i))
                start = None
            elif start is None:
                start = i
        if start is not None:
            left.append(range(start, span.stop))
    return left, found, keys


def _reusing(
    cache: BatchCache,
    inputs: list[str],
    spans: Sequence[range],
    prefix: str,
    embed_batch: Callable[[list[str]], np.ndarray],
    progress: ProgressCallback | None,
    cancel: CancelSignal | None,
) -> np.ndarray:
    """`embed_in_batches` within `reusing(cache)`: the rows found (`progress` told of them at once),
    then the batches of the rest, each kept in `cache` before `progress` hears of it."""
    spans, found, keys = _left_to_embed(cache, inputs, spans, prefix)
    total = len(inputs)
    rows: np.ndarray | None = None
    if found:
        rows = np.empty((total, len(next(iter(found.values())))), dtype=np.float32)
        for i, key in enumerate(keys):
            if key in found:
                rows[i] = found[key]
    done = total - sum(len(span) for span in spans)
    if progress is not None and done:
        progress(done, total)
    for span in spans:
        if cancel is not None and cancel.is_set():
            raise EmbeddingCancelled(done, total)
        started = time.perf_counter()
        batch = l2_normalise(embed_batch(inputs[span.start : span.stop]))
        if time.perf_counter() - started >= KEEP_AFTER_SECONDS_A_CHUNK * len(span):
            cache.keep(keys[span.start : span.stop], batch)
        if rows is None:
            rows = np.empty((total, batch.shape[1]), dtype=np.float32)
        rows[span.start : span.stop] = batch
        done += len(span)
        if progress is not None:
            progress(done, total)
    assert rows is not None, "every input was found or embedded"
    return rows
