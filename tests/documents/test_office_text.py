"""What Office files hold besides their body text (issue 33): pictures' alternative text, sheet names as
headings, and heading levels told from the styles part once per document."""

from __future__ import annotations

import io

from rag.documents import load_bytes
from tests.docgen import make_png, make_xlsx


def test_word_pictures_alt_text_is_read_at_its_place() -> None:
    import docx

    d = docx.Document()
    d.add_heading("Site visit", 1)
    d.add_paragraph("The inspector photographed the loading dock.")
    d.add_picture(io.BytesIO(make_png(64, 64)))
    d.paragraphs[-1]._p.xpath(".//wp:docPr")[0].set("descr", "Dock 7 with\na broken ramp")
    d.add_paragraph("She left at noon.")
    d.add_picture(io.BytesIO(make_png(32, 32)))  # no alt text: nothing of it is read
    out = io.BytesIO()
    d.save(out)
    doc = load_bytes(out.getvalue(), "visit.docx")
    assert doc.pages[0].text.splitlines()[-5:] == [
        "The inspector photographed the loading dock.",
        "",
        "[Picture: Dock 7 with a broken ramp]",
        "",
        "She left at noon.",
    ]


def test_powerpoint_pictures_alt_text_is_text_of_its_slide() -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Related work"
    picture = slide.shapes.add_picture(io.BytesIO(make_png()), Inches(1), Inches(2))
    picture._element.nvPicPr.cNvPr.set("descr", "The first page of the AutoGen ArXiv paper")
    slide.shapes.add_picture(io.BytesIO(make_png()), Inches(3), Inches(2))  # no alt text
    out = io.BytesIO()
    deck.save(out)
    doc = load_bytes(out.getvalue(), "deck.pptx")
    assert doc.pages[0].text.split("\n\n") == ["Related work", "[Picture: The first page of the AutoGen ArXiv paper]"]


def test_a_sheet_name_heads_its_table_and_its_citation_stays() -> None:
    doc = load_bytes(make_xlsx(), "prices.xlsx")
    assert [p.text.splitlines()[:3] for p in doc.pages] == [
        ["Sales", "", "| SKU | Product | Price |"],
        ["Costs", "", "| Item | Cost |"],
    ]
    assert doc.location((1,)) == "sheet Sales" and doc.chunk_extras((2,)) == {"location": "sheet Costs"}


def test_word_heading_levels_come_from_the_styles_part() -> None:
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    d = docx.Document()
    custom = d.styles.add_style("Chapter Heading", WD_STYLE_TYPE.PARAGRAPH)
    custom.base_style = d.styles["Heading 2"]
    chinese = d.styles.add_style("标题 1", WD_STYLE_TYPE.PARAGRAPH)
    chinese.base_style = d.styles["Normal"]
    body_like = d.styles.add_style("Quote Block", WD_STYLE_TYPE.PARAGRAPH)
    body_like.base_style = d.styles["Normal"]
    d.add_paragraph("Handbook", style="Title")
    d.add_paragraph("Setup", style="Heading 1")
    d.add_paragraph("Install the agent.")
    d.add_paragraph("Linux", style="Heading 2")
    d.add_paragraph("Run the script.")
    d.add_paragraph("Advanced", style="Chapter Heading")
    d.add_paragraph("Tune the cache.", style="Quote Block")
    d.add_paragraph("安装", style="标题 1")
    d.add_paragraph("运行安装程序。")
    out = io.BytesIO()
    d.save(out)
    doc = load_bytes(out.getvalue(), "handbook.docx")
    assert [p.title for p in doc.pages] == [
        "Handbook › Setup",
        "Handbook › Setup › Linux",
        "Handbook › Setup › Advanced",
        "Handbook › 安装",
    ]
    assert doc.pages[2].text == "Advanced\n\nTune the cache."
