"""The splitting strategies: Spring AI's TokenTextSplitter (`spring`, with its cuts snapped to
character boundaries, and `spring-exact`), token windows, recursive.

All of them cut from a `TokenizedText`; `spring_split_reference` is the literal port of Spring's
algorithm that `spring-exact` is checked against.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import numpy as np

from rag.chunking import long as long_texts
from rag.chunking.chunks import Chunk, ChunkSet
from rag.chunking.cl100k import count
from rag.chunking.long import LongText
from rag.chunking.settings import SPRING_DEFAULT, SPRING_SEPARATORS, ChunkSettings, is_spring
from rag.chunking.tokens import (
    TokenizedText,
    boundary_at_or_after,
    boundary_at_or_before,
    encoding,
    is_continuation,
    tokenize,
)

# Java's String.trim() strips every char <= U+0020 and nothing else; Spring AI relies on it.
_JAVA_WS = "".join(chr(c) for c in range(0x21))


# A space right after a letter, digit or closing mark: no cl100k pre-tokenisation piece spans
# such a place, so every tokenisation of a text that contains it agrees on both sides of it.
_ANCHOR_BYTES = re.compile(rb"[A-Za-z0-9.,;:!?)\]}\"'] ")


PagesForSpan = Callable[[int, int], tuple[int, ...]]


def split(
    source: TokenizedText | LongText | str,
    settings: ChunkSettings = SPRING_DEFAULT,
    pages_for_span: PagesForSpan | None = None,
) -> ChunkSet:
    """Chunk a text (tokenised once; pass the same TokenizedText, or LongText, to re-chunk cheaply).

    A long text (a str of `long.MIN_CHARS` or more, with more tokens than the windows before the
    last chunk can take) is split from the tokens of a prefix only: the same chunks, a fraction of
    the memory (long.py)."""
    owned = isinstance(source, str)
    cut_from = tokens_for_split(source, settings) if isinstance(source, str) else source
    if isinstance(cut_from, LongText):
        pieces, dropped = _split_long(cut_from, settings, keep_prefix=not owned)
    else:
        pieces, dropped, _ = _strategy(settings)(cut_from, settings, None)
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


def tokens_for_split(text: str, settings: ChunkSettings = SPRING_DEFAULT) -> TokenizedText | LongText:
    """What `split` cuts `text` from: its TokenizedText, or a LongText when it is long (`long.MIN_CHARS`
    characters or more) and holds more tokens than the windows of `settings` before the last chunk take
    (a LongText still splits right under settings that take more: it then tokenises the whole)."""
    if len(text) >= long_texts.MIN_CHARS:
        candidate = LongText(text)
        if candidate.estimated_tokens() > _reach(settings):
            return candidate
    return tokenize(text)


_Piece = tuple[str, int, int, int]  # text, tokens, start, end
_Rest = Callable[[], tuple["_Piece | None", int]]
"""Makes the last chunk of a long text from the whole of it: (the piece or None, 1 if it was dropped)."""
_Strategy = Callable[[TokenizedText, ChunkSettings, "LongText | None"], tuple[list[_Piece], int, "_Rest | None"]]


class _Horizon(Exception):
    """A window reached the end of a long text's tokenised prefix: what it holds, or whether it is
    the last, depends on the text after the prefix. The split is made again from a longer one."""


def _strategy(settings: ChunkSettings) -> _Strategy:
    if is_spring(settings.strategy):
        return _spring
    return _token_windows if settings.strategy == "token" else _recursive


def _reach(s: ChunkSettings) -> int:
    """Tokens that the windows before the last chunk take at most, when none is blank or dropped: a
    Spring window advances by chunk_size + 1 tokens at most (a snapped cut keeps a split character)."""
    return (s.max_num_chunks + 1) * (s.chunk_size + 1)


def _split_long(long: LongText, s: ChunkSettings, *, keep_prefix: bool) -> tuple[list[_Piece], int]:
    """The pieces of a long text: the strategy cuts its windows from a tokenised prefix (longer each
    time a window reaches its end) and the last chunk, all the rest, is made from the whole text,
    its tokens counted. Unless `keep_prefix`, the prefix's tokens are freed before that chunk is made."""
    strategy = _strategy(s)
    need = _reach(s)
    while True:
        tt, whole = long.tokenized(need)
        try:
            pieces, dropped, rest = strategy(tt, s, None if whole else long)
        except _Horizon:
            need = 2 * max(need, len(tt))
            continue
        if rest is None:
            return pieces, dropped
        del tt
        if not keep_prefix:
            long.release()
        piece, lost = rest()
        if piece is not None:
            pieces.append(piece)
        return pieces, dropped + lost


def _stripped_start(text: str, lo: int, hi: int, chars: str | None = None) -> int:
    """The first index in [lo, hi) whose character `str.lstrip(chars)` keeps (hi if none), read in
    slices: no copy of a long text."""
    while lo < hi:
        stop = min(hi, lo + 65536)
        kept = len(text[lo:stop].lstrip(chars))
        if kept:
            return stop - kept
        lo = stop
    return hi


def _stripped_end(text: str, lo: int, hi: int, chars: str | None = None) -> int:
    """One past the last index in [lo, hi) whose character `str.rstrip(chars)` keeps (lo if none)."""
    while hi > lo:
        start = max(lo, hi - 65536)
        kept = len(text[start:hi].rstrip(chars))
        if kept:
            return start + kept
        hi = start
    return lo


def _utf16_len(text: str) -> int:
    # Java counts UTF-16 code units; characters beyond the BMP count twice.
    if text.isascii():
        return len(text)
    # The codec counts in C: the loop over characters was 0.1 s of a 12-PDF Chinese ingest.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _java_trim_span(text: str) -> tuple[int, int]:
    stripped_left = len(text) - len(text.lstrip(_JAVA_WS))
    return stripped_left, len(text.rstrip(_JAVA_WS))


def _last_separator(text: str) -> int:
    return max(text.rfind(separator) for separator in SPRING_SEPARATORS)


def _last_separator_between_rows(text: str) -> int:
    """Spring's separator, except inside a Markdown table row: there the '.' of "$42,000.00" would
    part a row from its price, so the cut goes to the end of the row before."""
    last = _last_separator(text)
    newline = text.rfind("\n")
    if newline != -1 and last > newline and text.startswith("|", newline + 1):
        return newline
    return last


def _spring(
    tt: TokenizedText, s: ChunkSettings, tail: LongText | None = None
) -> tuple[list[_Piece], int, _Rest | None]:
    """Spring AI's TokenTextSplitter.doSplit, cutting from the tokens encoded once.

    Spring advances by the token count of the *re-encoded* cut text; `_reencoded_length`
    computes that count exactly while encoding only a few characters at each end.

    `spring-exact` cuts the windows where Spring does, even inside a character (the decoded
    window then holds U+FFFD). `spring` snaps such a cut to a character boundary: a window's text
    starts at the first character that begins in it and ends before a character it holds only
    part of (or after it, when that character is all the window has), and the next window starts
    right after that text. Where no cut falls inside a character both are the same.

    With `tail`, `tt` is a prefix of that long text: a window that could depend on what follows the
    prefix raises `_Horizon`, and the last chunk is returned to be made from the whole text.
    """
    if tail is None and not tt.text.strip(_JAVA_WS):
        return [], 0, None
    snap = s.strategy == "spring"
    data, starts = tt.text_bytes, tt.byte_starts
    n_total = len(tt)
    pieces: list[_Piece] = []
    dropped = 0
    pos = 0
    begin = 0  # the byte where the window's text begins: token pos's first, or a boundary in it
    made = 0
    while pos < n_total and made < s.max_num_chunks:
        if tail is not None and n_total - pos <= s.chunk_size:
            raise _Horizon  # the window, and whether it is cut at a separator, need the tokens after it
        n = min(s.chunk_size, n_total - pos)
        first, stop = int(starts[pos]), int(starts[pos + n])
        if snap:
            begin = boundary_at_or_after(data, max(begin, first))
            end = boundary_at_or_before(data, stop)
            if end < stop and not data[begin:end].decode("utf-8").strip(_JAVA_WS):
                end = boundary_at_or_after(data, stop)  # the split character is all it has
        else:
            begin, end = first, stop
        chunk_text = data[begin:end].decode("utf-8", errors="replace")
        if not chunk_text.strip(_JAVA_WS):
            pos += n
            begin = int(starts[pos])
            continue
        cut = len(chunk_text)
        if n_total - pos > s.chunk_size:
            last = _last_separator_between_rows(chunk_text) if snap else _last_separator(chunk_text)
            if last != -1:
                last_java = last + (_utf16_len(chunk_text[:last]) - last)
                if last_java > s.min_chunk_size_chars:
                    cut = last + 1
        cut_text = chunk_text[:cut]
        if begin == first and (end == stop or cut < len(chunk_text)):
            # Spring's own cut (a separator or the whole window): Spring's advance.
            advance = _reencoded_length(tt, pos, data[first:stop], cut_text)
            piece = _spring_piece(len(tt.text), int(tt.char_starts[pos]), cut_text, advance, s)
            pos += advance
            begin = int(starts[pos]) if pos < n_total else len(data)
        else:
            # A snapped cut: the next window starts where this text ends.
            after = begin + len(cut_text.encode("utf-8"))
            last_token = tt.token_at_byte(after - 1)
            piece = _spring_piece(len(tt.text), tt.char_at_byte(begin), cut_text, last_token - pos + 1, s)
            pos, begin = tt.token_at_byte(after), after
        if piece is None:
            dropped += 1
        else:
            pieces.append(piece)
        made += 1
    if tail is not None:
        if made < s.max_num_chunks or pos >= n_total:
            raise _Horizon  # the prefix ended before the last window: the rest decides where
        return pieces, dropped, _spring_rest(tt, s, tail, pos, begin)
    if pos < n_total:
        begin = boundary_at_or_after(data, max(begin, int(starts[pos]))) if snap else int(starts[pos])
        rest = data[begin:].decode("utf-8", errors="replace")
        first_char = tt.char_at_byte(begin) if snap else int(tt.char_starts[pos])
        piece = _spring_piece(
            len(tt.text),
            first_char,
            rest.replace("\n", " "),
            n_total - pos,
            dataclasses.replace(s, keep_separator=True),
        )
        if piece is None:
            dropped += 1
        else:
            pieces.append(piece)
    return pieces, dropped, None


def _spring_rest(tt: TokenizedText, s: ChunkSettings, tail: LongText, pos: int, begin: int) -> _Rest:
    """The last chunk of a long text, all of it from token `pos` (as the end of `_spring` makes it
    from a whole TokenizedText), without a copy of the text's bytes."""
    data, snap = tt.text_bytes, s.strategy == "spring"
    begin = boundary_at_or_after(data, max(begin, int(tt.byte_starts[pos]))) if snap else int(tt.byte_starts[pos])
    first_char = tt.char_at_byte(begin) if snap else int(tt.char_starts[pos])
    tokens = len(tail) - pos
    text, cut = tail.text, len(tt.text)
    if begin < len(data) and is_continuation(data[begin]):
        # spring-exact, cut inside a character: its bytes there decode to U+FFFD, as Spring's do.
        head = data[begin:].decode("utf-8", errors="replace")

        def rest_from_inside_a_character() -> tuple[_Piece | None, int]:
            piece = _spring_piece(
                len(text),
                first_char,
                (head + text[cut:]).replace("\n", " "),
                tokens,
                dataclasses.replace(s, keep_separator=True),
            )
            return piece, int(piece is None)

        return rest_from_inside_a_character

    def rest() -> tuple[_Piece | None, int]:
        # The text decoded from `begin` is text[first_char:]; its Java trim is that of the text with
        # "\n" made " " (both are trimmed), so only the kept span is copied, once.
        left = _stripped_start(text, first_char, len(text), _JAVA_WS)
        right = _stripped_end(text, left, len(text), _JAVA_WS)
        if right - left <= s.min_chunk_length_to_embed and _utf16_len(text[left:right]) <= s.min_chunk_length_to_embed:
            return None, 1
        return (text[left:right].replace("\n", " "), tokens, left, right), 0

    return rest


def _spring_piece(length: int, first_char: int, text: str, tokens: int, s: ChunkSettings) -> _Piece | None:
    """The trimmed chunk of a cut text starting at character `first_char` of a text of `length`
    characters; `tokens` is what Spring advances by (the cut text before trimming)."""
    if not s.keep_separator:
        text = text.replace("\n", " ")
    left, right = _java_trim_span(text)
    trimmed = text[left:right]
    if _utf16_len(trimmed) <= s.min_chunk_length_to_embed:
        return None
    start = min(first_char + left, length)
    end = min(start + len(trimmed), length)
    return trimmed, tokens, start, end


def _reencoded_length(tt: TokenizedText, pos: int, window: bytes, cut_text: str) -> int:
    """len(encode(cut_text)) where cut_text is a prefix of decode(window), window = tokens[pos:].

    Between two places where a space follows a letter, digit or closing mark, or a CJK ideograph is followed
    by CJK punctuation, every tokenisation agrees (no cl100k piece spans such a place: `_places`), so only the
    head before the first such place and the tail after the last one are encoded again.
    """
    if len(cut_text) < 64:
        return count(cut_text)
    cut_bytes = len(cut_text.encode("utf-8", errors="surrogatepass"))
    if "\ufffd" in cut_text:
        # Replacement characters change byte lengths; fall back to the plain count.
        return count(cut_text)
    places = _places(window, cut_bytes)
    if places is None:
        return count(cut_text)
    b1, b2 = places
    base = int(tt.byte_starts[pos])
    i1: int
    i2: int
    i1, i2 = np.searchsorted(tt.byte_starts, (base + b1, base + b2)).tolist()
    if tt.byte_starts[i1] != base + b1 or tt.byte_starts[i2] != base + b2:
        return count(cut_text)  # pragma: no cover - anchors are token starts
    head = window[:b1].decode("utf-8")
    tail = window[b2:cut_bytes].decode("utf-8")
    return count(head) + (i2 - i1) + count(tail)


_CJK_PLACE = re.compile(rb"[\xe4-\xe9][\x80-\xbf][\x80-\xbf](?=\xe3\x80[\x81\x82]|\xef\xbc[\x81\x8c\x9a\x9b\x9f])")
"""A CJK ideograph (U+4E00-U+9FFF) followed by 、。！，：；？ (the place is after the ideograph): cl100k's
pre-tokeniser ends a run of letters before punctuation, which starts a piece of its own. Chinese text has no
spaces, so without these its chunks were encoded again whole: the chunking of 40 of the peers bench's PDFs
(half Chinese) took 0.44 s, 0.33 with them (the same chunks)."""


def _places(window: bytes, cut_bytes: int) -> tuple[int, int] | None:
    """The first and the last place in window[:cut_bytes] where every tokenisation agrees (`_reencoded_length`),
    or None when there are not two."""
    places: list[int] = []
    first = _ANCHOR_BYTES.search(window, 0, cut_bytes)
    if first is not None:
        b1 = first.end() - 1
        search_end = cut_bytes - 1  # the anchor's space must lie inside the cut text
        while search_end > b1:
            space = window.rfind(b" ", b1 + 1, search_end + 1)
            if space <= b1:
                break
            if _ANCHOR_BYTES.match(window, space - 1):
                places += [b1, space]
                break
            search_end = space - 1
    cjk = _CJK_PLACE.search(window, 0, cut_bytes)
    if cjk is not None:
        last = _last_match(_CJK_PLACE, window, cjk.end(), cut_bytes)
        if last is not None:
            places += [cjk.end(), last.end()]
    if len(places) < 2 or min(places) >= max(places):
        return None
    return min(places), max(places)


def _last_match(pattern: re.Pattern[bytes], data: bytes, lo: int, hi: int) -> re.Match[bytes] | None:
    """The last match of `pattern` that starts in data[lo:hi] and ends by `hi`, found from the end."""
    step = 96
    while True:
        start = max(lo, hi - step)
        last = None
        for last in pattern.finditer(data, start, hi):  # noqa: B007 - the last one is wanted
            pass
        if last is not None or start == lo:
            return last
        step *= 8


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
        chunk = tokens[pos : pos + s.chunk_size]
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


def _windows_rest(tt: TokenizedText, s: ChunkSettings, tail: LongText, first: int) -> _Rest:
    """The last window of a long text, all of it from token `first` (`_window_piece(tt, first,
    len(tt))` of a whole TokenizedText, then `_keep`), copying only the span it keeps."""
    start, text = int(tt.chars_before[first]), tail.text
    tokens = len(tail) - first

    def rest() -> tuple[_Piece | None, int]:
        left = _stripped_start(text, start, len(text))
        right = _stripped_end(text, left, len(text))
        if right <= left:
            return None, 0
        if right - left <= s.min_chunk_length_to_embed:
            return None, 1
        return (text[left:right], tokens, left, right), 0

    return rest


def _token_windows(
    tt: TokenizedText, s: ChunkSettings, tail: LongText | None = None
) -> tuple[list[_Piece], int, _Rest | None]:
    step = s.chunk_size - s.chunk_overlap
    pieces: list[_Piece] = []
    dropped = 0
    n = len(tt)
    first = 0
    while first < n:
        # As in Spring AI, the last chunk allowed by max_num_chunks takes the rest of the text.
        last_allowed = len(pieces) == s.max_num_chunks - 1
        if tail is not None:
            if last_allowed:
                return pieces, dropped, _windows_rest(tt, s, tail, first)
            if first + s.chunk_size >= n:
                raise _Horizon
        stop = n if last_allowed else min(first + s.chunk_size, n)
        dropped += _keep(pieces, _window_piece(tt, first, stop), s.min_chunk_length_to_embed)
        if stop >= n:
            break
        first += step
    if tail is not None:
        raise _Horizon
    return pieces, dropped, None


def _recursive(
    tt: TokenizedText, s: ChunkSettings, tail: LongText | None = None
) -> tuple[list[_Piece], int, _Rest | None]:
    """Greedy windows that end at the coarsest boundary found in their second half. (With `tail`:
    boundaries below the prefix's last token are those of the whole text, and a window stays below.)"""
    n = len(tt)
    levels = [tt.boundaries(level) for level in ("paragraph", "sentence", "word")]
    words = levels[2]
    pieces: list[_Piece] = []
    dropped = 0
    first = 0
    while first < n:
        limit = first + s.chunk_size
        if tail is not None:
            if len(pieces) == s.max_num_chunks - 1:
                return pieces, dropped, _windows_rest(tt, s, tail, first)
            if limit >= n:
                raise _Horizon
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
    if tail is not None:
        raise _Horizon
    return pieces, dropped, None
