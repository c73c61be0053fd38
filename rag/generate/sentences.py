"""Sentences of an answer or a passage, split where a reader would split them.

The citation checks judge an answer sentence by sentence and the packer cuts a passage at sentence
ends, so a full stop inside "i.e.", "e.g.", "Fig. 3", "et al." or "3.5" must not end a sentence
(the old splitter turned "(i.e., ...)" into "(i [3].e., ...)"). Chinese sentences end at 。！？ (and
their closing quotes); a line break ends one too (list items). A citation marker written right after
the full stop ("... two years. [1]") belongs to the sentence before it.
"""

from __future__ import annotations

import re

from rag.scripts import CJK

# Words that end with a full stop without ending the sentence (lower case, without the stop).
ABBREVIATIONS = frozenset(
    {
        "e.g",
        "i.e",
        "etc",
        "al",
        "fig",
        "figs",
        "eq",
        "eqs",
        "sec",
        "ch",
        "vol",
        "vols",
        "p",
        "pp",
        "cf",
        "vs",
        "approx",
        "dept",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "st",
        "jr",
        "sr",
        "inc",
        "ltd",
        "co",
        "corp",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "ref",
        "refs",
        "ed",
        "eds",
        "tab",
        "ca",
        "resp",
        "u.s",
        "u.k",
        "ph.d",
        "a.m",
        "p.m",
    }
)
NUMBERED = frozenset({"no", "nos"})
"""Abbreviations only before a number ("No. 5"); "No." before a word ends a sentence."""
_END = re.compile(r"[.!?。！？]+|\n")
CLAUSE_MARK = re.compile(r"[，,；;：:。！？!?\n]")
"""What ends a clause: a comma, semicolon or colon, a sentence's end, a line's."""
CLOSERS = "\"'”’」』）)]"
"""Closing quotes and brackets that may follow a sentence's end."""
# [1], [1, 2], and the full-width 【1】 that Chinese answers often use; group 1 holds the numbers.
MARKER_PATTERN = r"[\[【]\s*(\d+(?:\s*[,，、]\s*\d+)*)\s*[\]】]"
MARKER = re.compile(MARKER_PATTERN)
"""A citation marker (rag.generate.citations reads its numbers; support drops it from the words)."""
_MARKERS_AFTER = re.compile(f"(?:[ \\t]*{MARKER_PATTERN})+")
_CJK_CHAR = re.compile(f"[{CJK}]")


def _ends_here(text: str, start: int, end: int) -> bool:
    """Whether the terminator text[start:end] ends a sentence."""
    mark = text[start:end]
    if mark == "\n" and start and text[start - 1] == "." and not _ends_here(text, start - 1, start):
        return not text[end : end + 1].isalpha()  # "architect O.\nReynolds" (a PDF's line) goes on; "etc.\n- item" ends
    if mark == "\n" or any(c in "!?。！？" for c in mark):
        return True
    after = text[end : end + 1]
    if after and not (after.isspace() or after in CLOSERS or _CJK_CHAR.match(after) or MARKER.match(text, end)):
        return False  # "3.5", "e.g.,", "example.com" (but "years.[1]" and "年。然后" end)
    word = re.search(r"[^\s(\[{\"'“‘]*$", text[:start]).group().lower()  # type: ignore[union-attr]
    if mark == "." and (word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())):
        return False  # "et al.", "Fig.", "J. Smith"
    if mark == "." and word in NUMBERED:
        return not text[end:].lstrip()[:1].isdigit()  # "No. 5" goes on, "No. The warranty…" ends
    return True


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, covering the text (whitespace between sentences goes with the next)."""
    spans: list[tuple[int, int]] = []
    start = 0
    inside = [(m.start(), m.end()) for m in MARKER.finditer(text)]  # "[1,\n2]" is one marker
    for match in _END.finditer(text):
        if match.end() <= start or any(a < match.start() < b for a, b in inside):
            continue
        if not _ends_here(text, match.start(), match.end()):
            continue
        end = match.end()
        while end < len(text) and text[end] in CLOSERS:
            end += 1
        marker = _MARKERS_AFTER.match(text, end)
        if marker:
            end = marker.end()
        if text[start:end].strip():
            spans.append((start, end))
            start = end
    if text[start:].strip():
        spans.append((start, len(text)))
    elif spans:
        spans[-1] = (spans[-1][0], len(text))
    return spans
