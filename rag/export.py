"""A knowledge base's chunks as CSV (for spreadsheets) and JSONL (lossless, for tools).

Both formats come as generators of byte blocks (`iter_chunks_csv`, `iter_chunks_jsonl`) so a
large knowledge base can be streamed from `Store.iter_chunks` without holding every row, and
as plain `bytes` (`chunks_csv`, `chunks_jsonl`) for a download button.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rows are only read here; the store (psycopg) is the caller's
    from rag.store import Hit

CSV_COLUMNS: tuple[str, ...] = (
    "id",
    "knowledge",
    "original_filename",
    "pages",
    "chunk_index",
    "tokens",
    "content",
)
# Excel reads a CSV as the ANSI code page unless it starts with a UTF-8 BOM; with the BOM,
# Chinese (and every other non-Latin) text opens correctly by double-click.
UTF8_BOM = b"\xef\xbb\xbf"
_BLOCK_ROWS = 200


def _pages(hit: Hit) -> str:
    # "1, 2" rather than "1,2": Excel in some locales would read the latter as the number 1.2.
    return ", ".join(str(p) for p in hit.pages)


# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection: a PDF's text
# "=HYPERLINK(...)" would become a live link). The CSV is for spreadsheets, so such text cells get a
# leading apostrophe, which spreadsheets show as plain text; JSONL keeps the text exactly.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(value: str) -> str:
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def _csv_row(hit: Hit) -> list[Any]:
    meta = hit.metadata or {}
    return [
        str(hit.id),
        spreadsheet_text(hit.knowledge),
        spreadsheet_text(hit.original_filename),
        _pages(hit),
        "" if meta.get("chunk_index") is None else meta["chunk_index"],
        "" if meta.get("tokens") is None else meta["tokens"],
        spreadsheet_text(hit.content),
    ]


def iter_chunks_csv(hits: Iterable[Hit]) -> Iterator[bytes]:
    """BOM + header, then the rows in blocks; text is kept verbatim (newlines are quoted) except
    that a cell that would start a formula gets a leading apostrophe."""
    buffer = io.StringIO()
    # "\r\n" is what RFC 4180 and Excel expect between records.
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    yield UTF8_BOM + buffer.getvalue().encode("utf-8")
    buffer.seek(0)
    buffer.truncate()
    pending = 0
    for hit in hits:
        writer.writerow(_csv_row(hit))
        pending += 1
        if pending >= _BLOCK_ROWS:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
            pending = 0
    if pending:
        yield buffer.getvalue().encode("utf-8")


def chunks_csv(hits: Iterable[Hit]) -> bytes:
    """Columns id, knowledge, original_filename, pages, chunk_index, tokens, content; UTF-8 with BOM."""
    return b"".join(iter_chunks_csv(hits))


def jsonl_record(hit: Hit) -> dict[str, Any]:
    return {"id": str(hit.id), "content": hit.content, "metadata": hit.metadata or {}}


# Characters that str.splitlines() (and some editors) treat as line breaks but JSON leaves raw
# with ensure_ascii=False; escaped, every record stays on exactly one line for any reader.
_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def _one_line_json(record: dict[str, Any]) -> str:
    # default=str: metadata written by other tools may hold values JSON lacks (dates, UUIDs).
    text = json.dumps(record, ensure_ascii=False, default=str)
    for raw, escaped in _LINE_BREAKS.items():
        if raw in text:
            text = text.replace(raw, escaped)
    return text


def iter_chunks_jsonl(hits: Iterable[Hit]) -> Iterator[bytes]:
    """One JSON object per line ({"id", "content", "metadata"}), UTF-8 with non-ASCII text as is."""
    lines: list[str] = []
    for hit in hits:
        lines.append(_one_line_json(jsonl_record(hit)))
        if len(lines) >= _BLOCK_ROWS:
            yield ("\n".join(lines) + "\n").encode("utf-8")
            lines = []
    if lines:
        yield ("\n".join(lines) + "\n").encode("utf-8")


def chunks_jsonl(hits: Iterable[Hit]) -> bytes:
    return b"".join(iter_chunks_jsonl(hits))


def file_stem(name: str) -> str:
    """A knowledge base's name as the stem of a download's filename (letters, digits, - _ . kept)."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name).strip("._")
    return safe or "knowledge-base"
