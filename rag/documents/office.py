"""Word, PowerPoint and Excel files -> pages: sections under headings, slides, sheets.

python-docx, python-pptx and openpyxl (xlrd for .xls) rather than markitdown 0.1.9, measured on
the test files of tests/docgen.py: markitdown dropped the Word header, footer and comment and the
Excel cell comment, gave the Word table an empty header row, ran two slide tables into one line
("| Q2 | 3.4 || Region |"), and took 454/64/78 ms for the .docx/.pptx/.xlsx against our 23/18/9
ms. The object models also give the locations that citations need (heading path, slide number,
sheet name), where markitdown leaves `<!-- Slide number: 3 -->` comments in the text. Read, besides
body text: tables (as Markdown rows), text boxes, headers and footers, comments, speaker notes and
chart titles.
Images are never read (no base64 reaches a chunk); their alternative text (Word's and PowerPoint's
"descr", what a screen reader says) is, at its place, as a line "[Picture: ...]" ("[Drawing: ...]" for a
chart or shape): in markitdown's test deck a picture's alt text is the only mention of what it shows.

Imported only when such a file is loaded.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from typing import Any

from rag.documents.model import Page
from rag.documents.sections import SectionBuilder, cell_text, markdown_table

logger = logging.getLogger("rag.documents")

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_WP_DOC_PR = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}docPr"
_PIC = "{http://schemas.openxmlformats.org/drawingml/2006/picture}pic"
_P_PIC = "{http://schemas.openxmlformats.org/presentationml/2006/main}pic"
_P_C_NV_PR = "{http://schemas.openxmlformats.org/presentationml/2006/main}cNvPr"
_IMAGE_FILE_NAME = re.compile(r"^[^\\/:]*\.(?:png|jpe?g|gif|bmp|tiff?|emf|wmf|svg|webp)$", re.IGNORECASE)
"""An "alt text" that is only the picture's file name, as python-pptx writes by default ('image.png'): no
description."""
MAX_ENTITY_CHARS = 1 << 20
"""The most text a .docx's own entity declarations may expand to (a real one declares none; libxml2 refuses
a billion-laughs expansion before this is reached)."""
_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)
READ_ONLY_BYTES = 10 * 1024 * 1024
"""Above this an .xlsx is read in openpyxl's streaming mode (memory stays flat; comments and
merged cells are then not read)."""


# -- Word -------------------------------------------------------------------------------------------


class _StyleLevels:
    """The heading level of each paragraph style (None: body text), worked out once per document.

    `paragraph.style` looked the style up through python-docx's styles part on every paragraph: 1.9 ms a
    paragraph (20,000 paragraphs of a 94 KB file read in 37.8 s on the test machine, 220,000 still loading
    after 300 s); a dict from the style ids read once takes it to 1.2 s (issue 33)."""

    def __init__(self, styles) -> None:  # noqa: ANN001 (python-docx types stay out of signatures)
        self._by_id: dict[str, Any] = {}
        default: str | None = None
        for style in styles.iterchildren(f"{_W}style"):
            if style.get(f"{_W}type", "paragraph") != "paragraph" or not style.get(f"{_W}styleId"):
                continue
            self._by_id[style.get(f"{_W}styleId")] = style
            if style.get(f"{_W}default") in ("1", "true", "on") and default is None:
                default = style.get(f"{_W}styleId")
        self._levels: dict[str | None, int | None] = {}
        self._default = default

    def level(self, style_id: str | None) -> int | None:
        """The level of the paragraph style `style_id` (a paragraph without one, or with an unknown one,
        has the document's default paragraph style, as Word and python-docx take it)."""
        if style_id not in self._levels:
            key = style_id if style_id in self._by_id else self._default
            self._levels[style_id] = self._resolve(key, set())
        return self._levels[style_id]

    def _resolve(self, style_id: str | None, seen: set[str]) -> int | None:
        if style_id is None or style_id not in self._by_id or style_id in seen:
            return None
        seen.add(style_id)
        style = self._by_id[style_id]
        name_element = style.find(f"{_W}name")
        name = (name_element.get(f"{_W}val", "") if name_element is not None else "").strip()
        if name.lower() == "title":
            return 0
        match = _HEADING_STYLE.match(name)
        if match:
            return int(match.group(1))
        outline = _outline_level(style.find(f"{_W}pPr/{_W}outlineLvl"))
        if outline is not None:
            return outline or None
        # A style based on a heading is a heading of that level (Word inherits the outline level).
        based = style.find(f"{_W}basedOn")
        return self._resolve(based.get(f"{_W}val"), seen) if based is not None else None


def _outline_level(element) -> int | None:  # noqa: ANN001
    """An `outlineLvl` as a heading level: 1-9; 0 for "body text" (its value 9); None: none given."""
    if element is None or not element.get(f"{_W}val", "").isdigit():
        return None
    level = int(element.get(f"{_W}val")) + 1
    return level if level <= 9 else 0


def _heading_level(paragraph, styles: _StyleLevels) -> int | None:  # noqa: ANN001
    level = styles.level(paragraph._p.style)
    if level is not None:
        return level
    # A paragraph with an outline level is a heading whatever its style is called.
    return _outline_level(paragraph._p.find(f"{_W}pPr/{_W}outlineLvl")) or None


def _in_fallback(element) -> bool:  # noqa: ANN001
    parent = element.getparent()
    while parent is not None:
        if parent.tag == _MC_FALLBACK:
            return True
        parent = parent.getparent()
    return False


def alt_text_line(description: str | None, picture: bool) -> str:
    """A picture's (or drawing's) alternative text as a line of the document's text; '' when it has none.
    The marker is English whatever the document's language: it is part of the text, never translated."""
    text = " ".join((description or "").split())
    if not text or _IMAGE_FILE_NAME.match(text):
        return ""
    return f"[{'Picture' if picture else 'Drawing'}: {text}]"


def _docx_alt_texts(element) -> Iterator[str]:  # noqa: ANN001
    """The alternative text of the pictures and drawings anchored in a paragraph (`wp:docPr descr`), the
    VML fallback of a drawing skipped as for text boxes."""
    for properties in element.iter(_WP_DOC_PR):
        if _in_fallback(properties):
            continue
        anchor = properties.getparent()
        picture = anchor is not None and next(anchor.iter(_PIC), None) is not None
        line = alt_text_line(properties.get("descr"), picture)
        if line:
            yield line


def _expand_entities(root) -> None:  # noqa: ANN001
    """Put the text of the document's own (internal) entities in place of their references.

    python-docx parses without resolving entities (no XXE), and lxml then keeps `&name;` as a node whose
    following text is its tail, which python-docx's text skips: "Hello &co; world" read as "Hello ". An
    external entity is never fetched: it stays `&name;`."""
    from lxml import etree

    references = list(root.iter(etree.Entity))
    if not references:
        return
    dtd = root.getroottree().docinfo.internalDTD
    declared = {e.name: e.content for e in dtd.iterentities() if e.content is not None} if dtd is not None else {}
    budget = [MAX_ENTITY_CHARS]

    def expanded(name: str, depth: int) -> str:
        content = declared.get(name)
        if content is None or depth > 8 or budget[0] <= 0:
            return f"&{name};"
        out = re.sub(r"&([\w.:-]+);", lambda m: expanded(m.group(1), depth + 1), content)[: budget[0]]
        budget[0] -= len(out)
        return out

    for node in references:
        parent = node.getparent()
        if parent is None:
            continue
        text = expanded(node.name, 0) + (node.tail or "")
        previous = node.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + text
        else:
            parent.text = (parent.text or "") + text
        parent.remove(node)


def _text_boxes(element) -> Iterator[str]:  # noqa: ANN001
    """The text of the text boxes anchored in a paragraph (a DrawingML box is written twice: once
    for new readers, once as the VML fallback; the fallback is skipped)."""
    for box in element.iter(f"{_W}txbxContent"):
        if not _in_fallback(box):
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
    _expand_entities(document.element)
    styles = _StyleLevels(document.styles.element)
    builder = SectionBuilder()
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            builder.text(_docx_table(block))
            continue
        level = _heading_level(block, styles)
        if level is not None and block.text.strip():
            builder.heading(level, block.text)
        else:
            builder.text(block.text)
        for box in _text_boxes(block._p):
            builder.text(box)
        for line in _docx_alt_texts(block._p):
            builder.text(line)

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
        properties = shape._element[0].find(_P_C_NV_PR) if len(shape._element) else None
        if properties is not None:
            line = alt_text_line(properties.get("descr"), shape._element.tag == _P_PIC)
            if line:
                yield line
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
                # The sheet's name heads its text, as a Word heading does its section's: a question naming
                # the sheet ("what is in the 2023 sales sheet?") finds it (its title alone is not searched).
                pages.append(Page(number, "\n\n".join([sheet.title, *parts]), title=sheet.title))
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


class _LogLines:
    """A file for xlrd's messages that writes them to the debug log."""

    def write(self, text: str) -> int:
        if text.strip():
            logger.debug("xlrd: %s", text.strip())
        return len(text)

    def flush(self) -> None:
        return None


def read_xls(data: bytes) -> tuple[list[Page], int]:
    import xlrd

    # xlrd prints its warnings ("WARNING *** file size (1234) not 512 + multiple of sector size") to stdout,
    # into `rag ingest`'s output: they go to the log instead.
    book = xlrd.open_workbook(file_contents=data, on_demand=True, logfile=_LogLines())
    try:
        pages: list[Page] = []
        for number in range(1, book.nsheets + 1):
            sheet = book.sheet_by_index(number - 1)
            table = markdown_table(sheet.row_values(r) for r in range(sheet.nrows))
            if table:
                pages.append(Page(number, f"{sheet.name}\n\n{table}", title=sheet.name))
        return pages, book.nsheets
    finally:
        book.release_resources()
