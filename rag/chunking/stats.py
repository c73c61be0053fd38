"""Statistics of a chunk set: sizes, how many cuts fall mid-sentence, how many were dropped."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rag.chunking.chunks import ChunkSet

_SENTENCE_END = ".?!。！？；|"
"""A sentence's end, or a table row's (a PDF's or an Office file's tables are read as Markdown rows)."""


def ends_mid_sentence(text: str) -> bool:
    tail = text.rstrip().rstrip("\"')]}»”’）】")
    return bool(tail) and tail[-1] not in _SENTENCE_END


@dataclass(frozen=True)
class ChunkStats:
    count: int
    mean_tokens: float
    min_tokens: int
    max_tokens: int
    mid_sentence_share: float
    """Share of the cuts that fall inside a sentence: every chunk's end but the last one's, where the text ends
    (a one-chunk table PDF read "100 % end mid-sentence", a walk found)."""
    dropped: int
    dropped_share: float
    over_size: int = 0
    """Chunks above the target size (only possible for the trailing Spring chunk)."""
    sizes: tuple[int, ...] = field(default=(), repr=False)


def stats(chunk_set: ChunkSet) -> ChunkStats:
    chunks = chunk_set.chunks
    sizes = tuple(c.tokens for c in chunks)
    count = len(chunks)
    produced = count + chunk_set.dropped
    return ChunkStats(
        count=count,
        mean_tokens=float(np.mean(sizes)) if sizes else 0.0,
        min_tokens=min(sizes, default=0),
        max_tokens=max(sizes, default=0),
        mid_sentence_share=(sum(ends_mid_sentence(c.text) for c in chunks[:-1]) / (count - 1)) if count > 1 else 0.0,
        dropped=chunk_set.dropped,
        dropped_share=(chunk_set.dropped / produced) if produced else 0.0,
        over_size=sum(1 for t in sizes if t > chunk_set.settings.chunk_size),
        sizes=sizes,
    )
