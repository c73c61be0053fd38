"""rag.chunking.strategies: Spring AI's TokenTextSplitter (against the literal port and by hand),
token windows, recursive splitting, and the pages each chunk is given.

Expectations come from the specification and from tiktoken itself (an independent cl100k instance),
never from the implementation's own output.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from rag.chunking import (
    SEED_PROJECT,
    SPRING_DEFAULT,
    ChunkSettings,
    count_tokens,
    split,
    spring_split_reference,
    tokenize,
)
from rag.chunking import strategies as chunk_strategies
from rag.errors import ChunkSettingsError
from tests.chunking.texts import (
    ENC,
    exact,
    java_len,
    long_text,
    mixed_text,
    para,
    sentences,
    spring,
    spring_s,
    spring_settings,
    token_char_spans,
    toks,
)


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=mixed_text, s=spring_settings)
def test_spring_matches_reference_on_mixed_text(text: str, s: ChunkSettings) -> None:
    assert spring(text, s) == spring_split_reference(text, s)


@hsettings(max_examples=80, deadline=None)
@given(text=st.text(max_size=400), s=spring_settings)
def test_spring_matches_reference_on_arbitrary_unicode(text: str, s: ChunkSettings) -> None:
    # Includes lone surrogates, control characters and unassigned code points.
    assert spring(text, s) == spring_split_reference(text, s)


ws_fragment = st.one_of(
    st.sampled_from(
        ["word", "x", "a.", "b?", "c!", "1", "'s", "é", "你", "😀", "中文", "。", "，", "你好、", "？", "！他"]
    ),
    st.sampled_from([" ", " ", "  ", "   ", "\n", " \n", "  \n", "\t", "\n\n", "\r\n", "    \n\n", "\u00a0"]),
)


@hsettings(max_examples=50, deadline=None)
@given(parts=st.lists(ws_fragment, min_size=30, max_size=150), data=st.data())
def test_reencoded_length_equals_tiktoken_count(parts: list[str], data) -> None:
    _every_cut_counts_as_encoded("".join(parts), data, shortest=1)


def _every_cut_counts_as_encoded(text: str, data, shortest: int) -> None:
    """The fast path's invariant: the token count of every prefix of a decoded window, as if re-encoded."""
    tt = tokenize(text)
    pos = data.draw(st.integers(0, max(0, len(tt) - 1)))
    window = tt.window_bytes(pos, len(tt))
    decoded = window.decode("utf-8", errors="replace")
    for cut in range(shortest, len(decoded) + 1):
        cut_text = decoded[:cut]
        assert chunk_strategies._reencoded_length(tt, pos, window, cut_text) == len(ENC.encode_ordinary(cut_text)), (
            cut_text
        )


chinese_fragment = st.sampled_from(
    [
        "中文",
        "检索",
        "质量",
        "我们",
        "北京大学",
        "创办于",
        "1898年",
        "。",
        "，",
        "、",
        "？",
        "！",
        "：",
        "；",
        "“",
        "”",
        "\n",
        "的",
    ]
)


@hsettings(max_examples=60, deadline=None)
@given(parts=st.lists(chinese_fragment, min_size=40, max_size=160), data=st.data())
def test_reencoded_length_of_chinese_text_equals_tiktoken_count(parts: list[str], data) -> None:
    """Chinese has no spaces: the places where every tokenisation agrees are an ideograph before punctuation.
    (Cuts shorter than 64 characters are always encoded again whole.)"""
    _every_cut_counts_as_encoded("".join(parts), data, shortest=64)


def test_chinese_text_is_not_encoded_again_whole() -> None:
    """Between its first and last places only the head and the tail are encoded again."""
    text = "我们的检索质量很好，北京大学创办于1898年。" * 20
    tt = tokenize(text)
    window = tt.window_bytes(0, len(tt))
    places = chunk_strategies._places(window, len(window))
    assert places is not None and places[0] < 40 and places[1] > len(window) - 40


@hsettings(max_examples=150, deadline=None)
@given(parts=st.lists(ws_fragment, max_size=600), s=spring_settings)
def test_spring_matches_reference_on_whitespace_heavy_text(parts: list[str], s: ChunkSettings) -> None:
    text = "".join(parts)
    assert spring(text, s) == spring_split_reference(text, s)


@pytest.mark.parametrize(
    "seed,s",
    [
        (1, SPRING_DEFAULT),
        (2, SEED_PROJECT),
        (3, ChunkSettings(chunk_size=300, min_chunk_size_chars=0, min_chunk_length_to_embed=0)),
        (4, ChunkSettings(chunk_size=900, min_chunk_size_chars=400, keep_separator=False)),
        (5, ChunkSettings(chunk_size=128, min_chunk_size_chars=50, max_num_chunks=20)),
    ],
)
def test_spring_matches_reference_on_long_text(seed: int, s: ChunkSettings, monkeypatch) -> None:
    s = exact(s)  # the long texts hold emoji and CJK, which the default `spring` never splits
    text = long_text(seed, 60_000)
    tt = tokenize(text)
    seen: list[int] = []
    original = chunk_strategies.count

    def recording(t: str) -> int:
        seen.append(len(t))
        return original(t)

    monkeypatch.setattr(chunk_strategies, "count", recording)
    got = [c.text for c in split(tt, s).chunks]
    monkeypatch.undo()
    assert got == spring_split_reference(text, s)
    # The fast path re-encodes only short heads and tails of each cut, not the cut texts:
    # far fewer characters than the document (the literal port re-encodes about all of it).
    assert seen and sum(seen) < len(text) / 5


# --- 2. Spring semantics by hand -------------------------------------------------------------


def test_spring_text_of_exactly_chunk_size_tokens_is_not_cut() -> None:
    text = "First part. Second part! Third part? And a tail without end"
    n = len(toks(text))
    for size in (n, n + 1, 900):
        assert spring(text, spring_s(chunk_size=size)) == [text]


def test_spring_cuts_after_last_separator_when_more_tokens_remain() -> None:
    text = "First part. Second part! Third part? And a tail without end"
    ids = toks(text)
    n = len(ids)
    assert ENC.decode(ids[: n - 1]).endswith(" without")  # the window ends before the tail word
    assert spring(text, spring_s(chunk_size=n - 1)) == [
        "First part. Second part! Third part?",
        "And a tail without end",
    ]


def test_spring_cut_requires_separator_index_above_min_chunk_size_chars() -> None:
    text = "Abc. " + "word " * 30
    ids = toks(text)
    window = ENC.decode(ids[:10])
    assert window.count(".") == 1 and window.index(".") == 3 and "\n" not in window
    # index 3 > 2: cut after the period
    cut = spring(text, spring_s(chunk_size=10, min_chunk_size_chars=2))
    assert cut[0] == "Abc."
    # index 3 > 3 is false: no cut, the whole window is the chunk
    uncut = spring(text, spring_s(chunk_size=10, min_chunk_size_chars=3))
    assert uncut[0] == window.strip()


def test_spring_separator_index_counts_utf16_units() -> None:
    text = "😀😀. " + "word " * 30
    ids = toks(text)
    window = ENC.decode(ids[:10])
    assert window.startswith("😀😀. word") and "\ufffd" not in window
    assert text.index(".") == 2 and java_len(text[: text.index(".")]) == 4
    # Java's index of '.' is 4: 4 > 3 cuts, although the Python index is 2.
    assert spring(text, spring_s(chunk_size=10, min_chunk_size_chars=3))[0] == "😀😀."
    assert spring(text, spring_s(chunk_size=10, min_chunk_size_chars=4))[0] == window.strip()


def test_spring_chunk_length_to_embed_counts_utf16_units() -> None:
    # "😀😀😀" is 3 chars in Python but 6 UTF-16 units: 6 > 5 keeps it.
    assert spring("😀😀😀", spring_s(min_chunk_length_to_embed=5)) == ["😀😀😀"]
    assert spring("😀😀😀", spring_s(min_chunk_length_to_embed=6)) == []


def test_spring_max_num_chunks_one_puts_rest_in_one_chunk_without_newlines() -> None:
    text = "Line one is here.\nLine two is here.\nLine three is here.\nLine four."
    ids = toks(text)
    assert ENC.decode(ids[:8]) == "Line one is here.\nLine two is"
    s = spring_s(chunk_size=8, max_num_chunks=1)
    assert spring(text, s) == ["Line one is here.", "Line two is here. Line three is here. Line four."]
    # Without the limit every window is cut after its last newline and keeps inner newlines.
    unlimited = spring(text, spring_s(chunk_size=8))
    assert unlimited[0] == "Line one is here."
    assert " ".join(unlimited).replace("\n", " ") == text.replace("\n", " ")


def test_spring_cuts_at_newline_without_punctuation() -> None:
    text = "alpha beta\ngamma delta epsilon zeta eta theta"
    ids = toks(text)
    assert ENC.decode(ids[:5]) == "alpha beta\ngamma delta"
    chunks = spring(text, spring_s(chunk_size=5))
    assert chunks[0] == "alpha beta"
    # "alpha beta\n" re-encodes to 3 tokens, so the next window starts at "gamma"
    assert len(toks("alpha beta\n")) == 3 and ENC.decode(ids[3:8]) == "gamma delta epsilon zeta"
    assert len(ids) == 10 and len(toks("gamma delta epsilon zeta")) == 5
    assert chunks[1:] == ["gamma delta epsilon zeta", "eta theta"]


def test_spring_keep_separator() -> None:
    text = "alpha\nbeta\ngamma\n"
    n = len(toks(text))
    assert spring(text, spring_s(chunk_size=n, keep_separator=True)) == ["alpha\nbeta\ngamma"]
    assert spring(text, spring_s(chunk_size=n, keep_separator=False)) == ["alpha beta gamma"]


def test_spring_drops_short_pieces_and_counts_them() -> None:
    text = "Hi.\nLonger sentence goes here and then some more words"
    ids = toks(text)
    assert ENC.decode(ids[:2]) == "Hi.\n" and ENC.decode(ids[:5]) == "Hi.\nLonger sentence"
    rest = ids[2:]
    expected_rest = [ENC.decode(rest[i : i + 5]).strip() for i in range(0, len(rest), 5)]
    assert all(not re.search(r"[.?!\n]", piece) for piece in expected_rest)

    kept = split(text, spring_s(chunk_size=5, min_chunk_length_to_embed=2))
    assert [c.text for c in kept.chunks] == ["Hi."] + expected_rest
    assert kept.dropped == 0

    dropped = split(text, spring_s(chunk_size=5, min_chunk_length_to_embed=3))  # len("Hi.") = 3, not > 3
    assert [c.text for c in dropped.chunks] == expected_rest
    assert dropped.dropped == 1


def test_spring_advances_by_reencoded_cut_text_like_java() -> None:
    # ".World" is one token; cutting after "." re-encodes "Hello." to two tokens, so Spring
    # continues at the third original token and "World" is lost - exactly as the Java code does.
    text = "Hello.World foo bar baz qux"
    assert [ENC.decode_single_token_bytes(t) for t in toks(text)][:2] == [b"Hello", b".World"]
    assert spring(text, spring_s(chunk_size=3)) == ["Hello.", "foo bar baz", "qux"]


@pytest.mark.parametrize("text", ["", " ", "   \n\t\r\n  ", "\x01\x02\x1f \x00"])
def test_spring_blank_text_gives_no_chunks(text: str) -> None:
    result = split(text, SPRING_DEFAULT)
    assert result.chunks == () and result.dropped == 0
    assert spring_split_reference(text, SPRING_DEFAULT) == []


def test_spring_trim_is_javas_not_pythons() -> None:
    # Java's trim() keeps non-breaking and ideographic spaces but strips control characters.
    s = spring_s()
    assert spring("\u00a0word\u3000", s) == ["\u00a0word\u3000"]
    assert spring("\x01\x02word\x1f", s) == ["word"]


def test_spring_skips_whitespace_windows() -> None:
    text = "a \n\n b"
    assert [ENC.decode_single_token_bytes(t) for t in toks(text)] == [b"a", b" \n\n", b" b"]
    assert spring(text, spring_s(chunk_size=1)) == ["a", "b"]


def test_spring_defaults() -> None:
    assert (
        SPRING_DEFAULT.strategy,
        SPRING_DEFAULT.chunk_size,
        SPRING_DEFAULT.min_chunk_size_chars,
        SPRING_DEFAULT.min_chunk_length_to_embed,
        SPRING_DEFAULT.max_num_chunks,
        SPRING_DEFAULT.keep_separator,
    ) == ("spring", 800, 350, 5, 10000, True)
    assert (SEED_PROJECT.chunk_size, SEED_PROJECT.min_chunk_size_chars, SEED_PROJECT.min_chunk_length_to_embed) == (
        600,
        300,
        10,
    )


@hsettings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.text(alphabet="abcdefghij.?!,'", min_size=1, max_size=9), min_size=1, max_size=300),
    size=st.integers(1, 60),
    min_chars=st.integers(0, 60),
)
def test_spring_chunk_spans_point_into_ascii_source(words: list[str], size: int, min_chars: int) -> None:
    text = " ".join(words)
    result = split(text, spring_s(chunk_size=size, min_chunk_size_chars=min_chars))
    for c in result.chunks:
        assert text[c.start : c.end] == c.text


# --- 3. token strategy ------------------------------------------------------------------------


def first_char_at_or_after(text: str) -> Callable[[int], int]:
    """Index of the first character whose first UTF-8 byte is at or after a byte offset."""
    char_first_bytes = np.cumsum([0] + [len(ch.encode("utf-8")) for ch in text])[:-1]
    return lambda byte_pos: int(np.searchsorted(char_first_bytes, byte_pos, side="left"))


def token_model(text: str, size: int, overlap: int, min_len: int) -> tuple[list[tuple[str, int, int, int]], int]:
    # A window holds the characters whose first byte lies in its tokens; blank windows are
    # skipped without counting them as dropped.
    ids, byte_starts, _, _ = token_char_spans(text)
    char_at = first_char_at_or_after(text)
    step = size - overlap
    out, dropped, first = [], 0, 0
    while first < len(ids):
        stop = min(first + size, len(ids))
        a, b = char_at(byte_starts[first]), char_at(byte_starts[stop])
        raw = text[a:b]
        left = len(raw) - len(raw.lstrip())
        piece = raw.strip()
        if not piece:
            pass
        elif len(piece) <= min_len:
            dropped += 1
        else:
            out.append((piece, stop - first, a + left, a + left + len(piece)))
        if stop >= len(ids):
            break
        first += step
    return out, dropped


@hsettings(max_examples=120, deadline=None)
@given(text=mixed_text, size=st.integers(1, 120), data=st.data())
def test_token_windows(text: str, size: int, data) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    min_len = data.draw(st.sampled_from([0, 0, 5]))
    s = ChunkSettings(strategy="token", chunk_size=size, chunk_overlap=overlap, min_chunk_length_to_embed=min_len)
    result = split(text, s)
    expected, dropped = token_model(text, size, overlap, min_len)
    assert [(c.text, c.tokens, c.start, c.end) for c in result.chunks] == expected
    assert result.dropped == dropped
    for i, c in enumerate(result.chunks):
        assert c.index == i
        assert c.tokens <= size
        assert text[c.start : c.end] == c.text
    if min_len == 0:
        covered = np.zeros(len(text), dtype=bool)
        for c in result.chunks:
            covered[c.start : c.end] = True
        assert all(covered[i] or text[i].isspace() for i in range(len(text)))


def test_token_windows_share_exactly_the_overlap() -> None:
    text = " ".join(f"word{i}" for i in range(400))
    ids = toks(text)
    size, overlap = 37, 11
    chunks = split(text, ChunkSettings(strategy="token", chunk_size=size, chunk_overlap=overlap)).chunks
    tt = tokenize(text)
    # the token holding each chunk's first character is its window's first token
    # (no token of this text is pure whitespace, so trimming never skips a whole token)
    firsts = [int(np.searchsorted(tt.char_starts, c.start, side="right")) - 1 for c in chunks]
    assert firsts == list(range(0, len(ids), size - overlap))[: len(firsts)]
    assert firsts[-1] + size >= len(ids) and len(chunks) > 10
    for k in range(len(chunks) - 1):
        a, b = chunks[k], chunks[k + 1]
        shared_tokens = ids[firsts[k + 1] : firsts[k] + a.tokens]
        assert len(shared_tokens) == overlap
        shared = ENC.decode(shared_tokens).strip()
        assert a.text.endswith(shared) and b.text.startswith(shared)
        assert text[b.start : a.end].strip() == shared


def test_token_overlap_must_be_smaller_than_size() -> None:
    with pytest.raises(ChunkSettingsError) as caught:
        ChunkSettings(strategy="token", chunk_size=100, chunk_overlap=100)
    assert "100" in str(caught.value)
    with pytest.raises(ChunkSettingsError) as caught:
        ChunkSettings(strategy="recursive", chunk_size=64, chunk_overlap=97)
    assert "64" in str(caught.value) and "97" in str(caught.value)
    assert isinstance(caught.value, ValueError)


# --- 4. recursive -----------------------------------------------------------------------------


def rec(size: int, overlap: int = 0, **kw) -> ChunkSettings:
    return ChunkSettings(
        strategy="recursive", chunk_size=size, chunk_overlap=overlap, min_chunk_length_to_embed=0, **kw
    )


@hsettings(max_examples=120, deadline=None)
@given(text=mixed_text, size=st.integers(1, 150), data=st.data())
def test_recursive_chunks_fit_and_point_into_source(text: str, size: int, data) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    result = split(text, rec(size, overlap))
    prev_start = -1
    for i, c in enumerate(result.chunks):
        assert c.index == i
        assert text[c.start : c.end] == c.text and c.text == c.text.strip() and c.text
        assert 1 <= c.tokens <= size
        # Re-encoding the chunk text on its own may differ from the original tokenisation; a window
        # that begins or ends inside a multi-byte character carries the whole character (<= 3 bytes
        # more at each end) - see test_recursive_chunk_text_fits_budget_when_windows_split_characters.
        assert count_tokens(c.text) <= size + 6
        # Two windows can hold the same character when a token boundary splits it.
        assert c.start >= prev_start
        prev_start = c.start
    if overlap == 0:
        covered = np.zeros(len(text), dtype=bool)
        for c in result.chunks:
            covered[c.start : c.end] = True
        assert all(covered[i] or text[i].isspace() for i in range(len(text)))
        for a, b in zip(result.chunks, result.chunks[1:]):
            assert a.end <= b.start or (a.end == b.start + 1 and len(text[b.start].encode()) > 1)


@hsettings(max_examples=60, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(
            [
                "apple",
                "river",
                "stone",
                "light",
                "paper",
                "cloud",
                "it's",
                "42",
                "Hello.",
                "end!",
                "ok?",
                "\n\n",
                "Ünïcödé",
                "supercalifragilistic",
            ]
        ),
        min_size=1,
        max_size=500,
    ),
    size=st.integers(2, 100),
)
def test_recursive_english_counts_match_reencoding(words: list[str], size: int) -> None:
    text = " ".join(words)
    for c in split(text, rec(size)).chunks:
        # a chunk cut inside a word may re-encode to a token or two more ("supercal": 2 -> 3)
        assert c.tokens <= size and count_tokens(c.text) <= c.tokens + 2


def test_recursive_prefers_paragraph_end_in_second_half() -> None:
    first_para = sentences(4, 1)  # several sentence ends inside as well
    second_para = sentences(6, 2)
    text = first_para + "\n\n" + second_para
    n1 = len(toks(first_para + "\n\n"))
    size = n1 + 12
    assert n1 >= size // 2 and len(toks(text)) > size
    chunks = split(text, rec(size)).chunks
    assert chunks[0].text == first_para


def test_recursive_ignores_paragraph_end_in_first_half_and_takes_sentence_end() -> None:
    short = "Short intro here."
    body = sentences(12, 3)
    text = short + "\n\n" + body
    size = 60
    assert len(toks(short + "\n\n")) < size // 2
    first = split(text, rec(size)).chunks[0]
    assert first.text.endswith(".") and first.text != short
    assert text.startswith(first.text)
    # it is the last sentence end that fits in the window
    ends = [m.end() for m in re.finditer(r"\.", text)]
    fitting = [e for e in ends if len(toks(text[:e])) <= size]
    assert first.end == fitting[-1]


def test_recursive_falls_back_to_word_boundary() -> None:
    text = para(300, 4)  # no sentence ends, no paragraphs
    for c in split(text, rec(25)).chunks:
        assert c.tokens <= 25
        assert c.start == 0 or text[c.start - 1] == " "
        assert c.end == len(text) or text[c.end] == " "
    chunks = split(text, rec(25)).chunks
    assert " ".join(c.text for c in chunks) == text


def test_recursive_splits_chinese_after_sentence_marks() -> None:
    clauses = [
        "我们今天去公园散步。",
        "天气非常好！",
        "你想一起来吗？",
        "我觉得很有意思；",
        "明天再说。",
        "他们在学习中文。",
    ]
    rng = random.Random(5)
    text = "".join(rng.choice(clauses) for _ in range(150))
    size = 40
    chunks = split(text, rec(size)).chunks
    assert len(chunks) > 5
    for c in chunks:
        assert c.tokens <= size
        assert text[c.start : c.end] == c.text
        assert c.text[-1] in "。！？；"
    assert "".join(c.text for c in chunks) == text


def test_recursive_overlap_shares_text_and_starts_on_words() -> None:
    text = sentences(80, 6)
    size, overlap = 50, 10
    chunks = split(text, rec(size, overlap)).chunks
    assert len(chunks) > 5
    for a, b in zip(chunks, chunks[1:]):
        assert b.start < a.end, "neighbours share no text"
        shared = text[b.start : a.end]
        assert a.text.endswith(shared) and b.text.startswith(shared)
        assert text[b.start - 1] == " ", f"chunk starts mid-word: {b.text[:20]!r}"
        assert b.start > a.start


@pytest.mark.parametrize("overlap", [1, 2, 3, 7])
@pytest.mark.parametrize("size", [20, 33])
def test_recursive_overlap_never_starts_mid_word(size: int, overlap: int, request) -> None:
    text = "The cat sat on the mat. The dog lay on the rug. " * 20
    chunks = split(text, rec(size, overlap)).chunks
    assert len(chunks) > 3
    for c in chunks:
        assert c.start == 0 or text[c.start - 1] == " ", f"chunk starts mid-word: {c.text[:20]!r}"


def test_recursive_overlap_never_starts_mid_word_short_words() -> None:
    # "it's" is two tokens; a word boundary (before " 42") is available for the second chunk.
    chunks = [c.text for c in split("it's 42", rec(2, 1)).chunks]
    assert all(not t.startswith("'") for t in chunks), chunks


def test_recursive_chunk_text_fits_budget_when_windows_split_characters() -> None:
    text = "𝔘" * 20  # each character is three cl100k tokens
    for c in split(text, rec(8)).chunks:
        assert count_tokens(c.text) <= 8 + 2, (c.text, c.tokens, count_tokens(c.text))


def test_recursive_without_overlap_is_a_partition() -> None:
    text = "\n\n".join(sentences(5, i) for i in range(10))
    chunks = split(text, rec(40)).chunks
    rebuilt = text
    for c in chunks:
        rebuilt = rebuilt.replace(c.text, "", 1)
    assert rebuilt.strip() == ""
    for a, b in zip(chunks, chunks[1:]):
        assert a.end <= b.start and text[a.end : b.start].strip() == ""


# --- 6. pages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "s",
    [
        SPRING_DEFAULT,
        ChunkSettings(strategy="token", chunk_size=40, chunk_overlap=5),
        ChunkSettings(strategy="recursive", chunk_size=40, chunk_overlap=5),
    ],
)
def test_pages_for_span_receives_each_chunk_span(s: ChunkSettings) -> None:
    text = sentences(120, 8)
    calls: list[tuple[int, int]] = []

    def pages_for_span(start: int, end: int) -> tuple[int, ...]:
        calls.append((start, end))
        return tuple(range(start // 500 + 1, (end - 1) // 500 + 2))

    result = split(text, s, pages_for_span)
    assert len(result.chunks) > 1
    assert calls == [(c.start, c.end) for c in result.chunks]
    for c in result.chunks:
        assert c.pages == pages_for_span(c.start, c.end)
        assert c.as_dict()["pages"] == list(c.pages)
    assert all(c.pages == () for c in split(text, s).chunks)


# --- 7. stats ---------------------------------------------------------------------------------


def test_spring_never_parts_a_table_row_from_its_price_and_spring_exact_still_cuts_as_spring_does() -> None:
    rows = "\n".join(
        f"| SKU-{6600 + i} | ${i * 1000 + 42:,}.00 | Falcon model {i} with the long-range battery "
        "and a two-year warranty |"
        for i in range(1, 80)
    )
    text = "Price list for 2024.\n\n| SKU | Product | Price |\n|---|---|---|\n" + rows
    settings = ChunkSettings(
        strategy="spring",
        chunk_size=100,
        min_chunk_size_chars=50,
        min_chunk_length_to_embed=5,
        max_num_chunks=10_000,
        keep_separator=True,
    )
    chunks = split(text, settings).chunks
    assert len(chunks) > 5
    for chunk in chunks:
        for line in chunk.text.splitlines():
            if line.startswith("| SKU-"):
                assert line.endswith(" |") and line.count("|") == 4, line  # the row whole, price and all
    exact = split(text, dataclasses.replace(settings, strategy="spring-exact")).chunks
    parted = [
        line for c in exact for line in c.text.splitlines() if line.startswith("| SKU-") and not line.endswith(" |")
    ]
    assert parted, "Spring's own cut at the '.' of a price is what `spring` avoids"
