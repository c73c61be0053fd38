"""`bench --only documents`: OCR character error rate (CER) of Chinese and English scans per dpi (issue #33).

Passages of the shared eval sets (CMRC Chinese, RACE English) are set at 11 pt on an A4 page (MuPDF's
built-in `china-s` and Helvetica), rendered to a grey image at the scan's dpi and put into a PDF with no
text layer, as a scanner writes it. Each page is then read:
- `app`: as the app reads it (`mupdf._ocr_page`: the page rendered at `ocr.DPI`, English first, Chinese when the
  English reading is not confident);
- `native <lang> psm N`: Tesseract on the scan's own pixels (no resampling) in one language;
- `2x <lang>`: the scan's pixels upscaled 2x (Pillow's Lanczos) before Tesseract;
- `rapidocr`: PP-OCRv4 in the `rapidocr_onnxruntime` 1.x wheel (its ONNX models ship inside the wheel),
  when it is importable; never a dependency of the app.
CER is the Levenshtein distance of the text read to the text set, over the length of the text set
(summed over the pages), after NFKC (full-width commas count as commas) and with whitespace collapsed
(removed for Chinese, where it carries nothing).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.report import Report
from rag.evaluation.sets import eval_set

DPIS = (150, 200, 300)
FONT_SIZE = 11


@dataclass(frozen=True)
class Scan:
    """One passage rendered as a scanned page."""

    text: str
    dpi: int
    png: bytes
    """The scan's own pixels (grey PNG at `dpi`)."""
    pdf: bytes
    """A one-page PDF holding only that image, as a scanner writes it."""


@dataclass(frozen=True)
class Reading:
    text: str
    confidence: float


@dataclass(frozen=True)
class CerFigure:
    language: str
    dpi: int
    variant: str
    pages: int
    cer: float
    seconds: float
    """Per page."""
    confidence: float


def normalise(text: str, chinese: bool) -> str:
    return re.sub(r"\s+", "" if chinese else " ", unicodedata.normalize("NFKC", text)).strip()


def levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(references: list[str], readings: list[str], chinese: bool) -> float:
    errors = total = 0
    for reference, read in zip(references, readings, strict=True):
        ref = normalise(reference, chinese)
        errors += levenshtein(ref, normalise(read, chinese))
        total += len(ref)
    return errors / total if total else 0.0


_ASCII = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u2013": "-", "\u2014": "-"})


def settable(text: str, chinese: bool) -> str | None:
    """The passage as the page can show it: MuPDF's built-in Helvetica draws curly quotes and full-width
    forms as '?' (which made every English page 1.2% wrong before a character was read), so English
    is set in their plain forms, and a passage with a character beyond Latin-1 left is not used."""
    if chinese:
        return text
    plain = unicodedata.normalize("NFKC", text).translate(_ASCII).replace("\u2026", "...")
    return plain if all(ord(c) < 256 for c in plain) else None


def passages(set_name: str, n: int) -> list[str]:
    """`n` passages that fit one page at 11 pt, spread over the set (not its first few articles only)."""
    chinese = set_name.startswith("zh")
    texts = (settable(p.text, chinese) for p in eval_set(set_name).passages)
    fitting = [t for t in texts if t is not None and 300 < len(t) < 1100]
    step = max(1, len(fitting) // n)
    return fitting[::step][:n]


def scan(text: str, font: str, dpi: int) -> Scan:
    import pymupdf

    with pymupdf.open() as source, pymupdf.open() as out:
        page = source.new_page()
        left = page.insert_textbox(pymupdf.Rect(60, 60, 535, 780), text, fontname=font, fontsize=FONT_SIZE)
        if left < 0:
            raise ValueError(f"passage does not fit one page: {text[:30]!r}")
        png = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).tobytes("png")
        target = out.new_page(width=page.rect.width, height=page.rect.height)
        target.insert_image(target.rect, stream=png)
        return Scan(text, dpi, png, out.tobytes())


def tesseract(png: bytes, language: str, psm: int = 3) -> Reading:
    from rag.documents.ocr import _from_tsv

    result = subprocess.run(
        ["tesseract", "stdin", "stdout", "-l", language, "--psm", str(psm), "tsv"],
        input=png,
        capture_output=True,
        timeout=300,
        env=dict(os.environ, OMP_THREAD_LIMIT="1"),
        check=True,
    )
    read = _from_tsv(result.stdout.decode("utf-8", "replace"), language)
    return Reading(read.text, read.confidence)


def upscaled(png: bytes, factor: int = 2) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        big = image.resize((image.width * factor, image.height * factor), Image.Resampling.LANCZOS)
        out = io.BytesIO()
        big.save(out, "PNG")
        return out.getvalue()


def app_reading(page: Scan) -> Reading:
    import pymupdf

    from rag.documents.mupdf import _ocr_page

    with pymupdf.open(stream=page.pdf, filetype="pdf") as doc:
        raw, _ = _ocr_page(doc[0], None)
    return Reading(raw.text, raw.ocr or 0.0)


def _rapidocr() -> Callable[[bytes], Reading] | None:
    try:
        from rapidocr_onnxruntime import RapidOCR  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    engine = RapidOCR()

    def read(png: bytes) -> Reading:
        result, _ = engine(png)
        lines = [text for _, text, _ in result or []]
        scores = [float(score) for _, _, score in result or []]
        return Reading("\n".join(lines), 100 * sum(scores) / len(scores) if scores else 0.0)

    return read


def _measure(language: str, dpi: int, variant: str, pages: list[Scan], read: Callable[[Scan], Reading]) -> CerFigure:
    start = time.perf_counter()
    readings = [read(page) for page in pages]
    seconds = (time.perf_counter() - start) / len(pages)
    chinese = language == "Chinese"
    return CerFigure(
        language,
        dpi,
        variant,
        len(pages),
        cer([p.text for p in pages], [r.text for r in readings], chinese),
        seconds,
        sum(r.confidence for r in readings) / len(readings),
    )


def _variants(
    language: str, lang: str, dpi: int, extra: list[str], rapid: Callable[[bytes], Reading] | None
) -> list[tuple[str, Callable[[Scan], Reading]]]:
    out: list[tuple[str, Callable[[Scan], Reading]]] = [
        ("app", app_reading),
        (f"native {lang} psm 3", lambda p: tesseract(p.png, lang)),
    ]
    if dpi < 300:
        out.append((f"2x {lang} psm 3", lambda p: tesseract(upscaled(p.png), lang)))
    if "psm6" in extra:
        out.append((f"native {lang} psm 6", lambda p: tesseract(p.png, lang, 6)))
    if "vert" in extra and language == "Chinese":
        out.append(("native chi_sim_vert psm 3", lambda p: tesseract(p.png, "chi_sim_vert")))
    if rapid is not None and language == "Chinese":  # English: 8-37% CER on the probe (it runs words together)
        out.append(("rapidocr (PP-OCRv4)", lambda p: rapid(p.png)))
    return out


def cer_figures(quick: bool, on_figure: Callable[[CerFigure], None] | None = None) -> list[CerFigure]:
    n = 2 if quick else 8
    rapid = None if quick else _rapidocr()
    extra = os.environ.get("RAG_BENCH_OCR_VARIANTS", "").split(",")  # psm6, vert: the probes of issue #33
    figures: list[CerFigure] = []

    def add(figure: CerFigure) -> None:
        figures.append(figure)
        if on_figure is not None:
            on_figure(figure)

    for language, set_name, font, lang in (
        ("Chinese", "zh_cmrc_trial", "china-s", "chi_sim"),
        ("English", "en_race", "helv", "eng"),
    ):
        texts = passages(set_name, n)
        for dpi in DPIS:
            pages = [scan(text, font, dpi) for text in texts]
            for variant, read in _variants(language, lang, dpi, extra, rapid):
                add(_measure(language, dpi, variant, pages, read))
    return figures


def bench_ocr_cer(report: Report, quick: bool) -> None:
    from rag.documents import ocr

    report.section(
        f"OCR character error rate per scan dpi ({ocr.engine_name()}; {FONT_SIZE} pt passages of the eval sets, "
        f"{2 if quick else 8} pages per language and dpi; lower is better)"
    )
    if not ocr.available():
        report.line(f"skipped: {ocr.ENABLE_HINT}")
        return

    def line(f: CerFigure) -> None:
        report.line(
            f"{f.language:7} {f.dpi} dpi  {f.variant:28} CER {f.cer:6.2%}  {f.seconds:5.1f} s/page  "
            f"confidence {f.confidence:3.0f}"
        )

    figures = cer_figures(quick, line)
    app = {(f.language, f.dpi): f.cer for f in figures if f.variant == "app"}
    report.line(
        "as the app reads them, CER per dpi: "
        + "; ".join(
            f"{dpi} dpi Chinese {app[('Chinese', dpi)]:.2%} / English {app[('English', dpi)]:.2%}" for dpi in DPIS
        )
    )
