"""Word, PowerPoint, Excel, web pages, CSV, scans (OCR) and PDF tables: real files made by the
libraries that write them (tests/docgen.py), read back with their locations."""

from __future__ import annotations

import io
import zipfile

import pytest

from rag.documents import load_bytes, ocr
from rag.documents.sections import is_header, markdown_table
from tests.docgen import make_pdf, make_pptx, make_real_docx, make_scan_pdf, make_table_pdf, make_xlsx
from tests.documents.reasons import reason_of


def test_word_sections_follow_headings_and_keep_tables_headers_footers_and_comments() -> None:
    doc = load_bytes(make_real_docx(), "report.docx")
    assert doc.kind == "docx" and doc.reader == "python-docx" and doc.unit == "section"
    titles = [p.title for p in doc.pages]
    assert titles == [
        "Annual Report 2023 › Results",
        "Annual Report 2023 › Results › Price list",
        "Annual Report 2023 › Outlook",
        "Headers and footers",
        "Comments",
    ]
    assert doc.pages[0].text.startswith("Annual Report 2023\n\nResults\n\nRevenue grew 12%")
    assert "| SKU-6678 | $42,000.00 |" in doc.pages[1].text.splitlines()
    assert "ACME Confidential" in doc.pages[3].text and "Prepared by the finance team" in doc.pages[3].text
    assert "Li Wei: Check the 12% against the audited figures" in doc.pages[4].text
    assert doc.location((2,)) == "Annual Report 2023 › Results › Price list"
    assert doc.chunk_extras((2, 3)) == {"location": "Annual Report 2023 › Results › Price list"}


def test_slides_are_numbered_with_notes_text_boxes_tables_and_chart_titles() -> None:
    doc = load_bytes(make_pptx(), "review.pptx")
    assert [p.number for p in doc.pages] == [1, 2] and doc.unit == "slide"
    first, second = doc.pages
    assert first.title == "Quarterly review" and "Notes: Thank the Lisbon office for the Vasco deal" in first.text
    assert "The Nordic region doubled its pipeline" in second.text
    assert "| Nordic | 1.9 million |" in second.text.splitlines()
    assert "Chart: Bookings by quarter" in second.text
    assert doc.location((2,)) == "slide 2" and doc.location((1, 2)) == "slides 1–2"


def test_sheets_are_pages_named_after_the_sheet_with_comments() -> None:
    doc = load_bytes(make_xlsx(), "prices.xlsx")
    assert [p.title for p in doc.pages] == ["Sales", "Costs"]
    assert "| SKU-6678 | Falcon X | 42000 |" in doc.pages[0].text.splitlines()
    assert "C2: List price before discounts" in doc.pages[0].text
    assert doc.location((1,)) == "sheet Sales" and doc.chunk_extras((2,)) == {"location": "sheet Costs"}


def test_a_web_page_in_gb18030_keeps_its_article_and_drops_navigation_and_footer() -> None:
    article = "营业收入增长了百分之十二，主要来自华东地区的新客户。" * 6
    page = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=gb2312"><title>年度报告</title>'
        '</head><body><nav><a href="/">首页</a> <a href="/about">关于我们</a></nav><article><h1>经营结果</h1>'
        f"<p>{article}</p><h2>第三季度</h2><p>{'成本下降了百分之五，物流费用明显减少。' * 6}</p></article>"
        "<footer>版权所有 示例公司</footer></body></html>"
    )
    doc = load_bytes(page.encode("gb18030"), "报告.html")
    assert doc.reader == "trafilatura"
    assert [p.title for p in doc.pages] == ["经营结果", "经营结果 › 第三季度"]
    assert article in doc.text and "关于我们" not in doc.text and "版权所有" not in doc.text
    assert "\ufffd" not in doc.text


def test_csv_rows_stay_on_one_line() -> None:
    doc = load_bytes(b'sku;price\nSKU-6678;"$42,000.00"\n', "prices.csv")
    assert doc.pages[0].text.splitlines() == ["| sku | price |", "|---|---|", "| SKU-6678 | $42,000.00 |"]


def _encrypted_xlsx() -> bytes:
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(make_xlsx())).encrypt("secret", out)
    return out.getvalue()


def _zip(parts: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, text in parts.items():
            z.writestr(name, text)
    return out.getvalue()


@pytest.mark.parametrize(
    ("make", "filename", "reason"),
    [
        (
            lambda: make_real_docx()[:3000],
            "cut.docx",
            "truncated or damaged Word file (its ZIP archive cannot be read); the file is incomplete",
        ),
        (
            lambda: _zip({"notes.txt": "hello"}),
            "fake.pptx",
            "not a PowerPoint file: a ZIP archive without the ppt/ part every .pptx has",
        ),
        (
            _encrypted_xlsx,
            "locked.xlsx",
            "password-protected Excel file: remove the password (File › Info › Protect) and save it again",
        ),
        (
            lambda: make_pdf(["A PDF, not Word."]),
            "renamed.docx",
            "not a Word file (its content is not a ZIP archive); is the extension wrong?",
        ),
        (lambda: b"plain text", "old.xls", "not an Excel 97-2003 file (no OLE header); is the extension wrong?"),
        (lambda: _zip({"[Content_Types].xml": "<Types/>", "word/document.xml": "<not xml"}), "broken.docx", None),
        (
            lambda: b"<html><body><script>var x = 1;</script></body></html>",
            "empty.html",
            "no text: the HTML file holds no text (only images, or nothing)",
        ),
    ],
)
def test_broken_files_fail_with_one_line(make, filename: str, reason: str | None) -> None:
    got = reason_of(make(), filename)
    if reason is None:
        assert got.startswith("corrupt or unreadable Word file: ") and "\n" not in got
    else:
        assert got == reason


def test_pdf_tables_keep_each_row_on_one_line_ruled_or_not() -> None:
    rows = [["SKU", "Product", "Price"]] + [
        [f"SKU-{6600 + i * 39}", f"Model {i}", f"${i * 7:,},000.00"] for i in range(1, 7)
    ]
    for ruled in (True, False):
        doc = load_bytes(make_table_pdf("Prices of our products in 2024.", rows, ruled=ruled), "prices.pdf")
        lines = doc.pages[0].text.splitlines()
        assert lines[0] == "Prices of our products in 2024.", ruled
        assert "| SKU-6717 | Model 3 | $21,000.00 |" in lines, (ruled, lines)
        assert doc.reader == "MuPDF (1 table as rows)"
        assert lines[lines.index("| SKU | Product | Price |") + 1] == "|---|---|---|"
    # Without a header row, the first item is a row like the others, under an empty header (shown as
    # columns (1), (2), (3)): its cells are no column names (the claim check reads each row under them).
    for ruled in (True, False):
        doc = load_bytes(make_table_pdf("Prices of our products in 2024.", rows[1:], ruled=ruled), "prices.pdf")
        lines = doc.pages[0].text.splitlines()
        first = lines.index("| SKU-6639 | Model 1 | $7,000.00 |")
        assert lines[first - 2 : first] == ["| | | |", "|---|---|---|"], (ruled, lines)
        assert "| SKU-6717 | Model 3 | $21,000.00 |" in lines[first:]
    # Prose is not taken for a table, in one column or two (whose lines have a wide gap too).
    prose = load_bytes(make_pdf(["Revenue grew by twelve percent in 2023. " * 30]), "prose.pdf")
    assert "|" not in prose.text and prose.reader == "MuPDF"
    import pymupdf

    with pymupdf.open() as two:
        page = two.new_page()
        page.insert_textbox(pymupdf.Rect(50, 60, 290, 800), "Left column about revenue and costs. " * 40, fontsize=9)
        page.insert_textbox(pymupdf.Rect(305, 60, 545, 800), "Right column about hiring plans. " * 40, fontsize=9)
        columns = load_bytes(two.tobytes(), "columns.pdf")
    assert "|" not in columns.text and columns.reader == "MuPDF"


@pytest.mark.parametrize(
    ("row", "header"),
    [
        (["SKU", "Model", "Price ($)"], True),
        (["Region", "2023", "2024"], True),  # years name columns
        (["Top 10", "Q1 2024", ""], True),
        (["SKU-1002", "Zephyrite Pump Z3", "$23,500.00"], False),
        (["1", "Introduction", "3"], False),  # a table of contents
        (["Growth", "12.5 %", "(3)"], False),
    ],
)
def test_a_tables_first_row_is_its_header_unless_it_holds_values(row: list[str], header: bool) -> None:
    assert is_header(row) is header
    assert markdown_table([row, ["a", "b", "c"]]).startswith("| | | |\n") is not header


ENGLISH_SCAN = (
    "Jonathan Michael Harrison signed the lease for the Rotterdam warehouse on 3 March 2021. "
    "The rent is 1,200 euros a month."
)
CHINESE_SCAN = "营业收入增长了百分之十二，主要来自华东地区的新客户。物流成本下降了百分之五。"


def test_scans_are_read_by_ocr_in_english_and_chinese_with_confidence_and_progress() -> None:
    assert ocr.available(), f"CI installs Tesseract (scripts/ensure-tesseract): {ocr.ENABLE_HINT}"
    heard: list[tuple[int, int, str]] = []
    doc = load_bytes(
        make_scan_pdf([ENGLISH_SCAN, CHINESE_SCAN], fontname="china-s"),
        "scan.pdf",
        progress=lambda done, total, what: heard.append((done, total, what)),
    )
    english, chinese = doc.pages
    assert "Jonathan Michael Harrison" in english.text and "Rotterdam warehouse" in english.text
    assert "华东地区的新客户" in chinese.text and "物流成本" in chinese.text
    assert english.ocr is not None and english.ocr > 80 and chinese.ocr is not None and chinese.ocr > 80
    assert doc.reader.startswith("MuPDF + Tesseract") and doc.reader.endswith("OCR on 2 pages")
    assert heard == [
        (0, 2, "OCR of page 1 of 2"),
        (1, 2, "OCR of page 1 of 2"),
        (1, 2, "OCR of page 2 of 2"),
        (2, 2, "OCR of page 2 of 2"),
    ]
    extras = doc.chunk_extras((1, 2))
    assert extras["ocr"] is True and extras["ocr_confidence"] == min(english.ocr, chinese.ocr)


def test_a_scanned_page_inside_a_text_pdf_is_read_and_the_text_pages_are_not() -> None:
    import pymupdf

    with (
        pymupdf.open(
            stream=make_pdf(["Chapter one is typed text about the Falcon product line."]), filetype="pdf"
        ) as mixed,
        pymupdf.open(stream=make_scan_pdf([ENGLISH_SCAN]), filetype="pdf") as scan,
    ):
        mixed.insert_pdf(scan)
        data = mixed.tobytes()
    doc = load_bytes(data, "mixed.pdf")
    assert [p.ocr is None for p in doc.pages] == [True, False]
    assert "Rotterdam warehouse" in doc.pages[1].text


def test_without_tesseract_a_scan_fails_with_how_to_enable_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ocr, "languages", lambda: ())
    reason = reason_of(make_scan_pdf([ENGLISH_SCAN]), "scan.pdf")
    assert reason == (
        f"no extractable text: its pages are scanned images and no OCR engine is installed ({ocr.ENABLE_HINT})"
    )
    with pytest.raises(ocr.OcrUnavailable):
        ocr.read_image(b"")


def test_tesseract_words_are_joined_with_spaces_except_between_chinese_characters() -> None:
    tsv = (
        "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
        "5\t1\t1\t1\t1\t1\t0\t0\t1\t1\t90\t营业\n5\t1\t1\t1\t1\t2\t0\t0\t1\t1\t80\t收入，\n"
        "5\t1\t1\t1\t1\t3\t0\t0\t1\t1\t70\tSKU-6678\n5\t1\t1\t2\t1\t1\t0\t0\t1\t1\t60\tNext\n"
    )
    read = ocr._from_tsv(tsv, "chi_sim")
    assert read.text == "营业收入， SKU-6678\n\nNext" and read.confidence == 75.0


def test_an_excel_97_workbook_is_read_sheet_by_sheet() -> None:
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("Inventory")
    for r, row in enumerate([("SKU", "Stock"), ("SKU-6678", 12), ("SKU-1020", 3.5)]):
        for c, value in enumerate(row):
            sheet.write(r, c, value)
    book.add_sheet("Empty")
    out = io.BytesIO()
    book.save(out)
    doc = load_bytes(out.getvalue(), "old.xls")
    assert doc.reader == "xlrd" and [p.title for p in doc.pages] == ["Inventory"] and doc.page_count == 2
    assert doc.pages[0].text.splitlines() == [
        "Inventory",
        "",
        "| SKU | Stock |",
        "|---|---|",
        "| SKU-6678 | 12 |",
        "| SKU-1020 | 3.5 |",
    ]


def test_word_text_boxes_are_read_once_and_pictures_never_reach_the_text() -> None:
    import docx
    from docx.oxml import parse_xml

    from tests.docgen import make_png

    d = docx.Document()
    d.add_heading("Site visit", 1)
    para = d.add_paragraph("The inspector photographed the loading dock.")
    d.add_picture(io.BytesIO(make_png(64, 64)))
    # A text box as Word writes it: DrawingML for new readers and the same text again as VML.
    ns = (
        'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
        'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
        'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
        'xmlns:v="urn:schemas-microsoft-com:vml"'
    )
    box = "<w:txbxContent><w:p><w:r><w:t>Dock 7 needs a new ramp</w:t></w:r></w:p></w:txbxContent>"
    para._p.append(
        parse_xml(
            f'<w:r {ns}><mc:AlternateContent><mc:Choice Requires="wps"><wps:txbx>{box}</wps:txbx></mc:Choice>'
            f"<mc:Fallback><v:textbox>{box}</v:textbox></mc:Fallback></mc:AlternateContent></w:r>"
        )
    )
    out = io.BytesIO()
    d.save(out)
    doc = load_bytes(out.getvalue(), "visit.docx")
    assert doc.text.count("Dock 7 needs a new ramp") == 1
    assert "photographed the loading dock" in doc.text
    assert "iVBOR" not in doc.text and "base64" not in doc.text and "image" not in doc.text.lower()


LAYOUT_SCRIPT = """
import json, sys
from rag.documents import load_path
prose = load_path(sys.argv[1])
after_prose = sys.modules.get("pymupdf.layout") is not None
table = load_path(sys.argv[2])
print(json.dumps({"prose": prose.reader, "after_prose": after_prose, "table": table.reader,
                  "row": "| SKU-6717 | Model 3 | $21,000.00 |" in table.pages[0].text.splitlines(),
                  "after_table": sys.modules.get("pymupdf.layout") is not None}))
"""


def test_pymupdf_s_layout_model_is_loaded_only_for_a_page_whose_table_search_needs_it(tmp_path) -> None:
    # It loaded with pymupdf: 45 MB and 0.17 s in every process that read a PDF. Without it the text
    # strategy takes prose for a table, so a page with aligned words still gets it.
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT

    rows = [["SKU", "Product", "Price"]] + [
        [f"SKU-{6600 + i * 39}", f"Model {i}", f"${i * 7:,},000.00"] for i in range(1, 7)
    ]
    (tmp_path / "prose.pdf").write_bytes(make_pdf(["Revenue grew by twelve percent in 2023. " * 30]))
    (tmp_path / "prices.pdf").write_bytes(make_table_pdf("Prices of our products in 2024.", rows, ruled=False))
    run = subprocess.run(
        [sys.executable, "-c", LAYOUT_SCRIPT, str(tmp_path / "prose.pdf"), str(tmp_path / "prices.pdf")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 1, lines  # nothing printed by pymupdf (its suggestion to install the analyser)
    assert json.loads(lines[0]) == {
        "prose": "MuPDF",
        "after_prose": False,
        "table": "MuPDF (1 table as rows)",
        "row": True,
        "after_table": True,
    }
