"""PDF, EPUB and XPS through MuPDF: the text of every page, or one plain reason why not.

Imported only when such a file is loaded: pymupdf takes a while to import, and the CLI's
`--help` and `chunk` of plain text do not need it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import pymupdf

from rag.documents import ocr
from rag.documents.model import KIND_LABELS, Progress, page_label
from rag.documents.sections import markdown_table
from rag.errors import DocumentError
from rag.text import Text

logger = logging.getLogger("rag.documents")

_MAX_CAUSE_CHARS = 160
SCANNED_CHARS = 20
"""A page with fewer characters of text than this and an image on it is read by OCR (a scan often
carries a page number or a stamp as text)."""
IMAGE_SHARE = 0.3
"""...and its images cover at least this share of the page."""


@dataclass(frozen=True)
class RawPage:
    text: str
    ocr: float | None = None


@dataclass(frozen=True)
class Extracted:
    pages: list[RawPage]
    warnings: tuple[str, ...]
    reader: str
    scanned: int = 0
    """Pages that were scanned images (read by OCR when an engine is installed)."""


def _image_share(page: pymupdf.Page) -> float:
    area = abs(page.rect) or 1.0
    covered = 0.0
    for info in page.get_image_info():
        covered += abs(pymupdf.Rect(info["bbox"]) & page.rect)
    return min(covered / area, 1.0)


COLUMN_GAP = 12.0
"""Points between two words on one line that make them two columns (justified prose: 3-6)."""
CELL_SHARE = 0.3
"""A table cell's text is narrower than this share of the page on average."""


def _table_hints(page: pymupdf.Page, textpage: pymupdf.TextPage | None = None) -> tuple[bool, bool]:
    """Whether the page may hold a ruled table (at least 4 drawn lines or boxes) and an unruled one
    (3 lines whose words fall into cells: pieces a column gap apart, on average narrower than
    `CELL_SHARE` of the page; two-column prose has gaps too, but its pieces are half the page wide).
    The table finder costs 250-400 ms a page even where there is nothing (1-2 ms for these looks):
    a 50-page book took 24 s instead of 0.05 s, a two-column paper 390 ms a page before the width test."""
    ruled = sum(1 for path in page.get_cdrawings() for item in path.get("items", ()) if item[0] in ("l", "re")) >= 4
    rows: dict[int, list[tuple[float, float]]] = {}
    for x0, _y0, x1, y1, *_ in page.get_text("words", textpage=textpage):
        rows.setdefault(round(y1), []).append((x0, x1))
    widest = CELL_SHARE * page.rect.width
    cell_rows = 0
    for spans in rows.values():
        spans.sort()
        pieces: list[list[float]] = [[spans[0][0], spans[0][1]]]
        for x0, x1 in spans[1:]:
            if x0 - pieces[-1][1] > COLUMN_GAP:
                pieces.append([x0, x1])
            else:
                pieces[-1][1] = x1
        if len(pieces) >= 2 and sum(b - a for a, b in pieces) / len(pieces) < widest:
            cell_rows += 1
    return ruled, cell_rows >= 3


def _table_markdown(page: pymupdf.Page, table) -> str:  # noqa: ANN001 - pymupdf.table.Table
    """A table's rows as Markdown, each cell's text read from the page inside the cell: Table.extract()
    and the header of to_markdown() scrambled characters written one by one ("$4200000 , ." for
    "$42,000.00"), the page's own text within the cell's box does not."""
    rows = []
    for row in table.rows:
        rows.append(
            [" ".join(page.get_text("text", clip=pymupdf.Rect(cell)).split()) if cell else "" for cell in row.cells]
        )
    return markdown_table(rows)


def _with_tables(page: pymupdf.Page, text: str, textpage: pymupdf.TextPage | None = None) -> tuple[str, int]:
    """The page's text with each table written as Markdown rows (a row's cells on one line), and
    how many tables there were; the text is unchanged on a page without tables. Ruled tables are
    found by their lines; a page without any is searched for unruled ones by text alignment
    (no false table on 20 prose pages of the English eval set; an unruled 7-row price list found)."""
    ruled, aligned = _table_hints(page, textpage)
    if not (ruled or aligned):
        return text, 0
    try:
        found = (page.find_tables(strategy="lines").tables if ruled else []) or (
            page.find_tables(strategy="text").tables if aligned else []
        )
        tables = [
            (pymupdf.Rect(t.bbox), _table_markdown(page, t)) for t in found if t.row_count >= 2 and t.col_count >= 2
        ]
    except Exception:  # the table finder is heuristic: a page it chokes on keeps its plain text
        logger.debug("table finder failed on page %d", page.number + 1, exc_info=True)
        return text, 0
    tables = [(box, md) for box, md in tables if md]
    if not tables:
        return text, 0
    items: list[tuple[float, float, str]] = []
    for x0, y0, x1, y1, block_text, _no, kind in page.get_text("blocks"):
        if kind != 0:
            continue
        middle = pymupdf.Point((x0 + x1) / 2, (y0 + y1) / 2)
        if any(middle in box for box, _ in tables):
            continue
        items.append((y0, x0, block_text.rstrip()))
    items.extend((box.y0, box.x0, md) for box, md in tables)
    items.sort(key=lambda item: (round(item[0], 1), item[1]))
    return "\n\n".join(t for _, _, t in items if t.strip()) + "\n", len(tables)


def _ocr_page(page: pymupdf.Page, prefer: str | None) -> tuple[RawPage, str]:
    pixmap = page.get_pixmap(dpi=ocr.DPI, colorspace=pymupdf.csGRAY)
    read = ocr.read_image(pixmap.tobytes("png"), prefer)
    return RawPage(read.text, round(read.confidence, 1)), read.language


TEXT_PER_BYTE = 100
"""Characters of text a file may yield per byte of itself (beyond MIN_TEXT_LIMIT): text streams deflate
3-10x, so more means pages that repeat one content stream (a 38 KB PDF whose 15 pages share one
stream asked for 57 GiB further down the pipeline)."""
MIN_TEXT_LIMIT = 10_000_000


def text_limit(size: int) -> int:
    """The most characters a file of `size` bytes may yield."""
    return max(MIN_TEXT_LIMIT, TEXT_PER_BYTE * size)


def extract_pages(data: bytes, filename: str, kind: str, progress: Progress | None = None) -> Extracted:
    label = KIND_LABELS[kind]
    page_number = 0
    tell = progress or (lambda done, total, what: None)
    ocr_wanted = 0
    language: str | None = None  # the OCR language of the page before
    in_ocr = False
    tables = 0
    extracted, limit = 0, text_limit(len(data))
    try:
        with pymupdf.open(stream=data, filetype=kind) as doc:
            if doc.needs_pass:
                raise DocumentError(
                    filename, Text("password-protected {kind}: remove the password and try again", kind=label)
                )
            if doc.page_count == 0:
                raise DocumentError(filename, Text("corrupt or unreadable {kind}: it has no pages", kind=label))
            pages: list[RawPage] = []
            total = doc.page_count
            for page_number in range(1, total + 1):
                page = doc.load_page(page_number - 1)
                textpage = page.get_textpage()  # read once: the text and the table hints' words share it
                text = page.get_text("text", textpage=textpage)
                if len(text.strip()) < SCANNED_CHARS and _image_share(page) >= IMAGE_SHARE:
                    ocr_wanted += 1
                    if ocr.available():
                        tell(
                            page_number - 1, total, Text("OCR of page {page} of {total}", page=page_number, total=total)
                        )
                        in_ocr = True
                        raw, language = _ocr_page(page, language)
                        pages.append(raw)
                        in_ocr = False
                        tell(page_number, total, Text("OCR of page {page} of {total}", page=page_number, total=total))
                        continue
                elif kind == "pdf":
                    text, found = _with_tables(page, text, textpage)
                    tables += found
                pages.append(RawPage(text))
                extracted += len(text)
                if extracted > limit:
                    raise DocumentError(
                        filename,
                        Text(
                            "its text ({chars} million characters by page {page}) is absurdly larger than the file "
                            "({size} KB): the pages repeat one content stream (a crafted or broken {kind}); refused",
                            chars=f"{extracted / 1e6:,.0f}",
                            page=page_number,
                            size=f"{len(data) / 1024:,.0f}",
                            kind=label,
                        ),
                    )
                tell(page_number, total, Text("page {page} of {total}", page=page_number, total=total))
            # Read after extraction: MuPDF also repairs lazily, when a page refers to an
            # object that the xref places wrongly.
            repaired = doc.is_repaired
    except DocumentError:
        raise
    except Exception as exc:  # pymupdf raises FileDataError, FzError*, ValueError, RuntimeError...
        if not in_ocr:
            raise _unreadable(filename, label, page_number, exc) from None
        logger.debug("OCR failed on %r page %d", filename, page_number, exc_info=True)
        raise DocumentError(
            filename, Text("OCR of page {page} failed: {cause}", page=page_number, cause=_short_cause(exc))
        ) from None
    warnings: list[str] = []
    if repaired:
        # info, not warning: the user already sees it in Document.warnings.
        logger.info("MuPDF repaired %r while reading it", filename)
        warnings.append(Text("MuPDF repaired a damaged xref; some text may be missing or out of order"))
    unmapped = unmapped_pages(pages)
    if unmapped:
        warnings.append(
            Text(
                "Some characters on pages {pages} could not be extracted: the {kind}'s fonts give them no Unicode "
                "mapping, so they are kept as � or private-use codes and a search for them finds nothing. "
                "A copy saved with Unicode fonts, or OCR of the pages, may read them.",
                pages=page_label(unmapped),
                kind=label,
            )
            if len(unmapped) > 1
            else Text(
                "Some characters on page {pages} could not be extracted: the {kind}'s fonts give them no Unicode "
                "mapping, so they are kept as � or private-use codes and a search for them finds nothing. "
                "A copy saved with Unicode fonts, or OCR of the page, may read them.",
                pages=page_label(unmapped),
                kind=label,
            )
        )
    read_by_ocr = sum(1 for p in pages if p.ocr is not None)
    if ocr_wanted and not read_by_ocr:
        warnings.append(
            Text(
                "{n} pages are scanned images and no OCR engine is installed: {hint}.",
                n=ocr_wanted,
                hint=ocr.ENABLE_HINT,
            )
            if ocr_wanted > 1
            else Text(
                "{n} page is scanned images and no OCR engine is installed: {hint}.", n=ocr_wanted, hint=ocr.ENABLE_HINT
            )
        )
    return Extracted(pages, tuple(warnings), _reader(read_by_ocr, tables), ocr_wanted)


UNMAPPED = re.compile("[\ufffd\ue000-\uf8ff\U000f0000-\U0010ffff]")
"""What MuPDF puts for a glyph its font maps to no Unicode character: U+FFFD (no ToUnicode map, no
known glyph name) or a private-use code (a symbol font's own codes, such as Symbol's U+F0B6 for ∂)."""


def unmapped_pages(pages: list[RawPage]) -> list[int]:
    """The numbers of the pages whose extracted text (not OCR's) holds a glyph with no Unicode mapping."""
    return [n for n, page in enumerate(pages, start=1) if page.ocr is None and UNMAPPED.search(page.text)]


def _reader(read_by_ocr: int, tables: int) -> str:
    """'MuPDF', 'MuPDF + Tesseract eng OCR on 2 pages', 'MuPDF (1 table as rows)'."""
    if not (read_by_ocr or tables):
        return "MuPDF"
    by_ocr = (
        ""
        if not read_by_ocr
        else Text(" + {engine} OCR on {n} pages", engine=ocr.engine_name(), n=read_by_ocr)
        if read_by_ocr > 1
        else Text(" + {engine} OCR on {n} page", engine=ocr.engine_name(), n=read_by_ocr)
    )
    as_rows = (
        ""
        if not tables
        else Text(" ({n} tables as rows)", n=tables)
        if tables > 1
        else Text(" ({n} table as rows)", n=tables)
    )
    return Text("MuPDF{ocr}{tables}", ocr=by_ocr, tables=as_rows)


def _unreadable(filename: str, label: str, page_number: int, exc: BaseException) -> DocumentError:
    logger.debug("MuPDF failed on %r (%s)", filename, f"page {page_number}" if page_number else "open", exc_info=True)
    if page_number:
        return DocumentError(
            filename,
            Text(
                "corrupt or unreadable {kind}: page {page}: {cause}",
                kind=label,
                page=page_number,
                cause=_short_cause(exc),
            ),
        )
    return DocumentError(filename, Text("corrupt or unreadable {kind}: {cause}", kind=label, cause=_short_cause(exc)))


def _short_cause(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    cause = lines[0] if lines else exc.__class__.__name__
    # MuPDF's C errors arrive as "code=2: cannot ..."; the code means nothing to a user.
    if cause.startswith("code=") and ": " in cause:
        cause = cause.split(": ", 1)[1]
    cause = cause[:1].lower() + cause[1:]
    if len(cause) > _MAX_CAUSE_CHARS:
        cause = cause[: _MAX_CAUSE_CHARS - 1] + "…"
    return cause
