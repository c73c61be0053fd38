"""A recursive split's overlap in text written without spaces is the overlap asked for: a word may end between two
Chinese characters. Its only word boundaries had been the text's rare spaces, and the overlap began at the last one
before the tokens asked for: a Chromium walk's Chunk Lab showed 17 chunks of 221 tokens (mean) for a 2,801-token
Chinese PDF at 256/32, the overlap on its first page 170 tokens, under "Overlap 32"."""

from __future__ import annotations

import pytest

from rag.chunking import ChunkSettings
from rag.chunking.strategies import split
from rag.chunking.tokens import count_tokens
from tests.chunking.texts import chinese_spec_text, rfc_like_text


@pytest.mark.parametrize(("size", "overlap"), [(256, 32), (400, 40)])
def test_a_recursive_split_of_chinese_overlaps_by_what_was_asked(size: int, overlap: int) -> None:
    text = chinese_spec_text(12)
    chunks = split(text, ChunkSettings(strategy="recursive", chunk_size=size, chunk_overlap=overlap)).chunks
    assert len(chunks) > 20
    # Counted by encoding the overlapping text again (a few tokens off the split's own count, which starts at a token).
    overlaps = [count_tokens(text[b.start : a.end]) for a, b in zip(chunks, chunks[1:])]
    assert min(overlaps) >= overlap - 3 and max(overlaps) <= overlap + 4, overlaps  # was 0-108 and 39-154


def test_english_overlaps_still_begin_at_a_space() -> None:
    text = rfc_like_text(4)
    chunks = split(text, ChunkSettings(strategy="recursive", chunk_size=256, chunk_overlap=32)).chunks
    assert len(chunks) > 10
    assert all(text[c.start - 1].isspace() for c in chunks[1:])  # no chunk begins inside a word
    overlaps = [count_tokens(text[b.start : a.end]) for a, b in zip(chunks, chunks[1:])]
    assert min(overlaps) >= 29 and max(overlaps) <= 48, overlaps
