"""A chunk's CJK bigrams as a ready tsvector (PostgreSQL's binary form), made here for a document at once.

Chinese is indexed as overlapping character bigrams (`rag.query.keywords`). Written as text ("检索 索质 质量")
for the server to parse, they cost it more than anything else a Chinese chunk brings: PostgreSQL's parser and
its English dictionary looked at each of the ~1,000 bigrams of an 800-token chunk: writing the peers bench's
12,014 chunks (200 PDFs, 9,503 of the chunks Chinese) a document a COPY took the server 9.9-10.1 CPU s with
the bigrams as text, 8.2-8.7 with them as a tsvector (+0.1 s here). Numpy makes them for all the chunks of a
document in one pass (0.8 s for those PDFs, where the bigram text took 1.0).

The lexemes are exactly the parser's: a run of CJK characters all of which are letters of their own (Unicode
category Lo: ideographs, kana, hangul) becomes its bigrams (or itself, when one character long), which the
parser reads as words and the dictionary keeps as they are; a run holding anything else (a katakana middle dot
or prolonged sound mark, an unassigned code point), whose words the parser may cut elsewhere, is left in the
text, as bigrams, for the server to parse as before. A lexeme keeps at most `MAX_POSITIONS` positions, as
to_tsvector does: the positions count a term's occurrences in the chunk (BM25's tf, `keyword_sql`), their
values say nothing. A chunk whose positions could pass PostgreSQL's last (16,383, where to_tsvector stops
counting them apart) is left to the server whole.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from rag.query.keywords import search_text
from rag.scripts import CJK

MAX_POSITIONS = 255
"""Positions to_tsvector keeps of one lexeme in one document (PostgreSQL's MAXNUMPOS - 1)."""
LAST_POSITION = 16_383
"""The largest position a tsvector holds; to_tsvector gives every later word this one."""


def _ranges(pattern: str) -> list[tuple[int, int]]:
    """The code point ranges of a regex character-class body made of single characters and a-b ranges."""
    found = []
    for match in re.finditer(r"(.)(?:-(.))?", pattern, flags=re.DOTALL):
        low = ord(match.group(1))
        found.append((low, ord(match.group(2)) if match.group(2) else low))
    return found


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """Per code point of the Basic Multilingual Plane (where every CJK character of `rag.scripts` is): whether
    it is one, and whether it is one the parser reads as a letter everywhere (category Lo)."""
    cjk = np.zeros(0x10000, dtype=bool)
    letter = np.zeros(0x10000, dtype=bool)
    for low, high in _ranges(CJK):
        cjk[low : high + 1] = True
        for code in range(low, high + 1):
            letter[code] = unicodedata.category(chr(code)) == "Lo"
    return cjk, letter


_IS_CJK, _IS_LETTER = _tables()
_RUN = re.compile(f"[{CJK}]+")


def _class(mask: np.ndarray) -> str:
    """A regex character-class body of the code points where `mask` is set."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    return "".join(f"{re.escape(chr(low))}-{re.escape(chr(high - 1))}" for low, high in edges.reshape(-1, 2))


_NOT_LETTER = re.compile(f"[{_class(_IS_CJK & ~_IS_LETTER)}]")


def _letters_only(run: str) -> bool:
    return _NOT_LETTER.search(run) is None


def _rest(text: str) -> str:
    """`text` with the runs made into lexemes here taken out (a space each), the other runs as bigrams (a text with
    a run the server is to cut; `_encode` makes the others' rest)."""
    return _RUN.sub(lambda m: " " if _letters_only(m.group()) else f" {search_text(m.group())} ", text)


def split_terms(texts: Sequence[str]) -> list[tuple[str | None, bytes | None]]:
    """For each text: what the server is to parse (None: the text itself) and its CJK lexemes as a binary
    tsvector (None: none made here). `to_tsvector('english', parsed) || lexemes` holds the same lexemes, each
    with as many positions, as `to_tsvector('english', keywords.search_text(text))`."""
    out: list[tuple[str | None, bytes | None]] = []
    wanted: list[int] = []
    made: dict[int, _Encoded] = {}
    for i, text in enumerate(texts):
        # Fewer characters than positions: none passed. A "<" can open a tag, which the parser reads as one token
        # across blanks and CJK runs alike ("<K文文>"): such a text is left to the server whole.
        if text.isascii():
            continue
        if _RUN.search(text) is None:  # English with a curly quote: nothing to encode (split_terms 0.61 -> 0.52 s)
            made[i] = (None, _NO_CJK)
        elif len(text) < LAST_POSITION and "<" not in text:
            wanted.append(i)
    for group in _groups(wanted, texts):
        made.update(zip(group, _encode([texts[i] for i in group]), strict=True))
    for i, text in enumerate(texts):
        vector, rest = made.get(i, _UNKNOWN)
        if vector is None:
            parsed = text if rest is _NO_CJK else search_text(text)
            out.append((None if parsed == text else parsed, None))
        else:
            parsed = rest if isinstance(rest, str) else _rest(text)
            out.append((None if parsed == text else parsed, vector))
    return out


_NO_CJK = object()
"""A text holds no CJK character: what the server parses is the text itself."""
_UNKNOWN = (None, None)
"""Not encoded here: the text is left to `search_text`."""
_Encoded = tuple[bytes | None, object]
"""A text's CJK lexemes as a binary tsvector (None: none made here) and its rest: what the server is to parse
(a str), `_NO_CJK`, or None where `_rest` makes it (a run the server is to cut)."""


MAX_ROWS = 1 << 18
"""Texts encoded at once, at most (a row number's bits in the sort key)."""
GROUP_CHARS = 1_000_000
"""Characters encoded at once, at most (but one text longer alone): numpy holds ~75 bytes a character meanwhile.
The peers bench's 12,014 chunks (13.3 M characters) encoded at once grew the process by 997 MB, in groups of
this size by 115 MB, in about a third of the time (1.1 against 3.7 s)."""


def _groups(wanted: list[int], texts: Sequence[str]) -> list[list[int]]:
    """`wanted` in runs of at most `GROUP_CHARS` characters and `MAX_ROWS` texts."""
    groups: list[list[int]] = []
    size = 0
    for i in wanted:
        if not groups or size + len(texts[i]) > GROUP_CHARS or len(groups[-1]) >= MAX_ROWS:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += len(texts[i])
    return groups


def _encode(texts: list[str]) -> list[_Encoded]:
    """The tsvector (binary send format) of each text's letter-only CJK runs' bigrams, None where it has none, and
    the text with those runs taken out (`_rest`'s, made from the same arrays: its regex took 0.27 CPU s of the peers
    bench's 11,630 chunks, 11,478 of them with a character past ASCII; `split_terms` over them 1.17-1.35 -> 0.77-0.83
    CPU s, the same result), `_NO_CJK` where it has no CJK character, None where a run the server is to cut leaves
    that to `_rest`."""
    joined = "\n".join(texts)
    code = np.frombuffer(joined.encode("utf-32-le"), dtype="<u4")
    starts = np.zeros(len(texts) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([len(t) + 1 for t in texts])
    small = np.where(code < 0x10000, code, 0)  # beyond the plane: 0, no CJK character
    cjk = _IS_CJK[small]
    letter = _IS_LETTER[small]  # set only where _IS_CJK is
    # Runs of CJK characters: a run with any character not a letter is left to the server whole.
    begins = cjk.copy()
    begins[1:] &= ~cjk[:-1]
    run = np.cumsum(begins)
    spoilt = np.zeros(int(run[-1]) + 1 if len(run) else 1, dtype=bool)
    unlettered = cjk & ~letter
    spoilt[run[unlettered]] = True
    kept = cjk & ~spoilt[run]
    after = np.zeros_like(kept)
    after[:-1] = kept[1:]
    before = np.zeros_like(kept)
    before[1:] = kept[:-1]
    bigram = kept & after
    single = kept & ~after & ~before
    rests = _rests(code, starts, cjk, unlettered, kept, before)
    at = np.flatnonzero(bigram | single)
    if not len(at):
        return [(None, rest) for rest in rests]
    second = np.where(bigram[at], small[np.minimum(at + 1, len(small) - 1)], 0).astype(np.uint64)
    key = (small[at].astype(np.uint64) << np.uint64(16)) | second
    row = np.searchsorted(starts, at, side="right") - 1
    first_of_row = np.searchsorted(row, np.arange(len(texts)), side="left")
    position = np.arange(len(at)) - first_of_row[row] + 1
    # Grouped by row, then lexeme (UTF-8 byte order, a prefix first: the order of code points, and a single
    # character's key, its second half 0, before its bigrams'), positions ascending within each lexeme.
    # One integer sorted (row, lexeme, position: 18 + 32 + 14 bits): a lexsort of the three took 3x as long.
    packed = np.sort((row.astype(np.uint64) << np.uint64(46)) | (key << np.uint64(14)) | position.astype(np.uint64))
    row = (packed >> np.uint64(46)).astype(np.int64)
    key = (packed >> np.uint64(14)) & np.uint64(0xFFFFFFFF)
    position = (packed & np.uint64(0x3FFF)).astype(np.int64)
    new = np.ones(len(key), dtype=bool)
    new[1:] = (key[1:] != key[:-1]) | (row[1:] != row[:-1])
    lexeme = np.cumsum(new) - 1
    lexeme_start = np.flatnonzero(new)
    rank = np.arange(len(key)) - lexeme_start[lexeme]
    keep = rank < MAX_POSITIONS
    counts = np.bincount(lexeme[keep], minlength=len(lexeme_start))
    lex_key = key[lexeme_start]
    lex_row = row[lexeme_start]
    two = (lex_key & np.uint64(0xFFFF)) != 0
    lex_len = np.where(two, 6, 3)
    size = lex_len + 3 + 2 * counts  # the lexeme, its NUL, npos, the positions
    # Each row's bytes: its lexeme count (int32), then its lexemes one after another.
    per_row = np.bincount(lex_row, minlength=len(texts))
    row_bytes = np.bincount(lex_row, weights=size, minlength=len(texts)).astype(np.int64) + 4 * (per_row > 0)
    row_offset = np.zeros(len(texts) + 1, dtype=np.int64)
    row_offset[1:] = np.cumsum(row_bytes)
    buffer = np.zeros(int(row_offset[-1]), dtype=np.uint8)
    has = np.flatnonzero(per_row)
    header = row_offset[has]
    for shift, offset in ((24, 0), (16, 1), (8, 2), (0, 3)):
        buffer[header + offset] = (per_row[has] >> shift) & 0xFF
    lex_offset = np.cumsum(size) - size  # within the rows' lexemes, from the first row's
    first_lexeme_of_row = np.searchsorted(lex_row, np.arange(len(texts)), side="left")
    lex_offset = lex_offset - lex_offset[first_lexeme_of_row[lex_row]]
    lex_offset = lex_offset + row_offset[lex_row] + 4
    first = (lex_key >> np.uint64(16)).astype(np.int64)
    second_char = (lex_key & np.uint64(0xFFFF)).astype(np.int64)
    _utf8(buffer, lex_offset, first)
    _utf8(buffer, lex_offset[two] + 3, second_char[two])
    npos_at = lex_offset + lex_len + 1
    buffer[npos_at] = counts >> 8
    buffer[npos_at + 1] = counts & 0xFF
    kept_position = position[keep]
    kept_lexeme = lexeme[keep]
    at_byte = npos_at[kept_lexeme] + 2 + 2 * rank[keep]
    buffer[at_byte] = kept_position >> 8
    buffer[at_byte + 1] = kept_position & 0xFF
    data = buffer.tobytes()
    return [(data[row_offset[i] : row_offset[i + 1]] if per_row[i] else None, rests[i]) for i in range(len(texts))]


def _rests(
    code: np.ndarray,
    starts: np.ndarray,
    cjk: np.ndarray,
    unlettered: np.ndarray,
    kept: np.ndarray,
    before: np.ndarray,
) -> list[object]:
    """Each text's rest (`_Encoded`) from `_encode`'s arrays over the texts joined by newlines: a run of `kept`
    characters becomes one space."""
    ends = starts[1:] - 1  # each text's end in `code` (its newline, or the end)
    counted = np.concatenate(([0], np.cumsum(cjk)))
    has_cjk = counted[ends] > counted[starts[:-1]]
    counted = np.concatenate(([0], np.cumsum(unlettered)))
    cut = counted[ends] > counted[starts[:-1]]
    rests: list[object] = [_NO_CJK if not has else None for has in has_cjk.tolist()]
    plain = np.flatnonzero(has_cjk & ~cut)
    if not len(plain):
        return rests
    opens = kept & ~before
    emitted = ~kept | opens
    joined = np.where(opens, np.uint32(32), code)[emitted].astype("<u4").tobytes().decode("utf-32-le")
    at = np.concatenate(([0], np.cumsum(emitted)))
    first, last = at[starts[:-1]].tolist(), at[ends].tolist()
    for i in plain.tolist():
        rests[i] = joined[first[i] : last[i]]
    return rests


def _utf8(buffer: np.ndarray, at: np.ndarray, code: np.ndarray) -> None:
    """Three-byte UTF-8 (U+0800-U+FFFF, every CJK character here) of `code` written at `at`."""
    buffer[at] = 0xE0 | (code >> 12)
    buffer[at + 1] = 0x80 | ((code >> 6) & 0x3F)
    buffer[at + 2] = 0x80 | (code & 0x3F)
