"""OCR of page images with Tesseract (Debian's `tesseract-ocr` with `-eng` and `-chi-sim`).

Chosen by measurement (3 English and 3 Chinese passages of the shared eval sets, rendered as
150-300 dpi grey scans, 2 cores; similarity of the read text to the original):
- Tesseract 5.3: English 0.997 at 1.2 s/page, Chinese (`chi_sim`) 0.957 at 2.2 s/page;
- RapidOCR (PP-OCRv4 in the `rapidocr-onnxruntime` wheel): English 0.78-0.84 (it runs words
  together: "JonathanMichaelHarrison"), Chinese 0.94-0.96, 5-10 s/page, plus ~60 MB of OpenCV.
Tesseract is run as a process per page with OMP_THREAD_LIMIT=1: its OpenMP threads made a page
6x slower on 2 cores (7.9 s vs 1.2 s). English is read first; a page read with a mean word
confidence under `RETRY_CONFIDENCE` (a Chinese page read as English scores ~28, an English one
~96) is read again as Chinese, and the reading with the higher confidence is kept.
"""

from __future__ import annotations

import csv
import functools
import io
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from rag.scripts import CJK
from rag.text import Text

logger = logging.getLogger("rag.documents")

_NO_SPACE = re.compile(f"[{CJK}\u3000-\u303f\uff00-\uffef]")
"""CJK characters and their full-width punctuation: no space between two of them."""

RETRY_CONFIDENCE = 70.0
DPI = 200
"""Resolution pages are rendered at for OCR (300 read no better on the probe and costs 2.2x pixels).
Re-measured for Chinese (issue #33, `bench --only documents`: 8 CMRC passages at 11 pt, character error
rate): scans of 150/200/300 dpi rendered at 200 read at 3.1/3.7/3.4%, their own pixels at 3.1/3.7/4.6%,
upscaled 2x before Tesseract 3.7/4.2% (worse: 20 pt text too, 1.9% -> 5.6%), chi_sim_vert 94% on
horizontal text, RapidOCR's PP-OCRv4 7.7-9.8% at 5x the time; English 0.1% at every dpi."""
TIMEOUT_SECONDS = 120.0
ENABLE_HINT = Text(
    "install Tesseract to read scanned pages: `apt-get install tesseract-ocr tesseract-ocr-eng "
    "tesseract-ocr-chi-sim` (make run and make test do it as root)"
)


@dataclass(frozen=True)
class OcrText:
    text: str
    confidence: float
    """Mean word confidence, 0-100."""
    language: str


class OcrUnavailable(RuntimeError):
    """Tesseract (or all of its languages we read) is not installed."""


@functools.cache
def languages() -> tuple[str, ...]:
    """The Tesseract languages we read that are installed, in the order they are tried ('eng',
    'chi_sim'); () without Tesseract."""
    binary = shutil.which("tesseract")
    if binary is None:
        return ()
    try:
        listed = subprocess.run([binary, "--list-langs"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        logger.info("tesseract --list-langs failed", exc_info=True)
        return ()
    have = {line.strip() for line in listed.splitlines()[1:]}
    return tuple(lang for lang in ("eng", "chi_sim") if lang in have)


def available() -> bool:
    return bool(languages())


def engine_name() -> str:
    return "Tesseract " + "+".join(languages()) if available() else Text("no OCR engine")


def read_image(png: bytes, prefer: str | None = None) -> OcrText:
    """The text of an image (PNG bytes), read in `prefer` first when given (the language the page
    before was read in: a scanned book is one language, and a Chinese page then costs one pass
    instead of two); raises OcrUnavailable without Tesseract."""
    langs = languages()
    if not langs:
        raise OcrUnavailable(ENABLE_HINT)
    if prefer in langs:
        langs = (prefer,) + tuple(lang for lang in langs if lang != prefer)
    best = _run(png, langs[0])
    if best.confidence < RETRY_CONFIDENCE and len(langs) > 1:
        other = _run(png, langs[1])
        if other.confidence > best.confidence:
            best = other
    return best


def _run(png: bytes, language: str) -> OcrText:
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    result = subprocess.run(
        ["tesseract", "stdin", "stdout", "-l", language, "--psm", "3", "tsv"],
        input=png,
        capture_output=True,
        timeout=TIMEOUT_SECONDS,
        env=env,
    )
    if result.returncode != 0:
        cause = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(f"tesseract failed: {cause[-1] if cause else result.returncode}")
    return _from_tsv(result.stdout.decode("utf-8", "replace"), language)


def _from_tsv(tsv: str, language: str) -> OcrText:
    rows = csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE)
    lines: list[str] = []
    confidences: list[float] = []
    current: tuple[str, str, str] | None = None
    paragraph: tuple[str, str] | None = None
    words: list[str] = []
    for row in rows:
        if row.get("level") != "5" or not (row.get("text") or "").strip():
            continue
        key = (row["block_num"], row["par_num"], row["line_num"])
        if key != current:
            if words:
                lines.append(_join(words))
            if paragraph is not None and key[:2] != paragraph:
                lines.append("")  # a blank line between paragraphs
            current, paragraph, words = key, key[:2], []
        words.append(row["text"].strip())
        try:
            confidences.append(float(row["conf"]))
        except ValueError:
            pass
    if words:
        lines.append(_join(words))
    confidence = sum(confidences) / len(confidences) if confidences else 0.0
    return OcrText("\n".join(lines).strip(), confidence, language)


def _join(words: list[str]) -> str:
    """Words of one line: Tesseract splits Chinese into pieces that must not get spaces between them."""
    out = words[0]
    for word in words[1:]:
        if _NO_SPACE.match(out[-1]) and _NO_SPACE.match(word[0]):
            out += word
        else:
            out += " " + word
    return out
