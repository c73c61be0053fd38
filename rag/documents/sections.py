"""Text with headings -> sections titled by their heading path, and tables -> Markdown rows.

A Word file or a web page has no pages, so each heading starts a `Page` (a section) whose title
is the path of headings above it ('Report › Results › Q3'): a chunk's citation then says where
it is. A table becomes a Markdown table, one row a line, so a row's cells stay together in one
chunk and the splitters can cut between rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rag.documents.model import HEADING_JOIN, Page

MAX_HEADING_CHARS = 120


def cell_text(value: object) -> str:
    """A cell as one line of a Markdown table: no line breaks, no bare pipes."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    text = " ".join(str(value).split())
    return text.replace("|", "\\|")


_VALUE = re.compile(r"[(+\-−]?[$€£¥￥]?\s?\d[\d,.\s]*%?\)?")
"""A cell that is a number, an amount or a share ("$24,750.00", "12.5 %", "(3)"): data, not a column's name."""
_YEAR = re.compile(r"(?:1[89]|2[01])\d\d")
"""A year, which names a column as often as it fills one ("Region | 2023 | 2024")."""


def is_header(row: Sequence[str]) -> bool:
    """Whether a table's first row names its columns: not when a cell of it is a value other than a year. A
    price list without a header row had its first item's cells shown as the column names, and the claim check
    read every other row under them ("SKU-1003 ... Pump Z3" from the first row's model beside the third's SKU)."""
    return not any(_VALUE.fullmatch(cell) and not _YEAR.fullmatch(cell) for cell in row)


def markdown_table(rows: Iterable[Sequence[object]]) -> str:
    """Rows of cells as a Markdown table: the first non-empty row as the header where it names the columns
    (`is_header`), else an empty header above all the rows; empty rows and empty trailing columns are
    dropped. '' when no row holds text."""
    cleaned = [[cell_text(v) for v in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return ""
    width = max(max((i + 1 for i, v in enumerate(row) if v), default=0) for row in cleaned)
    lines = []
    if not is_header(cleaned[0]):
        lines += ["|" + " |" * width, "|" + "---|" * width]
    for row in cleaned:
        cells = (row + [""] * width)[:width]
        lines.append("| " + " | ".join(cells) + " |")
        if len(lines) == 1:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)


class SectionBuilder:
    """Collects blocks of text under headings; `pages()` gives one Page per section with text."""

    def __init__(self) -> None:
        self._path: list[tuple[int, str]] = []
        self._sections: list[tuple[str, list[str]]] = [("", [])]

    def heading(self, level: int, text: str) -> None:
        text = " ".join(text.split())[:MAX_HEADING_CHARS]
        if not text:
            return
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        self._path.append((level, text))
        self._sections.append((HEADING_JOIN.join(t for _, t in self._path), [text]))

    def text(self, block: str) -> None:
        block = block.strip()
        if block:
            self._sections[-1][1].append(block)

    def pages(self) -> list[Page]:
        out: list[Page] = []
        carried: list[str] = []
        for title, blocks in self._sections:
            # A heading with nothing under it goes into the next section's text instead of being a
            # page of one line (its title already names it).
            if len(blocks) == 1 and title and blocks[0] == title.rsplit(HEADING_JOIN, 1)[-1]:
                carried.extend(blocks)
                continue
            if blocks:
                out.append(Page(len(out) + 1, "\n\n".join(carried + blocks), title=title))
                carried = []
        if carried:
            out.append(Page(len(out) + 1, "\n\n".join(carried), title=self._sections[-1][0]))
        return out


def markdown_sections(markdown: str) -> list[Page]:
    """Markdown (as trafilatura writes a web page) cut into sections at its '#' headings."""
    builder = SectionBuilder()
    block: list[str] = []

    def flush() -> None:
        if block:
            builder.text("\n".join(block))
            block.clear()

    for line in markdown.splitlines():
        stripped = line.strip()
        hashes = len(stripped) - len(stripped.lstrip("#"))
        if 1 <= hashes <= 6 and stripped[hashes : hashes + 1] == " ":
            flush()
            builder.heading(hashes, stripped[hashes:].strip())
        elif not stripped:
            flush()
        else:
            block.append(line.rstrip())
    flush()
    return builder.pages()


def tables_in(text: str) -> list[str]:
    """The Markdown tables in a page's text (runs of lines starting with '|' and holding a
    '|---|' rule), to show them as tables."""
    found: list[str] = []
    run: list[str] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            run.append(line)
            continue
        if len(run) >= 2 and run[1].replace(" ", "").startswith("|---"):
            found.append("\n".join(run))
        run = []
    return found
