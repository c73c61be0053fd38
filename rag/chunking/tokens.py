"""Tokenise a text once (cl100k) and keep every token's byte and character span.

Every strategy then cuts from the token array and its offsets, so moving a slider never
re-encodes the document.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np

from rag.chunking.cl100k import count, encode, encoding, start_workers


@dataclass(frozen=True)
class _Vocab:
    """Facts about every token id, computed once so that offsets and boundaries are array ops."""

    nbytes: np.ndarray
    nchars: np.ndarray
    """Characters the token starts (bytes that are not UTF-8 continuation bytes)."""
    midchar: np.ndarray
    ws_start: np.ndarray
    ws_end: np.ndarray
    sentence_end: np.ndarray
    """Ends with . ? ! (before any trailing whitespace) - a sentence end if whitespace follows."""
    cjk_end: np.ndarray
    cjk_first: np.ndarray
    """Starts with a whole character of a script written without spaces (CJK, kana, hangul, full-width forms)."""
    cjk_last: np.ndarray
    """Ends with a whole such character."""
    paragraph: np.ndarray
    nl_start: np.ndarray
    nl_end: np.ndarray


_CJK_ENDS = tuple(ch.encode() for ch in "。！？；")


_UNSPACED_LEADS = np.array([*range(0xE3, 0xEE), 0xEF], dtype=np.uint8)
"""The first bytes of the UTF-8 of U+3000-U+DFFF and U+F000-U+FFFF: CJK punctuation, kana, the ideographs, Yi,
hangul, the compatibility ideographs and full-width forms, each character three bytes. Between two characters of
these a word may end (`TokenizedText.boundaries`): the text has no spaces to say where."""

_WHITESPACE = np.array([ord(" "), ord("\n"), ord("\t"), ord("\r")], dtype=np.uint8)
_SENTENCE_ENDS = np.frombuffer(b".?!", dtype=np.uint8)


@functools.cache
def _vocab() -> _Vocab:
    """The tables, computed over all ~100k tokens' bytes at once: a Python loop per token cost
    0.6-1.0 s in every process, which made a cold `rag chunk` slower than LangChain's splitter."""
    ranks_of = encoding()._mergeable_ranks
    size = encoding().max_token_value + 1
    raws = list(ranks_of)
    ranks = np.fromiter(ranks_of.values(), dtype=np.int64, count=len(raws))
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    buf = np.frombuffer(b"".join(raws), dtype=np.uint8)
    starts = np.zeros(len(raws), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    lasts = starts + lengths - 1  # every token has at least one byte
    continuation = (buf >= 0x80) & (buf < 0xC0)
    ws = np.isin(buf, _WHITESPACE)
    # The last byte of each token that is not whitespace (the end of `raw.rstrip()`), or -1.
    positions = np.where(ws, -1, np.arange(len(buf)))
    core_last = np.maximum.accumulate(positions)[lasts]
    has_core = core_last >= starts
    at_core = np.where(has_core, core_last, 0)
    cjk_end = np.zeros(len(raws), dtype=bool)
    three = has_core & (core_last - starts >= 2)
    for end in _CJK_ENDS:
        cjk_end |= three & (buf[at_core - 2] == end[0]) & (buf[at_core - 1] == end[1]) & (buf[at_core] == end[2])
    unspaced_lead = np.isin(buf, _UNSPACED_LEADS)
    cjk_first = unspaced_lead[starts] & (lengths >= 3)
    whole_last = np.zeros(len(raws), dtype=bool)  # the last three bytes: a lead and two continuations
    fits = lengths >= 3
    at = np.where(fits, lasts - 2, 0)
    whole_last[fits] = (unspaced_lead[at] & continuation[at + 1] & continuation[at + 2])[fits]
    # Whether "\n\n" or "\n\r\n" lies inside a token: marks at each pattern's first byte, counted
    # between the token's first byte and the last place the pattern still fits.
    nl = buf == ord("\n")
    pairs = np.zeros(len(buf) + 1, dtype=np.int64)
    np.cumsum(np.concatenate([nl[:-1] & nl[1:], [False]]), out=pairs[1:])
    triples = np.zeros(len(buf) + 1, dtype=np.int64)
    crlf = np.concatenate([nl[:-2] & (buf[1:-1] == ord("\r")) & nl[2:], [False, False]])
    np.cumsum(crlf, out=triples[1:])
    paragraph = ((lengths >= 2) & (pairs[np.maximum(lasts, starts + 1)] - pairs[starts] > 0)) | (
        (lengths >= 3) & (triples[np.maximum(lasts - 1, starts + 1)] - triples[starts] > 0)
    )
    cols = {
        "nbytes": lengths,
        "nchars": lengths - np.add.reduceat(continuation.astype(np.int64), starts),
        "midchar": continuation[starts].astype(np.int64),
        "ws_start": ws[starts],
        "ws_end": ws[lasts],
        "sentence_end": has_core & np.isin(buf[at_core], _SENTENCE_ENDS),
        "cjk_end": cjk_end,
        "cjk_first": cjk_first,
        "cjk_last": whole_last,
        "paragraph": paragraph,
        "nl_start": np.isin(buf[starts], _WHITESPACE[[1, 3]]),
        "nl_end": buf[lasts] == ord("\n"),
    }
    out = {}
    for name, values in cols.items():
        table = np.zeros(size, dtype=np.int64 if name in ("nbytes", "nchars", "midchar") else bool)
        table[ranks] = values
        out[name] = table
    return _Vocab(**out)


def count_tokens(text: str) -> int:
    return count(text)


def _encode(text: str) -> np.ndarray:
    return encode(text)


class TokenizedText:
    """A text encoded once, with the character span of every token."""

    def __init__(self, text: str) -> None:
        try:
            self.text_bytes = text.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates (from broken extractors) cannot be tokenised; tiktoken does the same.
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            self.text_bytes = text.encode("utf-8")
        self.text = text
        self.tokens = _encode(text).astype(np.int64)
        vocab = _vocab()
        n = len(self.tokens)
        self.byte_starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(vocab.nbytes[self.tokens], out=self.byte_starts[1:])
        chars_before = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(vocab.nchars[self.tokens], out=chars_before[1:])
        # A token that begins inside a multi-byte character belongs to that character.
        self.char_starts = chars_before[:-1] - vocab.midchar[self.tokens]
        self.char_ends = chars_before[1:]
        self.chars_before = chars_before
        self._boundaries: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.tokens)

    def window_bytes(self, first: int, stop: int) -> bytes:
        """What decoding tokens [first, stop) gives, as bytes: a slice of the source."""
        return self.text_bytes[int(self.byte_starts[first]) : int(self.byte_starts[stop])]

    def token_at_byte(self, offset: int) -> int:
        """The index of the token holding byte `offset` of the text (len(self) at its end)."""
        return min(int(np.searchsorted(self.byte_starts, offset, side="right")) - 1, len(self.tokens))

    def char_at_byte(self, offset: int) -> int:
        """The index of the character that starts at byte `offset` (a character boundary)."""
        token = self.token_at_byte(offset)
        if token >= len(self.tokens):
            return len(self.text)
        head = self.text_bytes[int(self.byte_starts[token]) : offset]
        return int(self.chars_before[token]) + sum(not 0x80 <= b < 0xC0 for b in head)

    def char_span(self, first: int, stop: int) -> tuple[int, int]:
        """Characters whose first byte lies in tokens [first, stop).

        A character split across tokens thus belongs to exactly one window: no two
        neighbouring windows without overlap share it.
        """
        return int(self.chars_before[first]), int(self.chars_before[max(stop, first)])

    def boundaries(self, level: str) -> np.ndarray:
        """Token indices where a chunk may stop after a paragraph, sentence or word (sorted)."""
        with self._lock:
            if level not in self._boundaries:
                self._boundaries[level] = self._find_boundaries(level)
            return self._boundaries[level]

    def _find_boundaries(self, level: str) -> np.ndarray:
        if level not in ("word", "sentence", "paragraph"):
            raise ValueError(f"unknown boundary level {level!r}")
        v = _vocab()
        t = self.tokens
        n = len(t)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        next_ws = np.ones(n, dtype=bool)  # the end of the text counts as whitespace
        next_ws[:-1] = v.ws_start[t[1:]]
        if level == "word":
            # Where a space is, and between two tokens meeting at a character boundary next to a character of a script
            # written without spaces: a Chinese text's only word boundaries had been its rare spaces, and a recursive
            # split's overlap, begun at the last one before the overlap asked for, ran 38-170 tokens for 32.
            whole_next = np.ones(n, dtype=bool)
            whole_next[:-1] = v.midchar[t[1:]] == 0
            next_unspaced = np.zeros(n, dtype=bool)
            next_unspaced[:-1] = v.cjk_first[t[1:]]
            after = v.ws_end[t] | next_ws | (whole_next & (v.cjk_last[t] | next_unspaced))
        elif level == "sentence":
            after = (v.sentence_end[t] & (v.ws_end[t] | next_ws)) | v.cjk_end[t]
        else:
            next_nl = np.zeros(n, dtype=bool)
            next_nl[:-1] = v.nl_start[t[1:]]
            after = v.paragraph[t] | (v.nl_end[t] & next_nl)
        return np.flatnonzero(after) + 1


def is_continuation(byte: int) -> bool:
    """A UTF-8 byte that continues a character (10xxxxxx): no character starts there."""
    return 0x80 <= byte < 0xC0


def boundary_at_or_after(data: bytes, offset: int) -> int:
    """The first character boundary of UTF-8 `data` at or after byte `offset`."""
    while offset < len(data) and is_continuation(data[offset]):
        offset += 1
    return offset


def boundary_at_or_before(data: bytes, offset: int) -> int:
    """The last character boundary of UTF-8 `data` at or before byte `offset`."""
    while 0 < offset < len(data) and is_continuation(data[offset]):
        offset -= 1
    return offset


def tokenize(text: str) -> TokenizedText:
    return TokenizedText(text)


def warm_up() -> None:
    """Build the per-process token tables and start the encoding workers now (benchmarks time the
    per-text work only)."""
    _vocab()
    start_workers(wait=30)
