"""How every embedder walks its input: in batches, reporting progress after each, stoppable between two.

A batch is a range of input positions. WordLlama and Ollama cut by count; e5 cuts by total tokens,
since its time grows with tokens, not texts (a 12-token line costs ~1/40 of a 500-token chunk).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
) -> np.ndarray:
    """What every embedder's `embed` does: check the texts, let `plan` say what to embed for them (e5
    cuts long ones) in which batches, embed each batch with `embed_batch` (see `run`) and return unit
    rows; (0, dimension()) for no texts."""
    items = check_texts(texts)
    if not items:
        return np.empty((0, dimension()), dtype=np.float32)
    inputs, spans = plan(items)
    return l2_normalise(run(spans, lambda span: embed_batch(inputs[span.start : span.stop]), progress, cancel))
