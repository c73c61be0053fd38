"""Plain values as the short strings the pages show (no Streamlit calls, no domain rules)."""

from __future__ import annotations

import re

_MARKDOWN_SPECIALS = "\\`*_[]<>#|~$"


def md(text: str) -> str:
    """Escape Markdown so user text and file names (`q3_*final*.pdf`) are shown as typed."""
    out = text
    for ch in _MARKDOWN_SPECIALS:
        out = out.replace(ch, "\\" + ch)
    return out


def md_lines(text: str) -> str:
    """`md(text)` with its line breaks kept: a chunk's text shown as stored (Markdown joins single lines, so a
    table's rows read as one run-on line in a source card, a walk found)."""
    lines = [md(line) if line.strip() else "" for line in text.split("\n")]
    # A hard break (two spaces) between two lines with text; an empty line is a paragraph break already (and
    # st.markdown empties a line of spaces).
    return "\n".join(
        f"{line}  " if line and following else line for line, following in zip(lines, [*lines[1:], ""], strict=True)
    )


def size(n: float) -> str:
    """Bytes as '812 bytes', '1.5 KB', '3.2 MB', in decimal units as Streamlit's file uploader counts them: a file
    listed as 2.6MB there was "2.5 MB" (MiB) beside it."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)  # pragma: no cover


def plural(count: int, noun: str) -> str:
    """'1 page', '3 pages', '10,001 chunks' (grouped by thousands, as the app's other counts)."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def first_words(text: str, words: int = 12, chars: int = 90) -> str:
    """The start of a text for a table cell, with '…' when there is more."""
    head = " ".join(text.split()[:words])
    if len(head) > chars:
        head = head[: chars - 1].rstrip()
    return head + ("…" if len(head) < len(" ".join(text.split())) else "")


def first_line(text: str | None, limit: int = 140, empty: str = "no description") -> str:
    """The first non-blank line of a description, cut to `limit` characters."""
    stripped = (text or "").strip()
    line = stripped.splitlines()[0] if stripped else empty
    return line if len(line) <= limit else line[: limit - 1] + "…"


def clip(text: str, limit: int = 600) -> str:
    """A long text cut after `limit` characters, marked with ' …'."""
    return text if len(text) <= limit else text[:limit] + " …"


def no_images(text: str) -> str:
    """Markdown that loads no picture by itself: `![alt](http://...)` written by a model (or planted in a
    document it quotes) would make the browser fetch that URL as the page renders; escaped, it shows as
    text. Links stay links: they load only when clicked."""
    return text.replace("![", "!\\[")


def no_math(text: str) -> str:
    """Markdown in which `$` is a dollar: Streamlit reads the text between two of them as LaTeX, so an
    answer quoting "$5 and $6" would show "5 and" as a formula. (A model writes prices, not LaTeX.)"""
    return text.replace("$", "\\$")


_CELL_BORDER = re.compile(r"(?<!\\)\|")
"""A '|' between cells: one not escaped as '\\|' (rag.documents.sections.cell_text escapes a cell's own)."""


def table_cells(table: str) -> tuple[list[str], list[list[str]]]:
    """A Markdown table (as `rag.documents.tables_in` finds them) as (column names, rows of cells), to show
    as data rather than as Markdown: a document's cell `![](http://host/x)` shown as Markdown makes the browser
    fetch that URL as soon as the table is drawn (issue 33), and its links and `$...$` would be live too.
    Column names are made unique ('Total (2)'; a blank one is its number); every row is cut or padded to the
    header's width."""
    lines = table.splitlines()
    if not lines:
        return [], []
    header, *rows = (_cells(line) for n, line in enumerate(lines) if n != 1 or not _is_rule(line))
    names: list[str] = []
    for n, name in enumerate(header, start=1):
        unique, again = name or f"({n})", 1
        while unique in names:
            again += 1
            unique = f"{name or n} ({again})"
        names.append(unique)
    width = len(names)
    return names, [(row + [""] * width)[:width] for row in rows]


def _cells(line: str) -> list[str]:
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [cell.strip().replace("\\|", "|") for cell in _CELL_BORDER.split(line)]


def _is_rule(line: str) -> bool:
    return set(line.replace(" ", "")) <= set("|-:") and "-" in line
