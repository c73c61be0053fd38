"""Text as the retrieval check compares it (NFKC, case-folded, whitespace folded, no space beside a
character written without spaces), with a map back to the offsets of the original, so that a passage
found in folded text has a source span."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from rag.scripts import UNSPACED

_DROP = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff")


class _Fold(dict[int, str]):
    """str.translate table built on demand: whitespace -> space, case-folded NFKC, invisibles dropped."""

    def __missing__(self, codepoint: int) -> str:
        ch = chr(codepoint)
        if ch.isspace():
            out = " "
        elif ch in _DROP:
            out = ""
        elif codepoint < 128:
            out = ch.lower()
        else:
            out = unicodedata.normalize("NFKC", ch).casefold()
        self[codepoint] = out
        return out


_FOLD = _Fold()
_BESIDE_LAYOUT_SPACE = f"[{UNSPACED}]|[^\\w\\s]"
_UNSPACED_OR_MARK = re.compile(_BESIDE_LAYOUT_SPACE)
_LAYOUT_SPACE = re.compile(f" (?={_BESIDE_LAYOUT_SPACE})|(?<={_BESIDE_LAYOUT_SPACE}) ")
"""A space with a Chinese or Japanese character or a punctuation mark on either side: a layout's (a PDF's
wrapped line read as "盛大游 戏", Spring's splitter turning newlines into spaces; NFKC has made "，" a ","
by then), not the text's, which the user copied without it; 9 of 10 passages copied from a Chinese PDF were
not found before."""


def normalise(text: str) -> str:
    """Text as compared by the retrieval check: NFKC, case-folded, whitespace runs -> one space, none
    beside a character written without spaces (`UNSPACED`) or a punctuation mark."""
    return _LAYOUT_SPACE.sub("", " ".join(text.translate(_FOLD).split()))


def _layout_spaces(codes: np.ndarray) -> np.ndarray:
    """For each of `codes` (spaces never two in a row, none first or last): whether it is a space with a
    character of `UNSPACED` or a punctuation mark before or after it."""
    present, index = np.unique(codes, return_inverse=True)
    unspaced = np.array([_UNSPACED_OR_MARK.match(chr(c)) is not None for c in present.tolist()], dtype=bool)[index]
    beside = np.zeros(len(codes), dtype=bool)
    beside[1:-1] = unspaced[:-2] | unspaced[2:]
    beside &= codes == 32
    return beside


@dataclass(frozen=True)
class NormalisedText:
    """`normalise(source)` and, for each of its characters, the offset in `source` it came from."""

    text: str
    origin: np.ndarray
    source_length: int

    @classmethod
    def of(cls, source: str) -> NormalisedText:
        folded = source.translate(_FOLD)
        n = len(source)
        if len(folded) == n:
            origin = np.arange(n, dtype=np.int64)
        else:
            # Some characters expand (ligatures) or vanish (soft hyphens): repeat each offset
            # as many times as its character's folded form is long.
            codes = np.frombuffer(source.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            present = np.flatnonzero(np.bincount(codes))
            table = np.zeros(int(present[-1]) + 1, dtype=np.int64)
            table[present] = [len(_FOLD[int(c)]) for c in present]
            origin = np.repeat(np.arange(n, dtype=np.int64), table[codes])
        folded_codes = np.frombuffer(folded.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        space = folded_codes == 32
        keep = ~space
        keep[1:] |= space[1:] & ~space[:-1]  # the first space of every run
        kept = np.flatnonzero(keep)
        if len(kept) and space[kept[0]]:
            kept = kept[1:]
        if len(kept) and space[kept[-1]]:
            kept = kept[:-1]
        kept = kept[~_layout_spaces(folded_codes[kept])]
        text = folded_codes[kept].tobytes().decode("utf-32-le", "surrogatepass")
        return cls(text, origin[kept], n)

    def find_all(self, needle: str, limit: int = 200) -> list[tuple[int, int]]:
        """Spans in the source text of each occurrence of an already normalised `needle`."""
        spans: list[tuple[int, int]] = []
        if not needle:
            return spans
        at = self.text.find(needle)
        while at >= 0 and len(spans) < limit:
            start = int(self.origin[at])
            end = int(self.origin[at + len(needle) - 1]) + 1
            spans.append((start, min(end, self.source_length)))
            at = self.text.find(needle, at + 1)
        return spans


def excerpt(text: str, passage: str, context: int = 200) -> str:
    """The part of `text` around `passage` (matched as by the retrieval check), with `context`
    characters either side; the start of `text` when the passage is not in it whole."""
    spans = NormalisedText.of(text).find_all(normalise(passage), limit=1)
    start, end = spans[0] if spans else (0, 0)
    lo, hi = max(0, start - context), min(len(text), end + context) if spans else min(len(text), 2 * context)
    body = text[lo:hi]
    body = body.lstrip() if lo else body
    body = body.rstrip() if hi < len(text) else body
    return ("… " if lo else "") + body + (" …" if hi < len(text) else "")
