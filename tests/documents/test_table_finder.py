"""The table finder (pymupdf's find_tables, 0.3-1 s a page with pymupdf 2's layout model) runs only
on pages whose lines form a grid with words in it: a header rule, a frame, a column rule, a plot's
axes and grid or a hatching do not make a page pay for it (a 117-page geology text with a figure on
every third page took 25-40 s to preview, 2-3 s after). Counted, not timed."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pymupdf
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.documents import load_bytes
from rag.documents import mupdf as mupdf_module
from rag.documents.mupdf import CELL_SHARE, COLUMN_GAP, _cell_rows, _line_boxes, _table_hints
from tests.docgen import make_table_pdf

PROSE = " ".join(
    f"Im Profil {i} reicht die Schichtenfolge des Beckens vom Zechstein über Buntsandstein und Muschelkalk "
    f"bis ins Quartär; die Mächtigkeit der Kalksteinbänke nimmt nach Süden um {i * 3} Meter ab."
    for i in range(1, 9)
)
ROWS = [["Schicht", "Gestein", "Mächtigkeit"]] + [[f"S{i}", "Kalkstein", f"{i * 12.5:.1f} m"] for i in range(1, 6)]


def _header(page: pymupdf.Page) -> None:
    page.insert_text((72, 40), "Einführung in die Geologie", fontname="helv", fontsize=8)
    page.draw_line((72, 46), (523, 46), color=(0, 0, 0), width=0.4)  # a running header's rule


def _figure_page(page: pymupdf.Page) -> None:
    """A plot with axes, ticks and a dashed grid, and a brick hatching: hundreds of crossing lines,
    the labels outside them."""
    shape = page.new_shape()
    for k in range(11):
        x, y = 100 + k * 30, 380 - k * 25
        shape.draw_line((x, 130), (x, 380))
        shape.draw_line((100, y), (400, y))
    shape.finish(color=(0.7, 0.7, 0.7), width=0.3, dashes="[2] 0")
    for r, y in enumerate(range(420, 540, 6)):
        shape.draw_line((100, y), (400, y))
        for x in range(100 + (6 if r % 2 else 0), 400, 12):
            shape.draw_line((x, y), (x, y + 6))
    shape.finish(color=(0.2, 0.2, 0.2), width=0.2)
    shape.commit()
    for k in range(0, 11, 2):
        page.insert_text((96 + k * 30, 394), str(k * 10), fontname="helv", fontsize=6)
    page.insert_text((410, 480), "Muschelkalk", fontname="helv", fontsize=7)
    page.insert_textbox(pymupdf.Rect(72, 560, 523, 800), PROSE, fontname="helv", fontsize=9)


def _columns_page(page: pymupdf.Page) -> None:
    """Two justified columns of prose in a frame, with a rule between them."""
    page.draw_rect(pymupdf.Rect(60, 55, 535, 810), color=(0, 0, 0), width=0.5)
    page.draw_line((297, 60), (297, 800), color=(0, 0, 0), width=0.3)
    for box in (pymupdf.Rect(72, 60, 290, 800), pymupdf.Rect(305, 60, 525, 800)):
        page.insert_textbox(box, PROSE, fontname="helv", fontsize=9, align=pymupdf.TEXT_ALIGN_JUSTIFY)


def _table_page(page: pymupdf.Page) -> None:
    page.insert_textbox(pymupdf.Rect(72, 60, 523, 300), PROSE, fontname="helv", fontsize=9)
    for r, row in enumerate(ROWS):
        for c, cell in enumerate(row):
            box = pymupdf.Rect(72 + c * 130, 320 + r * 20, 202 + c * 130, 340 + r * 20)
            page.draw_rect(box, color=(0, 0, 0), width=0.5)
            page.insert_text((box.x0 + 4, box.y1 - 6), cell, fontname="helv", fontsize=9)


def _book() -> bytes:
    with pymupdf.open() as doc:
        for fill in (None, _figure_page, _columns_page, _table_page):
            page = doc.new_page()
            _header(page)
            if fill is None:
                page.insert_textbox(pymupdf.Rect(72, 60, 523, 800), PROSE * 2, fontname="helv", fontsize=9)
            else:
                fill(page)
        return doc.tobytes()


def test_the_table_finder_runs_only_on_the_page_whose_lines_form_a_grid_with_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, dict[str, Any]]] = []
    find_tables = pymupdf.Page.find_tables

    def counted(page: pymupdf.Page, *args: Any, **kwargs: Any) -> Any:
        calls.append((page.number + 1, kwargs))
        return find_tables(page, *args, **kwargs)

    monkeypatch.setattr(pymupdf.Page, "find_tables", counted)
    doc = load_bytes(_book(), "geologie.pdf")

    assert [number for number, _ in calls] == [4], calls
    kwargs = calls[0][1]
    # Only the grid is searched (the finder reads every character of what it searches), without the
    # layout model: the grid test has done its work.
    clip = pymupdf.Rect(kwargs["clip"])
    assert kwargs["strategy"] == "lines" and kwargs["use_layout"] is False
    assert clip.y0 > 300 and clip.y1 < 470 and clip.x0 > 60 and clip.x1 < 470, clip
    assert doc.reader == "MuPDF (1 table as rows)"
    table_page = doc.pages[3].text.splitlines()
    assert "| Schicht | Gestein | Mächtigkeit |" in table_page
    assert "| S3 | Kalkstein | 37.5 m |" in table_page
    # The other pages keep their plain text.
    assert all("|" not in page.text for page in doc.pages[:3])


def test_a_plot_grid_with_labels_inside_is_no_table() -> None:
    """Its lines cross and hold words, so the finder looks; but 3 of its 100 cells hold text."""
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 60, 523, 300), PROSE, fontname="helv", fontsize=9)
        shape = page.new_shape()
        for k in range(11):
            shape.draw_line((100 + k * 30, 360), (100 + k * 30, 560))
            shape.draw_line((100, 360 + k * 20), (400, 360 + k * 20))
        shape.finish(color=(0.7, 0.7, 0.7), width=0.3)
        shape.commit()
        for (x, y), label in zip(((135, 395), (285, 475), (195, 535)), ("Probe A", "Probe B", "Maximum")):
            page.insert_text((x, y), label, fontname="helv", fontsize=7)
        data = doc.tobytes()
    plot = load_bytes(data, "plot.pdf")
    assert plot.reader == "MuPDF" and "|" not in plot.text
    assert "Probe A" in plot.text and "Maximum" in plot.text


def test_only_a_page_whose_content_may_draw_a_line_has_its_drawings_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing a page's drawings costs a quarter of reading a text page: its content stream says first."""
    listed: list[int] = []
    get_cdrawings = pymupdf.Page.get_cdrawings

    def counted(page: pymupdf.Page, *args: Any, **kwargs: Any) -> Any:
        listed.append(page.number + 1)
        return get_cdrawings(page, *args, **kwargs)

    monkeypatch.setattr(pymupdf.Page, "get_cdrawings", counted)
    with pymupdf.open() as doc:
        for _ in range(2):  # prose and words that read like operators ("l", "re", "Do", "h")
            doc.new_page().insert_textbox(pymupdf.Rect(72, 60, 523, 800), PROSE + " l re Do h", fontsize=9)
        prose = load_bytes(doc.tobytes(), "prosa.pdf")
    assert listed == [] and "Zechstein" in prose.text
    load_bytes(_book(), "geologie.pdf")  # every page has its header's rule
    assert sorted(set(listed)) == [1, 2, 3, 4]  # (the table finder lists page 4's again)
    # A table drawn inside a form (a page placed on another, as imposition tools do) keeps its rules.
    with pymupdf.open() as source, pymupdf.open() as placed:
        _table_page(source.new_page())
        placed.new_page().show_pdf_page(placed[0].rect, source, 0)
        data = placed.tobytes()
    assert placed_content_draws_nothing_itself(data)
    assert "| S3 | Kalkstein | 37.5 m |" in load_bytes(data, "placed.pdf").text.splitlines()


def placed_content_draws_nothing_itself(data: bytes) -> bool:
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        content = doc[0].read_contents().split()
    return b"Do" in content and not {b"re", b"l", b"h"} & set(content)


def _cell_rows_one_by_one(boxes: list[tuple[float, float, float, float]], widest: float) -> int:
    """The rows that fall into cells, worked out word by word as the table hints once were."""
    rows: dict[int, list[tuple[float, float]]] = {}
    for x0, _y0, x1, y1 in boxes:
        rows.setdefault(round(y1), []).append((x0, x1))
    found = 0
    for spans in rows.values():
        spans.sort()
        pieces = [[spans[0][0], spans[0][1]]]
        for x0, x1 in spans[1:]:
            if x0 - pieces[-1][1] > COLUMN_GAP:
                pieces.append([x0, x1])
            else:
                pieces[-1][1] = x1
        found += len(pieces) >= 2 and sum(b - a for a, b in pieces) / len(pieces) < widest
    return found


_word = st.tuples(
    st.integers(0, 60).map(lambda i: i * 7.5),  # x0 on a coarse grid: gaps at and around COLUMN_GAP
    st.integers(0, 30),  # y0 (only the centres use it)
    st.integers(1, 40).map(lambda w: w * 2.5),  # width
    st.sampled_from([100.0, 100.4, 100.6, 101.0, 112.0, 124.5]),  # bottoms: some round to one row
).map(lambda w: (w[0], w[1], w[0] + w[2], w[3]))


@given(st.lists(_word, max_size=40), st.sampled_from([30.0, 60.0, 178.5]))
def test_rows_of_cells_are_counted_as_word_by_word(boxes: list[tuple[float, float, float, float]], widest: float):
    """The table hints count the rows whose words fall into cells with numpy; the count must be the one a loop
    over the words gives (the hints decide which pages the table finder reads)."""
    array = np.array(boxes, dtype=np.float64).reshape(-1, 4)
    assert _cell_rows(array, widest) == _cell_rows_one_by_one(boxes, widest)


def _words(page: pymupdf.Page, textpage: pymupdf.TextPage) -> np.ndarray:
    return np.array([w[:4] for w in page.get_text("words", textpage=textpage)], dtype=np.float64).reshape(-1, 4)


def test_the_line_boxes_are_mupdfs_lines_to_an_eighth_of_a_point() -> None:
    """Read from MuPDF's JSON of the text page: text that looks like that JSON, quotes and backslashes, Chinese and
    a table's cells give the lines MuPDF has, in its order."""
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 60, 523, 300), PROSE, fontname="helv", fontsize=9)
        mimic = 'It said "wmode":0,"bbox":{"x":1,"y":2,"w":3,"h":4} and "size":99 \\ too'
        page.insert_text((72, 320), mimic, fontsize=9)
        page.insert_text((72, 340), "中文的句子在这里，表格在下面。", fontname="china-s", fontsize=10)
        for r, row in enumerate(ROWS):
            for c, cell in enumerate(row):
                page.insert_text((72 + c * 130, 380 + r * 16), cell, fontname="helv", fontsize=9)
        textpage = page.get_textpage()
        boxes = _line_boxes(textpage)
        expected = [line["bbox"] for block in textpage.extractDICT()["blocks"] for line in block.get("lines", ())]
    assert boxes is not None and boxes.shape == (len(expected), 4) and len(expected) > 3 * len(ROWS)
    assert np.abs(boxes - np.array(expected)).max() <= 0.25


def test_the_table_hints_read_from_lines_are_those_the_words_give() -> None:
    """Where MuPDF's lines hold the same pieces as the words (text up to LINE_GAP_SIZE, no spaces in a row), the
    hints read them: an unruled table and a ruled one's cells fall into rows of cells, prose in one column or two, a
    plot's labels and a header do not."""
    rows = [["SKU", "Product", "Price"]] + [[f"SKU-{6600 + i}", f"Model {i}", f"${i * 7:,}.00"] for i in range(1, 7)]
    decided = []
    for data in (make_table_pdf("Prices of our products in 2024.", rows, ruled=False), _book()):
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            for page in doc:
                textpage = page.get_textpage()
                lines, words = _line_boxes(textpage), _words(page, textpage)
                assert lines is not None and 0 < len(lines) < len(words)
                widest = CELL_SHARE * page.rect.width
                decided.append((_cell_rows(lines, widest) >= 3, _cell_rows(words, widest) >= 3))
    assert decided == [(True, True), (False, False), (False, False), (False, False), (True, True)]


def _hidden_gaps() -> bytes:
    """Two pages of price lists whose lines hold a column gap: aligned with spaces in a monospaced font, and set in
    20 points (MuPDF keeps a 14-point gap in one line of such type)."""
    items = [("SKU-6678", "$42,000.00"), ("SKU-1020", "$9,500.00"), ("SKU-3141", "$1,200.00"), ("SKU-2718", "$800.00")]
    with pymupdf.open() as doc:
        page = doc.new_page()
        for r, (sku, price) in enumerate(items):
            page.insert_text((72, 100 + 16 * r), f"{sku:<10}{price:>12}", fontname="cour", fontsize=11)
        page = doc.new_page()
        for r, (sku, price) in enumerate(items):
            width = pymupdf.get_text_length(sku, fontname="helv", fontsize=20)
            page.insert_text((72, 100 + 30 * r), sku, fontname="helv", fontsize=20)
            page.insert_text((72 + width + 14, 100 + 30 * r), price, fontname="helv", fontsize=20)
        return doc.tobytes()


def test_lines_that_may_hold_a_column_gap_leave_the_hints_to_the_words(monkeypatch: pytest.MonkeyPatch) -> None:
    with pymupdf.open(stream=_hidden_gaps(), filetype="pdf") as doc:
        for page in doc:
            textpage = page.get_textpage()
            assert _line_boxes(textpage) is None, page.number
            assert _cell_rows(_words(page, textpage), CELL_SHARE * page.rect.width) == 4
            assert _table_hints(page, textpage) == ([], True)
    # A MuPDF whose JSON the pattern does not know: the words, not no hint.
    monkeypatch.setattr(mupdf_module, "_JSON_LINE", re.compile(rb"(?!)"))
    rows = [["SKU", "Price"]] + [[f"SKU-{6600 + i}", f"${i * 7:,}.00"] for i in range(1, 5)]
    with pymupdf.open(stream=make_table_pdf("Prices.", rows, ruled=False), filetype="pdf") as doc:
        page = doc[0]
        textpage = page.get_textpage()
        assert _line_boxes(textpage) is None
        assert _table_hints(page, textpage) == ([], True)


def _text_page_cases() -> bytes:
    """Pages whose text MuPDF prints alike as text and as JSON: the book's (a header, prose, a plot's labels, two
    columns, a table), escapes and the JSON's own look, Chinese, a tab; then a page with a line running off its
    right edge (get_text drops what is outside)."""
    with pymupdf.open(stream=_book(), filetype="pdf") as doc:
        page = doc.new_page()
        page.insert_text((72, 72), 'It said "wmode":0,"text":"x"} and a \\ backslash\tand a tab', fontsize=9)
        page.insert_text((72, 92), "中文的句子在这里，“引号”也在。", fontname="china-s", fontsize=10)
        page.insert_text((72, 112), "", fontsize=9)
        page = doc.new_page()
        page.insert_text((72, 72), "This line is inside the page.", fontsize=9)
        page.insert_text((400, 92), "This line runs far beyond the right edge of the page and is cut.", fontsize=9)
        return doc.tobytes()


def test_a_pages_text_is_read_from_mupdfs_json_of_its_lines_as_get_text_gives_it() -> None:
    """The text comes from the JSON the table hints read its lines from (get_text printed the page again): the
    same text on every page; a page with a line at its edge, and a MuPDF whose JSON the pattern does not know, get
    get_text's (which drops the characters outside the page)."""
    with pymupdf.open(stream=_text_page_cases(), filetype="pdf") as doc:
        *inside, edge = list(doc)
        for page in inside:
            textpage = page.get_textpage()
            lines = mupdf_module._page_lines(textpage)
            assert lines is not None
            assert mupdf_module._lines_text(lines, textpage.rect) == page.get_text(textpage=textpage), page.number
        textpage = edge.get_textpage()
        lines = mupdf_module._page_lines(textpage)
        assert lines is not None and mupdf_module._lines_text(lines, textpage.rect) is None
    pages = load_bytes(_text_page_cases(), "cases.pdf").pages
    assert '"wmode":0,"text":"x"} and a \\ backslash' in pages[4].text and "“引号”也在" in pages[4].text
    assert "beyond the right" in pages[5].text and "is cut" not in pages[5].text


def test_only_a_page_that_draws_is_read_again_for_its_ruled_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a page's content stream for the lines a ruled table needs was 0.50 of the peers bench's ~7 s of
    parsing, though none of its pages draws: the text page records what a page draws, and a page that draws
    nothing is not read again. A page that draws keeps the text it had (its drawings would cut the text's blocks)
    and its table."""
    with pymupdf.open(stream=_book(), filetype="pdf") as doc:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 60, 523, 800), PROSE, fontname="helv", fontsize=9)
        data = doc.tobytes()
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        drawing = [page.number for page in doc if page.get_drawings()]
        assert drawing == [0, 1, 2, 3]
        for page in doc:
            textpage, lines = mupdf_module._text_page(page, "pdf")
            assert lines is not None and lines.drawn is (page.number in drawing), page.number
            assert page.get_text(textpage=textpage) == page.get_text(textpage=page.get_textpage()), page.number
    looked: list[int] = []
    rules = mupdf_module._rules

    def counted(page: pymupdf.Page) -> tuple[list[Any], list[Any]]:
        looked.append(page.number)
        return rules(page)

    monkeypatch.setattr(mupdf_module, "_rules", counted)
    doc = load_bytes(data, "geologie.pdf")
    assert looked == drawing and "|" in doc.pages[3].text  # the table page's table, as rows


def test_a_mupdf_whose_json_the_pattern_does_not_know_gives_get_texts_text(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = [p.text for p in load_bytes(_text_page_cases(), "cases.pdf").pages]
    monkeypatch.setattr(mupdf_module, "_JSON_LINE", re.compile(rb"(?!)"))
    with pymupdf.open(stream=_text_page_cases(), filetype="pdf") as doc:
        assert mupdf_module._page_lines(doc[0].get_textpage()) is None
    assert [p.text for p in load_bytes(_text_page_cases(), "cases.pdf").pages] == expected
