"""A document cut into sentence-aligned windows, and N of them spread evenly over it: the passages
questions are generated from.

The windows tile the whole document, so that the same windows serve as the corpus of the genericity
check (rag.tuning.checks): a question is kept only if its own window is clearly the best BM25 match
among all of them, not only among the sampled ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.generate.sentences import sentence_spans
from rag.generate.support import content_terms
from rag.scripts import CJK

WINDOW_CHARS = 400
"""A window grows by whole sentences until it holds this many characters: ~100 tokens of English or
~250 of Chinese for Qwen2.5, whose prompt evaluation (~40 tokens/s on 2 cores) is most of a
question's time; a passage this long still holds several facts to ask about."""
MAX_WINDOW_CHARS = 800
"""A sentence longer than this (a table row run together, text without full stops) is cut at a space."""
MIN_WINDOW_CHARS = 120
"""A shorter window (a document's last lines, a heading alone) is never sampled."""
MIN_CONTENT_TERMS = 8
"""A sampled window has at least this many content terms (rag.generate.support.content_terms: English
word stems, numbers, Chinese bigrams): a list of page numbers or a signature line has fewer."""
MIN_LETTER_SHARE = 0.6
"""Share of letters (Latin or CJK) among a sampled window's non-space characters: tables of figures and
tables of contents have less."""

_BOILERPLATE = re.compile(
    r"\.{4,}|…{2,}|·{4,}|copyright|all rights reserved|isbn|table of contents|版权所有|目\s*录",
    re.IGNORECASE,
)
_LETTER = re.compile(f"[A-Za-z{CJK}]|[^\\W\\d_]")


@dataclass(frozen=True)
class Window:
    """A sentence-aligned stretch of the document: `text[start:end]`, trimmed of outer whitespace."""

    index: int
    start: int
    end: int
    text: str


def windows(text: str, chars: int = WINDOW_CHARS) -> list[Window]:
    """The whole of `text` as consecutive windows of whole sentences (rag.generate.sentences), each
    grown until it holds `chars` characters; a sentence longer than `MAX_WINDOW_CHARS` is cut at spaces."""
    if chars < 1:
        raise ValueError(f"a window must hold at least 1 character, got {chars}")
    pieces: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        while end - start > max(MAX_WINDOW_CHARS, chars):
            cut = text.rfind(" ", start + chars, start + max(MAX_WINDOW_CHARS, chars))
            cut = cut if cut > start else start + chars
            pieces.append((start, cut))
            start = cut
        pieces.append((start, end))
    spans: list[tuple[int, int]] = []
    begin = None
    for start, end in pieces:
        begin = start if begin is None else begin
        if end - begin >= chars:
            spans.append((begin, end))
            begin = None
    if begin is not None:
        spans.append((begin, len(text)))
    out: list[Window] = []
    for start, end in spans:
        body = text[start:end]
        lo = start + (len(body) - len(body.lstrip()))
        hi = start + len(body.rstrip())
        if hi > lo:
            out.append(Window(len(out), lo, hi, text[lo:hi]))
    return out


def usable(window: Window) -> bool:
    """Whether a window is worth a question: long enough, mostly words, not boilerplate (see the limits above)."""
    body = window.text
    if len(body) < MIN_WINDOW_CHARS or _BOILERPLATE.search(body):
        return False
    visible = [ch for ch in body if not ch.isspace()]
    letters = sum(1 for ch in visible if _LETTER.match(ch))
    if not visible or letters / len(visible) < MIN_LETTER_SHARE:
        return False
    return len(content_terms(body)) >= MIN_CONTENT_TERMS


def spread(tiles: list[Window], n: int) -> list[Window]:
    """`n` usable windows spread evenly over the document: the middle one of each of `n` equal stretches
    of windows, or the usable one nearest to it in that stretch; fewer when the document has fewer."""
    if n < 1:
        raise ValueError(f"ask for at least 1 passage, got {n}")
    count = len(tiles)
    if count <= n:
        return [w for w in tiles if usable(w)]
    chosen: list[Window] = []
    for i in range(n):
        lo, hi = i * count // n, (i + 1) * count // n
        middle = (lo + hi) // 2
        by_distance = sorted(range(lo, hi), key=lambda j: (abs(j - middle), j))
        found = next((tiles[j] for j in by_distance if usable(tiles[j])), None)
        if found is not None:
            chosen.append(found)
    return chosen
