"""Lines a page layout wrapped inside Chinese or Japanese text, joined again.

MuPDF (and OCR) end every printed line with a newline. In English that newline is a space between two
words; in Chinese it falls inside a word ("中国大陆由盛大游\\n戏运营"), and everything after the reader
took it for a space: Spring's splitter turns newlines into spaces ("盛大游 戏"), the keyword index's
bigrams lose "游戏", the embedder reads two words, and a passage copied from the document was not found
in its chunks (9 of 10 expected passages of a Chinese PDF "not in the document", a walk of the Chunk Lab).

A newline is a wrap when the characters either side are written without spaces (Han, kana, their
punctuation and full-width forms; or a number or Latin word that such characters touch on its other side)
and the line before it is full: at least `FULL_SHARE` of the page's
long lines' width (`_reference`), counting a full-width character as two. A heading, a paragraph's last
line, or a line ending a sentence keeps its newline. A newline before punctuation that never starts a line
(`_NO_LINE_START`) is always joined.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata

import numpy as np

from rag.scripts import UNSPACED as _UNSPACED

_ALNUM = "A-Za-z0-9"
_ENDS_SENTENCE = frozenset("。！？!?")
_NO_LINE_START = frozenset("，、。．：；！？）】》」』〕〉")
"""Punctuation Chinese and Japanese typesetting never starts a line with (kinsoku): a newline before it is
MuPDF's, which starts a new line at a wide gap before a full-width glyph ("大师)\n，可选择")."""
_LONGEST_RUN = 64
"""Characters of a line's end looked at: a Latin word or number longer than this is no wrapped one."""
_MAY_JOIN = re.compile(
    f"\\n(?:(?<=[{_UNSPACED}{_ALNUM}]\\n)(?=[{_ALNUM}]*[{_UNSPACED}])|(?=[{''.join(sorted(_NO_LINE_START))}]))"
)
"""Each newline that may be joined: one inside unspaced text, or inside a number or a Latin word written into it
("天文1\\n5年", "韩国Nex\\non开发": `_ENDS_UNSPACED` tells whether unspaced text is before the Latin), where no
space was lost ("in 1999\\n2000" is not one: a space before the digits); or one before punctuation that never
starts a line. Found from the newlines themselves (the pattern starts with one): looking from each unspaced
character took 0.20 s over the peers bench's pages, this 0.08."""
_ENDS_UNSPACED = re.compile(f"[{_UNSPACED}][{_ALNUM}]{{0,{_LONGEST_RUN - 1}}}$")
_LATIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

FULL_SHARE = 0.6
"""Of the reference width, what a line reaches to be full. Counted in cells, lines that a page filled differ
widely: digits and Latin letters are narrower than half a Chinese character in most fonts, so a wrapped line
of a Wikipedia PDF with dates in it measured 69-76 cells against the page's 89 (at 0.85 "2012年11\n月12日"
and "男子10\n0米" stayed cut). A paragraph's last line, which may be as long, mostly ends a sentence, and a
heading is mostly shorter."""


def join_wrapped_lines(text: str) -> str:
    """`text` with each newline that wraps a line inside unspaced text removed (see the module docstring)."""
    candidates = [
        at
        for at in (found.start() for found in _MAY_JOIN.finditer(text))
        if not (at and text[at - 1] in _LATIN and text[at + 1] not in _NO_LINE_START)
        or _ENDS_UNSPACED.search(text, max(0, at - _LONGEST_RUN), at) is not None
    ]
    if not candidates:
        return text
    # The lines' widths for the whole page at once: 0.47 of the peers bench's 0.96 s of joining (3,234 pages with a
    # newline to look at, 153,658 lines) went to measuring each line in Python, 0.05 s so.
    newlines, line_widths = _line_widths(text)
    full, widths = FULL_SHARE * _reference(line_widths), line_widths.tolist()
    lines_before = np.searchsorted(newlines, candidates).tolist()  # the line each candidate newline ends
    pieces, start = [], 0
    for at, line in zip(candidates, lines_before, strict=True):
        last = text[at - 1] if at and text[at - 1] != "\n" else ""
        if not last or last.isspace():
            continue
        if text[at + 1] in _NO_LINE_START or (last not in _ENDS_SENTENCE and widths[line] >= full):
            pieces.append(text[start:at])
            start = at + 1
    if not pieces:
        return text
    pieces.append(text[start:])
    return "".join(pieces)


_NEWLINE = ord("\n")


def _cells(code: int) -> int:
    """A character's width in half-width cells: 2 full-width or wide, else 1."""
    return 2 if unicodedata.east_asian_width(chr(code)) in "WF" else 1


@functools.cache
def _basic_plane_cells() -> np.ndarray:
    """`_cells` of the first 65,536 code points, asked of `unicodedata` once per process (~10 ms)."""
    return np.fromiter(map(_cells, range(0x10000)), dtype=np.int64, count=0x10000)


def _line_widths(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Where `text`'s newlines are (character offsets), and the width of each of its lines (`text` split at
    "\n") in half-width cells, a full-width or wide character counted as two."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    newlines = np.flatnonzero(codes == _NEWLINE)
    cells = _basic_plane_cells()[np.minimum(codes, 0xFFFF)]
    beyond = np.flatnonzero(codes > 0xFFFF)
    if beyond.size:  # rare (emoji, the ideographs past the first plane): asked one by one
        cells[beyond] = [_cells(code) for code in codes[beyond].tolist()]
    cells[newlines] = 0
    total = np.concatenate(([0], np.cumsum(cells)))
    ends = np.append(newlines, len(codes))
    starts = np.concatenate(([0], newlines + 1))
    return newlines, total[ends] - total[starts]


def _reference(widths: np.ndarray) -> int:
    """The width of the page's long lines: the 90th percentile (a single overlong line, a URL or a table
    row, does not set it; a page of a heading and one line of text takes the line's)."""
    ordered = np.sort(widths[widths > 0])
    if not ordered.size:
        return 0
    return int(ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)])
