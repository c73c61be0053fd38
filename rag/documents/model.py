"""A document as pages of text: the one shape every format is loaded into.

`text` joins the pages with `PAGE_SEPARATOR`; chunk offsets point into it and `pages_for_span`
maps them back to page numbers, and for a TXT/MD file `span_location` to its nearest heading and the
file's lines.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.documents.headings import Outline

PAGE_SEPARATOR = "\n\n"
KIND_LABELS = {
    "pdf": "PDF",
    "epub": "EPUB",
    "xps": "XPS",
    "txt": "TXT",
    "md": "MD",
    "docx": "Word",
    "pptx": "PowerPoint",
    "xlsx": "Excel",
    "xls": "Excel 97-2003",
    "csv": "CSV",
    "html": "HTML",
    "htm": "HTML",
}
"""How each `Document.kind` is named in messages."""

UNITS = {
    "pptx": "slide",
    "xlsx": "sheet",
    "xls": "sheet",
    "docx": "section",
    "html": "section",
    "htm": "section",
    "csv": "table",
}
"""What a `Page` of each kind is (the rest: a page). A Word file or a web page has no pages: each
heading starts a section, whose title is the heading path."""


def unit_of(filename: str) -> str:
    """What the parts of a file of this name are read as ('page', 'section', 'slide', 'sheet', 'table')."""
    return UNITS.get(filename.rsplit(".", 1)[-1].lower() if "." in filename else "", "page")


HEADING_JOIN = " › "

LINE_KINDS = ("txt", "md")
"""Kinds whose chunks are cited by their heading and lines ('第二回 … · lines 120–164'): a text file's
pages are its form-feed-separated parts, mostly one, and 'p. 1' says nothing."""
_NEWLINE_MARK = 1 << 12
"""`text` characters between two saved newline counts: a line number then counts at most 4096
characters (~2 µs), and the counts of a 200 MB text take 390 KB."""
_NON_BLANK = re.compile(r"\S")

Progress = Callable[[int, int, str], None]
"""(pages done, pages in all, what is being done): scanned pages take seconds each."""


@dataclass(frozen=True)
class Page:
    number: int  # 1-based page (slide, sheet, section) number in the source file
    text: str
    title: str = ""
    """Where this page is for people: a sheet's name, a section's heading path ('Report › Results'),
    a slide's title; empty for PDF pages."""
    ocr: float | None = None
    """The OCR engine's mean word confidence (0-100) when the text was read from an image."""


@dataclass(frozen=True)
class Document:
    filename: str  # the name as given (basename), used in every message
    kind: str  # "pdf" | "epub" | "xps" | "txt" | "md"
    pages: tuple[Page, ...]  # only pages with text, in order
    page_count: int  # pages in the source, including dropped empty ones
    dropped_pages: tuple[int, ...]  # pages that had no text (scanned?): PDF, EPUB, XPS; a TXT has none
    warnings: tuple[str, ...] = ()  # one-line, user-facing
    reader: str = ""
    """What read the file ('MuPDF', 'python-docx', 'MuPDF + Tesseract OCR', ...)."""
    first_lines: tuple[int, ...] = ()
    """TXT/MD: the 1-based line of the file each page starts on, so that a location counts the file's
    lines and not `text`'s (the form feeds, the separators and the blank ends of pages cut off differ).
    Empty: `text`'s own lines are counted."""

    @property
    def unit(self) -> str:
        return UNITS.get(self.kind, "page")

    @property
    def ocr_pages(self) -> tuple[Page, ...]:
        return tuple(page for page in self.pages if page.ocr is not None)

    @property
    def by_lines(self) -> bool:
        """Whether a chunk's location is its heading and lines (TXT, MD) rather than its pages."""
        return self.kind in LINE_KINDS

    def chunk_extras(
        self, numbers: tuple[int, ...], start: int | None = None, end: int | None = None
    ) -> dict[str, object]:
        """What a chunk on pages `numbers` (at [start, end) of `text`) adds to its row's metadata: its
        `location` (not for PDF pages: `pages` says it; for TXT/MD from its span), and `ocr: true` with
        the lowest confidence where OCR read it."""
        extras: dict[str, object] = {}
        if self.by_lines:
            if start is not None and end is not None:
                extras["location"] = self.span_location(start, end)
        elif self.unit != "page":
            where = self.location(numbers)
            if where:
                extras["location"] = where
        confidences = [p.ocr for p in self.pages if p.number in numbers and p.ocr is not None]
        if confidences:
            extras["ocr"] = True
            extras["ocr_confidence"] = round(min(confidences), 1)
        return extras

    def chunk_location(self, numbers: tuple[int, ...] | list[int], start: int, end: int) -> str:
        """Where a chunk on pages `numbers`, at [start, end) of `text`, is, as its citation says it:
        `span_location` for TXT/MD, `location(numbers)` for the rest."""
        return self.span_location(start, end) if self.by_lines else self.location(numbers)

    def location(self, numbers: tuple[int, ...] | list[int]) -> str:
        """Where pages `numbers` are, as a citation says it: 'p. 4', 'pp. 2–5', 'slide 3', 'sheet
        Sales', 'Report › Results' (the first section's heading path); '' when there is nothing to
        say (a section before any heading, a CSV file)."""
        ordered = sorted(numbers)
        if not ordered:
            return ""
        unit = self.unit
        if unit == "page":
            return f"p{'p' if len(ordered) > 1 else ''}. {page_label(ordered)}"
        if unit == "slide":
            return f"slide{'s' if len(ordered) > 1 else ''} {page_label(ordered)}"
        titles = {page.number: page.title for page in self.pages}
        if unit == "sheet":
            names = [titles.get(n, "") for n in ordered]
            return f"sheet{'s' if len(names) > 1 else ''} " + ", ".join(names)
        return titles.get(ordered[0], "")

    # cached_property writes straight into __dict__, so it works on a frozen dataclass and
    # keeps the (possibly huge) text out of repr/eq.
    @cached_property
    def text(self) -> str:
        return PAGE_SEPARATOR.join(page.text for page in self.pages)

    @cached_property
    def page_starts(self) -> tuple[int, ...]:
        starts: list[int] = []
        offset = 0
        for page in self.pages:
            starts.append(offset)
            offset += len(page.text) + len(PAGE_SEPARATOR)
        return tuple(starts)

    @cached_property
    def outline(self) -> Outline:
        """The headings of `text` (TXT/MD; rag.documents.headings), found once."""
        from rag.documents.headings import Outline  # it imports this module

        return Outline.of(self.text, markdown=self.kind == "md")

    @cached_property
    def _newline_marks(self) -> array[int]:
        """The newlines in `text` before every `_NEWLINE_MARK`th character."""
        text = self.text
        marks = array("q", [0])
        for at in range(0, len(text), _NEWLINE_MARK):
            marks.append(marks[-1] + text.count("\n", at, at + _NEWLINE_MARK))
        return marks

    def _newlines_before(self, offset: int) -> int:
        mark = offset // _NEWLINE_MARK
        return self._newline_marks[mark] + self.text.count("\n", mark * _NEWLINE_MARK, offset)

    def line_at(self, offset: int) -> int:
        """The 1-based line of the file that character `offset` of `text` is on (on a separator between
        pages: the last line of the page before)."""
        if not 0 <= offset <= len(self.text):
            raise ValueError(f"offset {offset} is outside the text (length {len(self.text)})")
        if not self.first_lines:
            return 1 + self._newlines_before(offset)
        index = max(bisect.bisect_right(self.page_starts, offset) - 1, 0)
        page_start = self.page_starts[index]
        offset = min(offset, page_start + max(len(self.pages[index].text) - 1, 0))
        return self.first_lines[index] + self._newlines_before(offset) - self._newlines_before(page_start)

    def span_location(self, start: int, end: int) -> str:
        """Where [start, end) of `text` is, as a citation of a TXT/MD chunk says it: the heading at or
        before its first non-blank character and the file lines from there to its last one:
        '第二回 贾夫人仙逝扬州城 冷子兴演说荣国府 · lines 120–164', 'Guide › Install · line 7',
        'lines 1–30' before any heading.

        The headings are found once per document (a 200 MB text: about a second, see
        rag.documents.headings.find_headings) and each span then costs bisections and counts of at most
        `_NEWLINE_MARK` characters: ~20 µs, 1.2-1.6 s for the 67,000 chunks of a 200 MB text."""
        text = self.text
        if not 0 <= start <= end <= len(text):
            raise ValueError(f"span [{start}, {end}) is outside the text (length {len(text)})")
        first = _NON_BLANK.search(text, start, end)
        last = start
        if first is not None:
            start, last = first.start(), end - 1
            while text[last].isspace():  # it stops at `start` at the latest, which is not blank
                last -= 1
        heading = self.outline.at(start)
        top, bottom = self.line_at(start), self.line_at(last)
        lines = f"line {top}" if top == bottom else f"lines {top}–{bottom}"
        return f"{heading} · {lines}" if heading else lines

    def page_parts(self, start: int, end: int) -> list[tuple[int, str]]:
        """The part of [start, end) of `text` on each page it overlaps: (page number, its text), in order (a
        chunk's pages, each with what the chunk holds of it)."""
        parts: list[tuple[int, str]] = []
        for page, base in zip(self.pages, self.page_starts):
            lo, hi = max(start, base), min(end, base + len(page.text))
            if lo < hi:
                parts.append((page.number, page.text[lo - base : hi - base]))
        return parts

    def pages_for_span(self, start: int, end: int) -> tuple[int, ...]:
        """Page numbers whose text overlaps [start, end) of `text`.

        A span lying only on a separator maps to the page before it, and an empty span to
        the page it sits in, so every chunk gets at least one page.
        """
        if not 0 <= start <= end <= len(self.text):
            raise ValueError(f"span [{start}, {end}) is outside the text (length {len(self.text)})")
        starts = self.page_starts
        if not starts:
            return ()
        first = bisect.bisect_right(starts, start) - 1
        last = first if end == start else bisect.bisect_right(starts, end - 1) - 1
        # A span starting on the separator after `first` does not touch that page's text,
        # unless the separator is all it covers.
        if first < last and start >= starts[first] + len(self.pages[first].text):
            first += 1
        return tuple(page.number for page in self.pages[first : last + 1])


def page_label(numbers: tuple[int, ...] | list[int]) -> str:
    """Page (or chunk) numbers as '4', '2–5' when consecutive, else '1, 3, 7'."""
    ordered = sorted(numbers)
    if not ordered:
        return ""
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        return str(ordered[0]) if len(ordered) == 1 else f"{ordered[0]}–{ordered[-1]}"
    return ", ".join(str(p) for p in ordered)
