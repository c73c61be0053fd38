"""PDF, EPUB and XPS through MuPDF: the text of every page, or one plain reason why not.

Imported only when such a file is loaded: pymupdf takes a while to import, and the CLI's
`--help` and `chunk` of plain text do not need it.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import re
import sys
import threading
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter

import numpy as np
import pymupdf

from rag.documents import ocr
from rag.documents.model import KIND_LABELS, Progress, page_label
from rag.documents.sections import markdown_table
from rag.documents.wraps import join_wrapped_lines
from rag.errors import DocumentError
from rag.text import Text

logger = logging.getLogger("rag.documents")

pymupdf.no_recommend_layout()  # its table finder would print a suggestion to install what is here already
_layout_lock = threading.Lock()


def _layout_model() -> None:
    """Load pymupdf's layout analyser, kept from loading with pymupdf (rag.documents: 45 MB, 0.17 s), before
    a table search that uses it; once per process. Without it, a text-strategy search takes prose for a
    table (tests/documents/test_formats.py)."""
    with _layout_lock:
        if sys.modules.get("pymupdf.layout", pymupdf) is not None:  # loaded, or pymupdf's own attempt failed
            return
        del sys.modules["pymupdf.layout"]
        try:
            importlib.import_module("pymupdf.layout")  # activates the analyser
        except ImportError as exc:
            logger.warning("pymupdf's layout analyser did not load (%s): tables are found by lines alone", exc)


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
GRID_LINES = 3
"""Distinct horizontal and distinct vertical lines a ruled table has at least: 2 rows of 2 columns
(the smallest table kept); a frame around the page, a header rule and a column rule are fewer."""
GRID_WORDS = 2
"""Words inside a grid that make it a table candidate: a hatching, a brick pattern or a plot's grid
holds none (its labels are outside)."""
_SNAP = 3.0
"""Points by which a line may miss another and still meet it (the table finder's own tolerance)."""
_RULE = 2.0
"""A drawn line may slant, or a filled box be as thin as, this much and count as a rule."""
MIN_RULE = 3.0
"""Points a line is long at least to bound a cell (the table finder's `edge_min_length`)."""
MAX_CROSSINGS = 4_000_000
"""Horizontal times vertical lines beyond which the grids are not worked out (a map's hatching): the
whole page is then searched, with pymupdf's layout model, as before the grid test."""

Segment = tuple[float, float, float]
"""A horizontal line (y, x0, x1) or a vertical one (x, y0, y1)."""


_MAY_RULE = re.compile(rb"(?:re|l|h|Do)(?![^\s/\[(<%])")
"""The content-stream operators a ruled line can come from: a rectangle, a line, a path closed by a line, or
a form drawn from elsewhere (which may hold any of them), at the start of the stream or after a white space
(`_may_rule`). A match inside a string or an inline image only costs the look it would have cost anyway."""
_MAY_RULE_INSIDE = re.compile(rb"\s" + _MAY_RULE.pattern)


def _may_rule(contents: bytes) -> bool:
    """Whether `contents` (a page's content stream) may draw a line. Two searches: one regular expression that
    looked behind each byte for a white space took 0.11 ms for a page of text (11 KB of stream) against 0.03."""
    return bool(_MAY_RULE.match(contents) or _MAY_RULE_INSIDE.search(contents))


def _rules(page: pymupdf.Page) -> tuple[list[Segment], list[Segment]]:
    """The page's horizontal and vertical lines: drawn lines and the edges of drawn boxes (a box
    thinner than `_RULE` is one line, as LaTeX draws its rules)."""
    horizontal: list[Segment] = []
    vertical: list[Segment] = []
    # Listing the drawings runs the page's content through a device: 0.37 ms of a text page's 1.5 ms to read
    # (bench --only peers), where its content stream (0.035 ms to read) says there is no line to find.
    if not _may_rule(page.read_contents()):
        return horizontal, vertical
    for path in page.get_cdrawings():
        for item in path.get("items", ()):
            if item[0] == "l":
                (ax, ay), (bx, by) = item[1], item[2]
                if abs(by - ay) <= _RULE and abs(bx - ax) >= MIN_RULE:
                    horizontal.append(((ay + by) / 2, min(ax, bx), max(ax, bx)))
                elif abs(bx - ax) <= _RULE and abs(by - ay) >= MIN_RULE:
                    vertical.append(((ax + bx) / 2, min(ay, by), max(ay, by)))
            elif item[0] == "re":
                x0, y0, x1, y1 = pymupdf.Rect(item[1]).normalize()
                if y1 - y0 <= _RULE:
                    horizontal.append(((y0 + y1) / 2, x0, x1))
                elif x1 - x0 <= _RULE:
                    vertical.append(((x0 + x1) / 2, y0, y1))
                else:
                    horizontal += [(y0, x0, x1), (y1, x0, x1)]
                    vertical += [(x0, y0, y1), (x1, y0, y1)]
    return horizontal, vertical


def _grids(page: pymupdf.Page, words: np.ndarray, drawn: bool | None = None) -> list[pymupdf.Rect] | None:
    """Where the page may hold a ruled table: the boxes around the groups of crossing horizontal and
    vertical lines with at least `GRID_LINES` of each, distinct, and `GRID_WORDS` words (`words`: their
    boxes, x0 y0 x1 y1; counted by their centres) inside. A figure's axes, hatching or plot grid hold
    no words, a frame or a header rule too few lines: only real grids pay for the table finder. None:
    too many lines to tell (`MAX_CROSSINGS`). `drawn` False: the page draws nothing (`_Lines.drawn`)."""
    if drawn is False:
        return []
    horizontal, vertical = _rules(page)
    if len(horizontal) < GRID_LINES or len(vertical) < GRID_LINES:
        return []
    if len(horizontal) * len(vertical) > MAX_CROSSINGS:
        return None
    h = np.array(horizontal)
    v = np.array(vertical)
    crossing = (
        (v[None, :, 0] >= h[:, None, 1] - _SNAP)
        & (v[None, :, 0] <= h[:, None, 2] + _SNAP)
        & (h[:, None, 0] >= v[None, :, 1] - _SNAP)
        & (h[:, None, 0] <= v[None, :, 2] + _SNAP)
    )
    centres = np.column_stack(((words[:, 0] + words[:, 2]) / 2, (words[:, 1] + words[:, 3]) / 2))
    found: list[pymupdf.Rect] = []
    unseen = crossing.any(axis=1)
    while unseen.any():
        rows = np.zeros(len(h), dtype=bool)
        rows[int(np.argmax(unseen))] = True
        columns = np.zeros(len(v), dtype=bool)
        frontier = rows.copy()
        while frontier.any():  # the lines reachable from this one by crossings
            new_columns = crossing[frontier].any(axis=0) & ~columns
            columns |= new_columns
            frontier = crossing[:, new_columns].any(axis=1) & ~rows
            rows |= frontier
        unseen &= ~rows
        hs, vs = h[rows], v[columns]
        if len(np.unique(hs[:, 0].round())) < GRID_LINES or len(np.unique(vs[:, 0].round())) < GRID_LINES:
            continue
        box = pymupdf.Rect(vs[:, 0].min(), hs[:, 0].min(), vs[:, 0].max(), hs[:, 0].max())
        inside = (
            (centres[:, 0] > box.x0) & (centres[:, 0] < box.x1) & (centres[:, 1] > box.y0) & (centres[:, 1] < box.y1)
        )
        if int(inside.sum()) >= GRID_WORDS:
            found.append(box + (-_SNAP, -_SNAP, _SNAP, _SNAP))
    return found


def _table_hints(
    page: pymupdf.Page, textpage: pymupdf.TextPage | None = None, lines: _Lines | None = None
) -> tuple[list[pymupdf.Rect] | None, bool]:
    """Where the page may hold a ruled table (`_grids`) and whether it may hold an unruled one
    (3 lines whose words fall into cells: pieces a column gap apart, on average narrower than
    `CELL_SHARE` of the page; two-column prose has gaps too, but its pieces are half the page wide).
    The table finder costs 250-1000 ms a page even where there is nothing (pymupdf 2 runs its ONNX
    layout model first; 1-10 ms for these looks): a 50-page book took 24 s instead of 0.05 s, a
    two-column paper 390 ms a page before the width test, a 117-page geology text with a figure on
    every third page 25-40 s before the grid test (a header rule, a plot's axes or a hatching made
    it "ruled").

    The words' rows and pieces are worked out in numpy, and the grid's regular expression looks behind no byte:
    these looks took 0.54 ms a page against 0.42 (392 pages of real and generated PDFs, the same hints on each),
    0.2 ms of it the words themselves, on a text page read in ~1.5 ms in all (`bench --only peers`). They are
    looked at as MuPDF's lines where those hold the same pieces (`_line_boxes`; `lines`: the text page's, read
    already)."""
    if textpage is None:
        textpage = page.get_textpage()
    boxes = _line_boxes(textpage, lines)
    if boxes is None:
        words = page.get_text("words", textpage=textpage)
        count = 4 * len(words)
        boxes = np.fromiter(chain.from_iterable(map(_BOX, words)), dtype=np.float64, count=count).reshape(-1, 4)
    # Three rows of cells need three boxes that share a row with one before them: most pages' lines share none
    # (5,899 of the peers bench's 6,172 pages), told in 3 µs instead of the rows' ~80.
    bottoms = np.round(boxes[:, 3]).tolist()
    aligned = len(bottoms) - len(set(bottoms)) >= 3 and _cell_rows(boxes, CELL_SHARE * page.rect.width) >= 3
    return _grids(page, boxes, None if lines is None else lines.drawn), aligned


_BOX = itemgetter(0, 1, 2, 3)

_JSON_SCALE = 8
"""MuPDF's JSON gives coordinates as whole numbers of points times the scale it is given: eighths of a point."""
_JSON_STRING = rb'[^"\\]*(?:\\.[^"\\]*)*'
"""A JSON string's inside (its quotes and backslashes escaped), in the unrolled form Python's engine runs fast."""
_JSON_LINE = re.compile(
    rb'"wmode":(\d+),"bbox":\{"x":(-?\d+),"y":(-?\d+),"w":(-?\d+),"h":(-?\d+)(?:,"flags":\d+)?\},"font":\{[^}]*'
    rb'"size":(\d+)\},"x":-?\d+,"y":-?\d+,"text":"(' + _JSON_STRING + rb')"\}'
)
"""A line of the text page in MuPDF's JSON: its writing mode, box, font size and text (a block's box has no
writing mode; a line's text is a JSON string, whose quotes are escaped: it cannot look like a line; a font whose
name holds a brace leaves that line unmatched, and the page to get_text and the words: `_page_lines`)."""
LINE_GAP_SIZE = 15.0
"""MuPDF starts a new line at a gap wider than ~0.8 of the font size (measured: 9 pt text splits at 8 pt gaps,
16 pt text at 13, 20 pt text not at 16): up to this size, no line holds a gap of `COLUMN_GAP`."""
EDGE = 1.0
"""Points from the page's edge within which a line's text is taken from get_text (`_lines_text`)."""


@dataclass(frozen=True)
class _Lines:
    """A text page's lines as MuPDF's JSON gives them (`_page_lines`)."""

    numbers: np.ndarray
    """Each line's writing mode, x, y, width, height and font size (in eighths of a point), in the page's order."""
    texts: list[bytes]
    """Each line's text as the JSON escapes it."""
    spaced: bool
    """Whether two spaces follow each other somewhere (the JSON itself has no white space)."""
    drawn: bool | None = None
    """Whether the page draws anything (a line, a box, a filled shape): known (True or False) only from a text page
    made `_WITH_DRAWINGS`."""


_WITH_DRAWINGS = pymupdf.TEXT_COLLECT_VECTORS
"""The flags of a text page that also records what the page draws, as blocks of their own (no other flag: the
text is then as `get_textpage()`'s, where the page draws nothing). Where it draws nothing, its content stream is
not read again for the lines a ruled table needs (`_rules`: 0.50 of the peers bench's ~7 s of parsing, where 26
of 6,238 pages with real PDFs drew something, and every one of the 25 with lines did)."""
_DRAWING = b'"type":"vector"'


def _page_lines(textpage: pymupdf.TextPage, drawings: bool = False) -> _Lines | None:
    """The text page's lines from MuPDF's JSON of it, written in C (~0.11 ms a page of the peers bench); None where
    the pattern does not know every line (another MuPDF's format): the page's text and its hints are then read
    otherwise. `drawings`: the text page was made `_WITH_DRAWINGS` (the lines then say whether the page draws)."""
    buffer = pymupdf.mupdf.fz_new_buffer(16384)
    out = pymupdf.mupdf.FzOutput(buffer)
    pymupdf.mupdf.fz_print_stext_page_as_json(out, textpage.this, float(_JSON_SCALE))
    out.fz_close_output()
    data = buffer.fz_buffer_extract()
    found = _JSON_LINE.findall(data)
    if len(found) != data.count(b'"wmode":'):
        return None
    # Parsed by numpy from one string of them: 0.04 s against 0.08 for an int() each (2,528 of the peers' pages).
    numbers = np.fromstring(b" ".join(chain.from_iterable(line[:6] for line in found)), dtype=np.int64, sep=" ")
    numbers = numbers.reshape(-1, 6)
    return _Lines(numbers, [line[6] for line in found], b"  " in data, _DRAWING in data if drawings else None)


def _text_page(page: pymupdf.Page, kind: str) -> tuple[pymupdf.TextPage, _Lines | None]:
    """The page's text page, read once for its text and its table hints, and its lines (of a PDF). A PDF's is made
    `_WITH_DRAWINGS`; where the page draws something it is made again without (its drawings cut the text's
    blocks otherwise: 20 of those 26 pages read differently), and the lines say it draws."""
    if kind != "pdf":
        return page.get_textpage(), None
    textpage = page.get_textpage(flags=_WITH_DRAWINGS)
    lines = _page_lines(textpage, drawings=True)
    if lines is not None and lines.drawn is False:
        return textpage, lines
    textpage = page.get_textpage()
    plain = _page_lines(textpage)
    return textpage, None if plain is None else dataclasses.replace(plain, drawn=None if lines is None else True)


def _lines_text(lines: _Lines, page_box: pymupdf.Rect) -> str | None:
    """The page's text as `page.get_text()` gives it (each line's characters and a newline), from its lines: the
    text printed once, as JSON, for the lines' boxes and their text (get_text printed it again, 1.0 of the peers
    bench's 8 s of parsing: its pages' text and table hints 2.43 -> 2.07 s, all 6,172 the same text). None where
    get_text may differ: a line within `EDGE` of the page's edge (get_text drops the characters outside it) or
    written vertically."""
    x0, y0 = (page_box.x0 + EDGE) * _JSON_SCALE, (page_box.y0 + EDGE) * _JSON_SCALE
    x1, y1 = (page_box.x1 - EDGE) * _JSON_SCALE, (page_box.y1 - EDGE) * _JSON_SCALE
    n = lines.numbers
    if len(n) and (
        n[:, 0].any()
        or n[:, 1].min() < x0
        or n[:, 2].min() < y0
        or (n[:, 1] + n[:, 3]).max() > x1
        or (n[:, 2] + n[:, 4]).max() > y1
    ):
        return None
    joined = b"\n".join(filter(None, lines.texts))  # an empty line adds nothing, not even its newline
    try:
        if b"\\" not in joined:  # no escape: no line holds a newline of its own
            return (joined + b"\n").decode("utf-8") if joined else ""
        # Quotes in English prose are escaped: a quarter of that bench's pages. One array decoded, not a line each.
        parts = json.loads(b'["' + b'","'.join(raw for raw in lines.texts if raw) + b'"]')
    except ValueError:  # not UTF-8, or an escape JSON does not know: get_text's own way with it
        return None
    return "".join(text if text.endswith("\n") else text + "\n" for text in parts if text)


def _line_boxes(textpage: pymupdf.TextPage, lines: _Lines | None = None) -> np.ndarray | None:
    """The boxes (x0, y0, x1, y1) of the text page's lines (`lines`: read already), which hold the same pieces as
    its words (`_cell_rows`) where no line has a gap of `COLUMN_GAP` inside: where each is set in at most
    `LINE_GAP_SIZE` points and holds no two spaces in a row (columns aligned with spaces); else None (the words
    then). From MuPDF's JSON of the page: 0.42 s for the lines of 2,166 pages of the peers bench against 0.72 s for
    their words (~280 a page, ~50 lines), whose rows and pieces cost more too; the hints of its 6,172 pages 2.77 ->
    1.69 s (425 of them with two spaces: the words), the read-ahead worker's CPU 12.5-12.7 -> 12.1 s, the same hint
    on every page. None too where the pattern does not know that JSON's lines (`_page_lines`)."""
    if lines is None:
        lines = _page_lines(textpage)
    if lines is None or lines.spaced:
        return None
    if len(lines.numbers) and lines.numbers[:, 5].max() > LINE_GAP_SIZE * _JSON_SCALE:
        return None
    boxes = lines.numbers[:, 1:5] / _JSON_SCALE
    boxes[:, 2:] += boxes[:, :2]
    return boxes


def _cell_rows(boxes: np.ndarray, widest: float) -> int:
    """How many rows of words (`boxes`: x0, y0, x1, y1; a row is the words whose bottoms round to one point) fall
    into cells: two pieces or more (a piece: words less than `COLUMN_GAP` apart, each from the one before it in
    the row), on average narrower than `widest`."""
    if not len(boxes):
        return 0
    x0, x1, row = boxes[:, 0], boxes[:, 2], np.round(boxes[:, 3])
    order = np.lexsort((x1, x0, row))
    x0, x1, row = x0[order], x1[order], row[order]
    starts = np.ones(len(row), dtype=bool)
    starts[1:] = (row[1:] != row[:-1]) | (x0[1:] - x1[:-1] > COLUMN_GAP)
    first = np.flatnonzero(starts)
    last = np.append(first[1:], len(row)) - 1
    widths = x1[last] - x0[first]
    rows, piece_row = np.unique(row[first], return_inverse=True)
    pieces = np.bincount(piece_row, minlength=len(rows))
    total = np.bincount(piece_row, weights=widths, minlength=len(rows))
    return int(((pieces >= 2) & (total / pieces < widest)).sum())


def _ruled_tables(page: pymupdf.Page, grids: list[pymupdf.Rect] | None) -> list:
    """The tables pymupdf's finder sees by their lines within `grids` (None: on the whole page). Not
    with pymupdf 2's ONNX layout model, which took 1 s of the finder's 1.1 s on a page with a ruled
    table and found the same tables (the grid test is done: the lines cross and hold words); only
    within the grids, as the finder reads every character of what it searches (0.4 s for a dense
    page)."""
    if grids is None:  # too many lines to tell where: as before the grid test
        _layout_model()
        return page.find_tables(strategy="lines").tables
    clip = pymupdf.Rect(grids[0])
    for box in grids[1:]:
        clip |= box
    return page.find_tables(strategy="lines", clip=clip, use_layout=False).tables


def _table_rows(page: pymupdf.Page, table) -> list[list[str]]:  # noqa: ANN001 - pymupdf.table.Table
    """A table's rows of cell texts, each read from the page inside the cell: Table.extract() and the
    header of to_markdown() scrambled characters written one by one ("$4200000 , ." for "$42,000.00"),
    the page's own text within the cell's box does not."""
    rows = []
    for row in table.rows:
        rows.append(
            [" ".join(page.get_text("text", clip=pymupdf.Rect(cell)).split()) if cell else "" for cell in row.cells]
        )
    return rows


FILLED_SHARE = 0.5
"""Of a table found by its lines without the layout model, the share of cells holding text at least:
a plot's grid with a few labels inside is no table (3 of 100 cells; a real table fills most)."""


def _filled(rows: list[list[str]]) -> float:
    cells = [cell for row in rows for cell in row]
    return sum(1 for cell in cells if cell) / max(len(cells), 1)


def _with_tables(
    page: pymupdf.Page, text: str, textpage: pymupdf.TextPage | None = None, lines: _Lines | None = None
) -> tuple[str, int]:
    """The page's text with each table written as Markdown rows (a row's cells on one line), and
    how many tables there were; the text is unchanged on a page without tables. Ruled tables are
    found by their lines; a page without any is searched for unruled ones by text alignment
    (no false table on 20 prose pages of the English eval set; an unruled 7-row price list found)."""
    grids, aligned = _table_hints(page, textpage, lines)
    if grids == [] and not aligned:
        return text, 0
    try:
        # Unruled tables with the layout model, which keeps the text strategy from taking prose for one.
        ruled = _ruled_tables(page, grids) if grids != [] else []
        if not ruled and aligned:
            _layout_model()
        found = ruled or (page.find_tables(strategy="text").tables if aligned else [])
        rows = [(t, _table_rows(page, t)) for t in found if t.row_count >= 2 and t.col_count >= 2]
        if ruled and grids is not None:  # found without the layout model
            rows = [(t, cells) for t, cells in rows if _filled(cells) >= FILLED_SHARE]
        tables = [(pymupdf.Rect(t.bbox), markdown_table(cells)) for t, cells in rows]
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
    return RawPage(join_wrapped_lines(read.text), round(read.confidence, 1)), read.language


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
                textpage, lines = _text_page(page, kind)
                text = _lines_text(lines, textpage.rect) if lines is not None else None
                if text is None:
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
                    text, found = _with_tables(page, text, textpage, lines)
                    tables += found
                text = join_wrapped_lines(text)  # "盛大游\n戏" is one word: no newline (a space later) in it
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
