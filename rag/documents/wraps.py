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

import math
import re
import unicodedata

from rag.scripts import UNSPACED as _UNSPACED

_ALNUM = "A-Za-z0-9"
_WRAP = re.compile(f"[{_UNSPACED}][{_ALNUM}]*\n[{_ALNUM}]*[{_UNSPACED}]")
"""A newline inside unspaced text, or inside a number or a Latin word written into it ("天文1\n5年",
"韩国Nex\non开发"): where no space was lost. "in 1999\n2000" is not one (a space before the digits)."""
_ENDS_UNSPACED = re.compile(f"[{_UNSPACED}][{_ALNUM}]*$")
_STARTS_UNSPACED = re.compile(f"[{_ALNUM}]*[{_UNSPACED}]")
_ENDS_SENTENCE = frozenset("。！？!?")
_NO_LINE_START = frozenset("，、。．：；！？）】》」』〕〉")
"""Punctuation Chinese and Japanese typesetting never starts a line with (kinsoku): a newline before it is
MuPDF's, which starts a new line at a wide gap before a full-width glyph ("大师)\n，可选择")."""
_MAY_WRAP = re.compile(f"{_WRAP.pattern}|\n[{''.join(sorted(_NO_LINE_START))}]")
"""Where a page may have a newline to join (a page without one is returned as it is, in one search)."""
_LONGEST_RUN = 64
"""Characters of a line's end looked at: a Latin word or number longer than this is no wrapped one."""

FULL_SHARE = 0.6
"""Of the reference width, what a line reaches to be full. Counted in cells, lines that a page filled differ
widely: digits and Latin letters are narrower than half a Chinese character in most fonts, so a wrapped line
of a Wikipedia PDF with dates in it measured 69-76 cells against the page's 89 (at 0.85 "2012年11\n月12日"
and "男子10\n0米" stayed cut). A paragraph's last line, which may be as long, mostly ends a sentence, and a
heading is mostly shorter."""


def join_wrapped_lines(text: str) -> str:
    """`text` with each newline that wraps a line inside unspaced text removed (see the module docstring)."""
    if _MAY_WRAP.search(text) is None:
        return text
    lines = text.split("\n")
    widths = [_width(line) for line in lines]
    reference = _reference(widths)
    out = [lines[0]]
    for before, width, after in zip(lines, widths, lines[1:], strict=False):
        wrapped = (
            before
            and after
            and not before[-1].isspace()
            and (
                after[0] in _NO_LINE_START
                or (
                    before[-1] not in _ENDS_SENTENCE
                    and _ENDS_UNSPACED.search(before[-_LONGEST_RUN:]) is not None
                    and _STARTS_UNSPACED.match(after) is not None
                    and width >= FULL_SHARE * reference
                )
            )
        )
        if wrapped:
            out[-1] += after
        else:
            out.append(after)
    return "\n".join(out)


class _Cells(dict[str, int]):
    """Each character's width in half-width cells (2 full-width or wide, else 1), asked of `unicodedata` once per
    character: the widths of the peers bench's lines (5.7 million characters, half of them Chinese) took 0.41 s
    asked character by character, 0.14 s looked up so."""

    def __missing__(self, ch: str) -> int:
        cells = 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        self[ch] = cells
        return cells


_CELLS = _Cells()


def _width(line: str) -> int:
    """The line's width in half-width cells (a full-width or wide character is two)."""
    if line.isascii():
        return len(line)
    return sum(map(_CELLS.__getitem__, line))


def _reference(widths: list[int]) -> int:
    """The width of the page's long lines: the 90th percentile (a single overlong line, a URL or a table
    row, does not set it; a page of a heading and one line of text takes the line's)."""
    ordered = sorted(w for w in widths if w)
    if not ordered:
        return 0
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]
