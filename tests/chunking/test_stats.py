"""rag.chunking.stats: counts, sizes, drops and chunks that stop mid-sentence."""

from __future__ import annotations

import pytest

from rag.chunking import SEED_PROJECT, SPRING_DEFAULT, ChunkSet, ChunkSettings, ends_mid_sentence, split, stats
from tests.chunking.texts import sentences, spring_s


@pytest.mark.parametrize(
    "s",
    [
        SEED_PROJECT,
        ChunkSettings(chunk_size=20, min_chunk_size_chars=10, min_chunk_length_to_embed=15),
        ChunkSettings(strategy="token", chunk_size=9, chunk_overlap=2, min_chunk_length_to_embed=12),
        ChunkSettings(strategy="recursive", chunk_size=33),
    ],
)
def test_stats_match_chunks(s: ChunkSettings) -> None:
    text = "Hi.\nOk.\n" + sentences(60, 9) + "\n\nNo end here"
    result = split(text, s)
    st_ = stats(result)
    sizes = [c.tokens for c in result.chunks]
    assert st_.count == len(result.chunks) > 0
    assert st_.mean_tokens == pytest.approx(sum(sizes) / len(sizes))
    assert (st_.min_tokens, st_.max_tokens) == (min(sizes), max(sizes))
    assert st_.sizes == tuple(sizes)
    cuts = [ends_mid_sentence(c.text) for c in result.chunks[:-1]]  # the last chunk ends where the text does
    assert st_.mid_sentence_share == pytest.approx(sum(cuts) / len(cuts) if cuts else 0.0)
    assert st_.dropped == result.dropped
    assert st_.dropped_share == pytest.approx(result.dropped / (result.dropped + len(sizes)))
    assert st_.over_size == sum(1 for t in sizes if t > s.chunk_size)


def test_stats_dropped_share_and_empty() -> None:
    text = "Hi.\nLonger sentence goes here and then some more words"
    result = split(text, spring_s(chunk_size=5, min_chunk_length_to_embed=3))
    assert result.dropped == 1
    st_ = stats(result)
    assert st_.dropped_share == pytest.approx(1 / (1 + len(result.chunks)))

    empty = stats(split("   ", SPRING_DEFAULT))
    assert (
        empty.count,
        empty.mean_tokens,
        empty.min_tokens,
        empty.max_tokens,
        empty.mid_sentence_share,
        empty.dropped,
        empty.dropped_share,
    ) == (0, 0.0, 0, 0, 0.0, 0, 0.0)
    made = ChunkSet(chunks=(), dropped=4, settings=SPRING_DEFAULT)
    assert stats(made).dropped_share == 1.0


@pytest.mark.parametrize(
    "text,mid",
    [
        ("A full sentence.", False),
        ("Is it?", False),
        ("Wow!", False),
        ('He said "stop."', False),
        ("（完了。）", False),
        ("好的；", False),
        ("中文。", False),
        ("trailing space.  \n", False),
        ("cut in the mid", True),
        ("ends with comma,", True),
        ("| SKU-6717 | Model 3 | $21,000.00 |", False),  # a table's row
        ("", False),
        ("   ", False),
    ],
)
def test_ends_mid_sentence(text: str, mid: bool) -> None:
    assert ends_mid_sentence(text) is mid


def test_the_end_of_the_text_is_no_cut() -> None:
    """The last chunk ends where the document does: it lacks nothing that follows, whatever its last character."""
    one = split("Prices\n| SKU | Price |\n|---|---|\n| SKU-6678 | $42,000.00 |\nValid until March", SPRING_DEFAULT)
    assert len(one.chunks) == 1 and ends_mid_sentence(one.chunks[0].text)
    assert stats(one).mid_sentence_share == 0.0
    two = split(sentences(400, 3) + " and no end", spring_s(chunk_size=40))
    assert len(two.chunks) > 2 and ends_mid_sentence(two.chunks[-1].text)
    cut = [ends_mid_sentence(c.text) for c in two.chunks[:-1]]
    assert stats(two).mid_sentence_share == pytest.approx(sum(cut) / len(cut))
