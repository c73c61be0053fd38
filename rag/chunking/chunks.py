"""What a split returns: chunks with their character span and pages, and the set they form."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rag.chunking.settings import ChunkSettings


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    tokens: int
    start: int
    """Character offset in the source text where the chunk's text begins."""
    end: int
    pages: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "start": self.start,
            "end": self.end,
            "pages": list(self.pages),
        }


@dataclass(frozen=True)
class ChunkSet:
    chunks: tuple[Chunk, ...]
    dropped: int
    """Pieces discarded as too short (`min_chunk_length_to_embed`); blank ones are not counted."""
    settings: ChunkSettings


def chunks_in_span(chunks: tuple[Chunk, ...], start: int, end: int) -> list[Chunk]:
    """Chunks touching [start, end), their offsets made relative to `start` and clipped to the span
    (to colour one page's text)."""
    return [
        replace(c, start=max(c.start, start) - start, end=min(c.end, end) - start)
        for c in chunks
        if c.start < end and c.end > start
    ]
