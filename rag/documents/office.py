"""Word, PowerPoint and Excel files -> pages: sections under headings, slides, sheets.

python-docx, python-pptx and openpyxl (xlrd for .xls) rather than markitdown 0.1.9, measured on
the test files of tests/docgen.py: markitdown dropped the Word header, footer and comment and the
Excel cell comment, gave the Word table an empty header row, ran two slide tables into one line
("| Q2 | 3.4 || Region |"), and took 454/64/78 ms for the .docx/.pptx/.xlsx against our 23/18/9
ms. The object models also give the locations that citations need (heading path, slide number,
sheet name), where markitdown leaves `<!-- Slide number: 3 -->` comments in the text. Read, besides
body text: tables (as Markdown rows), text boxes, headers and footers, comments, speaker notes and
chart titles.
Images are never read (no base64 reaches a chunk).

Imported only when such a file is loaded.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator

from rag.documents.model import Page
from rag.documents.sections import SectionBuilder, cell_text, markdown_table

logger = logging.getLogger("rag.documents")

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)
READ_ONLY_BYTES = 10 * 1024 * 1024
"""Above this an .xlsx is read in openpyxl's streaming mode (memory stays flat; comments and
merged cells are then not read)."""


# -- Word -------------------------------------------------------------------------------------------


def _heading_level(paragraph) -> int | None:  # noqa: ANN001 (python-docx types stay out of signatures)
    style = paragraph.style.name if paragraph.style is not None else ""
    if style == "Title":
        return 0
    match = _HEADING_STYLE.match(style.strip())
    if match:
        return int(match.group(1))
    # A paragraph with an outline level is a heading whatever its style is called.
    outline = paragraph._p.find(f"{_W}pPr/{_W}outlineLvl")
    if outline is not None and outline.get(f"{_W}val", "").isdigit():
        level = int(outline.get(f"{_W}val")) + 1
        return level if level <= 9 else None
    return None


def _text_boxes(element) -> Iterator[str]:  # noqa: ANN001
    """The text of the text boxes anchored in a paragraph (a DrawingML box is written twice: once
    for new readers, once as the VML fallback; the fallback is skipped)."""
    for box in element.iter(f"{_W}txbxContent"):
        parent = box.getparent()
        skip = False
        while parent is not None:
            if parent.tag == _MC_FALLBACK:
                skip = True
                break
            parent = parent.getparent()
        if not skip:
            text = "\n".join("".join(t.text or "" for t in p.iter(f"{_W}t")) for p in box.iter(f"{_W}p"))
            if text.strip():
                yield text.strip()


def _docx_table(table) -> str:  # noqa: ANN001
    rows = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # A merged cell comes back once per grid column it spans: keep it once.
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(cell.text)
        rows.append(cells)
    return markdown_table(rows)


def read_docx(data: bytes) -> list[Page]:
    import docx
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    builder = SectionBuilder()
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            builder.text(_docx_table(block))
            continue
        level = _heading_level(block)
        if level is not None and block.text.strip():
            builder.heading(level, block.text)
        else:
            builder.text(block.text)
        for box in _text_boxes(block._p):
            builder.text(box)

    extra = SectionBuilder()
    seen: set[str] = set()
    margins: list[str] = []
    for section in document.sections:
        for part in (
            section.header,
            section.first_page_header,
            section.even_page_header,
            section.footer,
            section.first_page_footer,
            section.even_page_footer,
        ):
            if part.is_linked_to_previous:
                continue
            for item in part.iter_inner_content():
                text = _docx_table(item) if isinstance(item, Table) else item.text.strip()
                if text and text not in seen:
                    seen.add(text)
                    margins.append(text)
    if margins:
        extra.heading(1, "Headers and footers")
        extra.text("\n".join(margins))
    comments = [f"{c.author or 'Comment'}: {c.text.strip()}" for c in document.comments if c.text.strip()]
    if comments:
        extra.heading(1, "Comments")
        extra.text("\n".join(comments))
    pages = builder.pages()
    for page in extra.pages():
        pages.append(Page(len(pages) + 1, page.text, title=page.title))
    return pages


# -- PowerPoint -------------------------------------------------------------------------------------


def _shape_texts(shapes) -> Iterator[str]:  # noqa: ANN001
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    # Top to bottom, then left to right: the order a reader takes a slide in.
    def position(shape) -> tuple[int, int]:  # noqa: ANN001
        return (shape.top or 0, shape.left or 0)

    for shape in sorted(shapes, key=position):
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shape_texts(shape.shapes)
            continue
        if shape.has_text_frame and shape.text_frame.text.strip():
            yield shape.text_frame.text.strip()
        if getattr(shape, "has_table", False) and shape.has_table:
            rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
            table = markdown_table(rows)
            if table:
                yield table
        if getattr(shape, "has_chart", False) and shape.has_chart:
            chart = shape.chart
            if chart.has_title and chart.chart_title.has_text_frame:
                title = chart.chart_title.text_frame.text.strip()
                if title:
                    yield f"Chart: {title}"


def read_pptx(data: bytes) -> tuple[list[Page], int]:
    """One page per slide with text (its number is the slide's); and how many slides there are."""
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    pages: list[Page] = []
    slides = list(deck.slides)
    for number, slide in enumerate(slides, start=1):
        title_shape = slide.shapes.title
        title = (
            " ".join(title_shape.text_frame.text.split())
            if title_shape is not None and title_shape.has_text_frame
            else ""
        )
        parts = list(_shape_texts(slide.shapes))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                parts.append("Notes: " + notes.text.strip())
        if parts:
            pages.append(Page(number, "\n\n".join(parts), title=title))
    return pages, len(slides)


# -- Excel ------------------------------------------------------------------------------------------


def read_xlsx(data: bytes) -> tuple[list[Page], int]:
    """One page per sheet with values (as a Markdown table, its title the sheet's name); and how
    many sheets there are. Formulas are read as their last computed values."""
    import openpyxl

    streaming = len(data) > READ_ONLY_BYTES
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=streaming, data_only=True)
    try:
        pages: list[Page] = []
        sheets = book.worksheets
        for number, sheet in enumerate(sheets, start=1):
            rows = list(sheet.iter_rows(values_only=True))
            parts = []
            table = markdown_table(rows)
            if table:
                parts.append(table)
            if not streaming:
                comments = [
                    f"{cell.coordinate}: {cell_text(cell.comment.text)}"
                    for row in sheet.iter_rows()
                    for cell in row
                    if cell.comment is not None
                ]
                if comments:
                    parts.append("Comments:\n" + "\n".join(comments))
                for chart in getattr(sheet, "_charts", []):
                    title = _chart_title(chart)
                    if title:
                        parts.append(f"Chart: {title}")
            if parts:
                pages.append(Page(number, "\n\n".join(parts), title=sheet.title))
        return pages, len(sheets)
    finally:
        book.close()


def _chart_title(chart) -> str:  # noqa: ANN001
    title = getattr(chart, "title", None)
    if title is None:
        return ""
    if isinstance(title, str):
        return title.strip()
    try:
        runs = [r.t for p in title.tx.rich.p for r in (p.r or [])]
    except AttributeError:
        return ""
    return "".join(runs).strip()


def read_xls(data: bytes) -> tuple[list[Page], int]:
    import xlrd

    book = xlrd.open_workbook(file_contents=data, on_demand=True)
    try:
        pages: list[Page] = []
        for number in range(1, book.nsheets + 1):
            sheet = book.sheet_by_index(number - 1)
            table = markdown_table(sheet.row_values(r) for r in range(sheet.nrows))
            if table:
                pages.append(Page(number, table, title=sheet.name))
        return pages, book.nsheets
    finally:
        book.release_resources()
