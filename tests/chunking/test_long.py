"""rag.chunking.long: a long text split from the tokens of a prefix, its last chunk's counted, gives the
chunks of the whole TokenizedText: every strategy, blank and dropped windows (the prefix grows), a
cut inside a character (spring-exact), seams that must be exact, and texts the tokeniser rewrites.

tiktoken (an independent cl100k instance) is the yardstick of counts and seams; the plain split of
the whole text is the yardstick of the chunks."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from rag.chunking import ChunkSettings, LongText, split, tokenize, tokens_for_split
from rag.chunking import long as long_texts
from rag.chunking import strategies as chunk_strategies
from tests.chunking.texts import CJK, ENC, FRAGMENTS, SPACES, long_text, mixed_text


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few dozen tokens, so that texts of a few thousand characters are long ones."""
    monkeypatch.setattr(long_texts, "MIN_CHARS", 200)
    monkeypatch.setattr(long_texts, "FIRST_PIECE_CHARS", 100)
    monkeypatch.setattr(long_texts, "PIECE_TOKENS", 30)


any_settings = st.builds(
    lambda strategy, size, overlap, min_chars, min_len, most, keep: ChunkSettings(
        strategy=strategy,
        chunk_size=size,
        chunk_overlap=0 if strategy.startswith("spring") else overlap % size,
        min_chunk_size_chars=min_chars,
        min_chunk_length_to_embed=min_len,
        max_num_chunks=most,
        keep_separator=keep,
    ),
    st.sampled_from(["spring", "spring-exact", "token", "recursive"]),
    st.integers(1, 40),
    st.integers(0, 39),
    st.integers(0, 60),
    st.integers(0, 12),
    st.integers(1, 25),
    st.booleans(),
)


@hsettings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=mixed_text, s=any_settings)
def test_a_long_text_gives_the_chunks_of_its_whole_tokenisation(text: str, s: ChunkSettings) -> None:
    whole = split(tokenize(text), s)
    assert split(LongText(text), s) == whole
    assert split(text, s) == whole


@pytest.mark.parametrize("strategy", ["spring", "spring-exact", "token", "recursive"])
@pytest.mark.parametrize("seed", range(6))
def test_seeded_long_texts_under_each_strategy(strategy: str, seed: int) -> None:
    rng = random.Random(seed)
    text = long_text(seed, 30_000)
    size = rng.randint(8, 120)
    s = ChunkSettings(
        strategy=strategy,
        chunk_size=size,
        chunk_overlap=0 if strategy.startswith("spring") else size // 4,
        min_chunk_size_chars=rng.randint(0, 200),
        min_chunk_length_to_embed=rng.randint(0, 8),
        max_num_chunks=rng.randint(2, 40),
    )
    long = LongText(text)
    assert split(long, s) == split(tokenize(text), s)
    prefix, whole = long.tokenized(1)
    assert not whole and len(prefix.text) < len(text)  # it was split from a prefix


def test_the_last_chunk_counts_the_tokens_of_all_the_rest() -> None:
    text = " ".join(f"Line {i} of the harbour log, calm sea." for i in range(3000))
    chunks = split(text, ChunkSettings(chunk_size=50, max_num_chunks=5)).chunks
    assert len(chunks) == 6 and chunks[-1].end == len(text)
    assert sum(c.tokens for c in chunks) == len(ENC.encode_ordinary(text))
    assert len(LongText(text)) == len(ENC.encode_ordinary(text))


def test_a_split_of_a_long_str_tokenises_only_a_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    text = " ".join(f"Entry {i}: the lamp was trimmed at dusk." for i in range(5000))
    s = ChunkSettings(chunk_size=40, max_num_chunks=10)
    expected = split(tokenize(text), s)
    tokenised: list[int] = []
    real = long_texts.tokenize

    def spy(part: str):
        tokenised.append(len(part))
        return real(part)

    monkeypatch.setattr(long_texts, "tokenize", spy)
    monkeypatch.setattr(chunk_strategies, "tokenize", lambda _: pytest.fail("the whole text was tokenised"))
    assert split(text, s) == expected
    assert tokenised and max(tokenised) < len(text) // 10


def test_blank_and_dropped_windows_make_the_prefix_grow() -> None:
    # Spring skips whitespace windows without counting them, and drops short pieces: the windows
    # before the last chunk then take more tokens than max_num_chunks x chunk_size.
    text = "\n \n" * 3000 + " ".join(["a."] * 3000) + " Then the words of the rest. " * 300
    for s in (
        ChunkSettings(chunk_size=20, max_num_chunks=8, min_chunk_length_to_embed=12),
        ChunkSettings(strategy="token", chunk_size=20, max_num_chunks=8, min_chunk_length_to_embed=12),
        ChunkSettings(strategy="recursive", chunk_size=20, max_num_chunks=8, min_chunk_length_to_embed=12),
    ):
        assert split(LongText(text), s) == split(tokenize(text), s)


def test_spring_exact_rest_starting_inside_a_character() -> None:
    # These characters are more than one token each: windows of a few tokens end inside one, so the
    # last chunk starts inside it (its bytes there decode to U+FFFD, as Spring's do).
    text = "😀🚀𝔘" * 400 + "。你好" * 400
    for size in range(1, 8):
        s = ChunkSettings(
            strategy="spring-exact",
            chunk_size=size,
            min_chunk_size_chars=0,
            max_num_chunks=3,
            min_chunk_length_to_embed=0,
        )
        assert split(LongText(text), s) == split(tokenize(text), s)


@hsettings(max_examples=150, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS + SPACES + CJK), min_size=20, max_size=300), data=st.data())
def test_every_seam_cuts_the_tokens_exactly(parts: list[str], data) -> None:
    text = "".join(parts)
    offset = data.draw(st.integers(0, len(text)))
    cut = long_texts.seam_at_or_after(text, offset)
    if cut is None:
        assert all(long_texts.seam_at_or_after(text, i) is None for i in range(offset, len(text) + 1, 7))
        return
    assert offset <= cut < len(text)
    assert ENC.encode_ordinary(text[:cut]) + ENC.encode_ordinary(text[cut:]) == ENC.encode_ordinary(text)


def test_a_text_with_lone_surrogates_is_tokenised_whole() -> None:
    # The tokeniser replaces them (text moves under the offsets): nothing is cut from such a text.
    text = "Broken \ud800 extractor output. " * 200
    long = LongText(text)
    tt, whole = long.tokenized(10)
    assert whole and len(tt.text) == len(text)
    s = ChunkSettings(chunk_size=10, max_num_chunks=3)
    assert split(long, s) == split(tokenize(text), s)


def test_settings_whose_windows_take_the_whole_text_tokenise_it_whole() -> None:
    text = " ".join(f"Word{i}." for i in range(2000))
    long = LongText(text)
    s = ChunkSettings(chunk_size=50, max_num_chunks=10_000)
    assert split(long, s) == split(tokenize(text), s)
    assert long.tokenized(1)[1]  # the whole is kept for the next split
    assert not isinstance(tokens_for_split(text, s), LongText)
