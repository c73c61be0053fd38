"""A document as pages of text: the one shape every format is loaded into.

`text` joins the pages with `PAGE_SEPARATOR`; chunk offsets point into it and `pages_for_span`
maps them back to page numbers.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

PAGE_SEPARATOR = "\n\n"
KIND_LABELS = {"pdf": "PDF", "epub": "EPUB", "xps": "XPS", "txt": "TXT", "md": "MD", "docx": "Word",
               "pptx": "PowerPoint", "xlsx": "Excel", "xls": "Excel 97-2003", "csv": "CSV", "html": "HTML",
               "htm": "HTML"}
"""How each `Document.kind` is named in messages."""

UNITS = {"pptx": "slide", "xlsx": "sheet", "xls": "sheet", "docx": "section", "html": "section",
         "htm": "section", "csv": "table"}
"""What a `Page` of each kind is (the rest: a page). A Word file or a web page has no pages: each
heading starts a section, whose title is the heading path."""

HEADING_JOIN = " › "

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
    dropped_pages: tuple[int, ...]  # numbers of pages that had no text (scanned?)
    warnings: tuple[str, ...] = ()  # one-line, user-facing
    reader: str = ""
    """What read the file ('MuPDF', 'python-docx', 'MuPDF + Tesseract OCR', ...)."""

    @property
    def unit(self) -> str:
        return UNITS.get(self.kind, "page")

    @property
    def ocr_pages(self) -> tuple[Page, ...]:
        return tuple(page for page in self.pages if page.ocr is not None)

    def chunk_extras(self, numbers: tuple[int, ...]) -> dict[str, object]:
        """What a chunk on pages `numbers` adds to its row's metadata: its `location` (not for PDF
        pages: `pages` says it), and `ocr: true` with the lowest confidence where OCR read it."""
        extras: dict[str, object] = {}
        if self.unit != "page":
            where = self.location(numbers)
            if where:
                extras["location"] = where
        confidences = [p.ocr for p in self.pages if p.number in numbers and p.ocr is not None]
        if confidences:
            extras["ocr"] = True
            extras["ocr_confidence"] = round(min(confidences), 1)
        return extras

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
