"""`bench --only documents`: reader throughput per format and OCR speed and accuracy.

The files are made here from the passages of the shared eval sets (English RACE, Chinese CMRC),
so every run reads the same realistic text. Each reader is set against a peer on the same file:
for Office files and web pages the naive reader (every XML/HTML text node of the archive,
without structure, locations or main-content extraction), for PDFs MuPDF's plain text without
the table finder. OCR reads English and Chinese scans rendered from the passages and reports
pages/s and the similarity of the text read to the text rendered.
"""

from __future__ import annotations

import difflib
import functools
import io
import re
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.report import Report, best_of
from rag.evaluation.sets import eval_set

_TAG = re.compile(rb"<[^>]+>")


@dataclass(frozen=True)
class ReaderFigure:
    name: str
    size: int
    pages: int
    ours: float
    peer: float


def _passages(name: str, n: int, lo: int = 300, hi: int = 1400) -> list[str]:
    return [p.text for p in eval_set(name).passages if lo < len(p.text) < hi][:n]


def _docx(passages: list[str]) -> bytes:
    import docx

    d = docx.Document()
    d.add_heading("Reading comprehension passages", 0)
    for i, text in enumerate(passages, 1):
        d.add_heading(f"Passage {i}", 1)
        d.add_paragraph(text)
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def _pptx(passages: list[str]) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for i, text in enumerate(passages, 1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Passage {i}"
        slide.placeholders[1].text = text[:600]
        slide.notes_slide.notes_text_frame.text = text[600:]
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _xlsx(rows: int) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Products"
    sheet.append(["SKU", "Product", "Price", "Stock"])
    for i in range(rows):
        sheet.append([f"SKU-{1000 + i}", f"Model {i % 97} with the long-range battery", 42.5 * (i % 300), i % 17])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _html(passages: list[str]) -> bytes:
    nav = "<nav>" + " | ".join(f'<a href="/s{i}">Section {i}</a>' for i in range(30)) + "</nav>"
    body = "".join(f"<h2>Passage {i}</h2><p>{text}</p>" for i, text in enumerate(passages, 1))
    return (
        f"<html><head><meta charset='utf-8'><title>Passages</title></head><body>{nav}<article>{body}</article>"
        "<footer>Cookie policy · Contact</footer></body></html>"
    ).encode()


def _naive_zip_text(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return " ".join(
            _TAG.sub(b" ", archive.read(n)).decode("utf-8", "replace") for n in archive.namelist() if n.endswith(".xml")
        )


def _naive_html_text(data: bytes) -> str:
    return _TAG.sub(b" ", data).decode("utf-8", "replace")


def _pdf_with_tables(passages: list[str]) -> bytes:
    import pymupdf

    with pymupdf.open() as doc:
        for i, text in enumerate(passages):
            page = doc.new_page()
            page.insert_textbox(pymupdf.Rect(72, 72, 523, 560), text, fontname="helv", fontsize=10)
            if i % 4 == 0:  # every fourth page has a ruled price table
                for r in range(6):
                    for c, cell in enumerate((f"SKU-{6600 + r}", f"Model {r}", f"${r * 1000 + 42:,}.00")):
                        box = pymupdf.Rect(72 + c * 140, 600 + r * 20, 212 + c * 140, 620 + r * 20)
                        page.draw_rect(box, color=(0, 0, 0), width=0.5)
                        page.insert_text((box.x0 + 3, box.y1 - 6), cell, fontname="helv", fontsize=9)
        return doc.tobytes()


def _pdf_with_figures(passages: list[str]) -> bytes:
    """A book's pages: a running header's rule on each, a figure on every third (a plot's axes and dashed
    grid, a brick hatching: hundreds of crossing lines, no words inside) and a ruled table on every ninth.
    Only the tables' grids may cost the table finder's time (a 117-page geology text: 25-60 s, then 2-4 s)."""
    import pymupdf

    with pymupdf.open() as doc:
        for i, text in enumerate(passages):
            page = doc.new_page()
            page.draw_line((72, 46), (523, 46), color=(0, 0, 0), width=0.4)
            page.insert_textbox(pymupdf.Rect(72, 60, 523, 330), text, fontname="helv", fontsize=10)
            shape = page.new_shape()
            if i % 3 == 0:
                for k in range(11):
                    shape.draw_line((100 + k * 30, 360), (100 + k * 30, 560))
                    shape.draw_line((100, 360 + k * 20), (400, 360 + k * 20))
                for r, y in enumerate(range(580, 760, 6)):
                    shape.draw_line((100, y), (400, y))
                    for x in range(100 + (6 if r % 2 else 0), 400, 12):
                        shape.draw_line((x, y), (x, y + 6))
                shape.finish(color=(0.3, 0.3, 0.3), width=0.3)
                shape.commit()
                page.insert_text((410, 470), "Fig. 1: grain size", fontname="helv", fontsize=7)
            elif i % 9 == 4:
                for r in range(6):
                    for c, cell in enumerate((f"Layer {r}", f"{r * 12.5:.1f} m", f"{r * 40 + 2} Ma")):
                        box = pymupdf.Rect(72 + c * 140, 360 + r * 20, 212 + c * 140, 380 + r * 20)
                        page.draw_rect(box, color=(0, 0, 0), width=0.5)
                        page.insert_text((box.x0 + 3, box.y1 - 6), cell, fontname="helv", fontsize=9)
        return doc.tobytes()


def _plain_pdf_text(data: bytes) -> str:
    import pymupdf

    with pymupdf.open(stream=data, filetype="pdf") as doc:
        return "".join(page.get_text() for page in doc)


def reader_figures(quick: bool) -> list[ReaderFigure]:
    from rag.documents import load_bytes

    english = _passages("en_race", 40 if quick else 120)
    files: list[tuple[str, str, bytes, Callable[[bytes], str]]] = [
        ("Word (python-docx)", "bench.docx", _docx(english), _naive_zip_text),
        ("PowerPoint (python-pptx)", "bench.pptx", _pptx(english), _naive_zip_text),
        ("Excel (openpyxl)", "bench.xlsx", _xlsx(500 if quick else 3000), _naive_zip_text),
        ("web page (trafilatura)", "bench.html", _html(english), _naive_html_text),
        ("PDF with tables (MuPDF + table finder)", "bench.pdf", _pdf_with_tables(english), _plain_pdf_text),
        ("PDF with figures and tables (MuPDF + table finder)", "book.pdf", _pdf_with_figures(english), _plain_pdf_text),
    ]
    figures = []
    repeat = 2 if quick else 3
    for label, filename, data, peer in files:
        ours, doc = best_of(functools.partial(load_bytes, data, filename), repeat)
        theirs, _ = best_of(functools.partial(peer, data), repeat)
        figures.append(ReaderFigure(label, len(data), len(doc.pages), ours, theirs))
    return figures


def _similarity(reference: str, read: str, chinese: bool) -> float:
    def norm(text: str) -> str:
        return re.sub(r"\s+", "" if chinese else " ", text).strip()

    return difflib.SequenceMatcher(None, norm(reference), norm(read), autojunk=False).ratio()


@dataclass(frozen=True)
class OcrFigure:
    language: str
    pages: int
    seconds: float
    similarity: float
    confidence: float


def ocr_figures(quick: bool) -> list[OcrFigure]:
    import pymupdf

    from rag.documents import load_bytes

    out = []
    for language, set_name, font in (("English", "en_race", "helv"), ("Chinese", "zh_cmrc_trial", "china-s")):
        texts = _passages(set_name, 2 if quick else 4, 400, 900)
        with pymupdf.open() as source, pymupdf.open() as scan:
            for text in texts:
                page = source.new_page()
                page.insert_textbox(pymupdf.Rect(60, 60, 535, 780), text, fontname=font, fontsize=11)
                png = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY).tobytes("png")
                scan.new_page().insert_image(pymupdf.Rect(0, 0, 595, 842), stream=png)
            data = scan.tobytes()
        start = time.perf_counter()
        doc = load_bytes(data, f"scan-{language}.pdf")
        seconds = time.perf_counter() - start
        chinese = language == "Chinese"
        similarity = sum(_similarity(t, p.text, chinese) for t, p in zip(texts, doc.pages)) / len(texts)
        confidence = sum(p.ocr or 0 for p in doc.pages) / len(doc.pages)
        out.append(OcrFigure(language, len(doc.pages), seconds, similarity, confidence))
    return out


def bench_documents(report: Report, quick: bool) -> None:
    from rag.documents import ocr

    report.section("Document readers: ours (structure, locations, tables) vs a naive text dump of the same file")
    for f in reader_figures(quick):
        report.line(
            f"{f.name}: {f.size / 1e6:.2f} MB, {f.pages} pages/sections/slides/sheets read in "
            f"{f.ours * 1000:.0f} ms ({f.size / 1e6 / f.ours:.1f} MB/s); the naive dump "
            f"{f.peer * 1000:.0f} ms -> ours costs {f.ours / f.peer:.1f}x"
        )
    report.section(f"OCR of scanned pages ({ocr.engine_name()}, 150 dpi, text of the eval sets)")
    if not ocr.available():
        report.line(f"skipped: {ocr.ENABLE_HINT}")
        return
    for f in ocr_figures(quick):
        report.line(
            f"{f.language}: {f.pages} pages in {f.seconds:.1f} s = {f.pages / f.seconds:.2f} pages/s, "
            f"similarity to the rendered text {f.similarity:.3f}, mean confidence {f.confidence:.0f}"
        )
    from benchmarks.ocr import bench_ocr_cer

    bench_ocr_cer(report, quick)
