"""Turn an uploaded file (PDF, EPUB, XPS, TXT, MD) into numbered pages of plain text.

Every failure is a `DocumentError(filename, reason)` whose reason is one plain-English line,
because the app shows it to the user as is.
"""
from __future__ import annotations

import bisect
import hashlib
import logging
import os
from dataclasses import dataclass
from functools import cached_property
from typing import NoReturn

import pymupdf

from rag.errors import DocumentError

logger = logging.getLogger(__name__)

SUPPORTED_EXTENSIONS: tuple[str, ...] = (".pdf", ".epub", ".xps", ".txt", ".md")
PAGE_SEPARATOR = "\n\n"

_PDF_MAGIC = b"%PDF-"
_ZIP_MAGIC = b"PK\x03\x04"
# Readers accept a little junk before the header and after the end marker, so do we.
_PDF_HEADER_WINDOW = 1024
_PDF_TRAILER_WINDOW = 2048
_MAX_CAUSE_CHARS = 160

_LABELS = {"pdf": "PDF", "epub": "EPUB", "xps": "XPS", "txt": "TXT", "md": "MD"}
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


@dataclass(frozen=True)
class Page:
    number: int  # 1-based page number in the source file
    text: str


@dataclass(frozen=True)
class Document:
    filename: str  # the name as given (basename), used in every message
    kind: str  # "pdf" | "epub" | "xps" | "txt" | "md"
    pages: tuple[Page, ...]  # only pages with text, in order
    page_count: int  # pages in the source, including dropped empty ones
    dropped_pages: tuple[int, ...]  # numbers of pages that had no text (scanned?)
    warnings: tuple[str, ...] = ()  # one-line, user-facing

    # cached_property writes straight into __dict__, so it works on a frozen dataclass and
    # keeps the (possibly huge) text out of repr/eq.
    @cached_property
    def text(self) -> str:
        return PAGE_SEPARATOR.join(page.text for page in self.pages)

    @cached_property
    def page_starts(self) -> tuple[int, ...]:
        starts: list[int] = []
        offset = 0
        for page in self.pages:
            starts.append(offset)
            offset += len(page.text) + len(PAGE_SEPARATOR)
        return tuple(starts)

    def pages_for_span(self, start: int, end: int) -> tuple[int, ...]:
        """Page numbers whose text overlaps [start, end) of `text`.

        A span lying only on a separator maps to the page before it, and an empty span to
        the page it sits in, so every chunk gets at least one page.
        """
        if not 0 <= start <= end <= len(self.text):
            raise ValueError(f"span [{start}, {end}) is outside the text (length {len(self.text)})")
        starts = self.page_starts
        if not starts:
            return ()
        first = bisect.bisect_right(starts, start) - 1
        last = first if end == start else bisect.bisect_right(starts, end - 1) - 1
        # A span starting on the separator after `first` does not touch that page's text,
        # unless the separator is all it covers.
        if first < last and start >= starts[first] + len(self.pages[first].text):
            first += 1
        return tuple(page.number for page in self.pages[first : last + 1])


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_path(path: str | os.PathLike[str]) -> Document:
    """Read a file from disk and load it; the document is named after the file's basename."""
    path_str = os.fspath(path)
    filename = os.path.basename(path_str) or path_str
    # Reject unsupported types before reading a possibly large file for nothing.
    _kind_of(filename)
    try:
        with open(path_str, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        logger.debug("cannot read %r", path_str, exc_info=True)
        cause = exc.strerror or exc.__class__.__name__
        raise DocumentError(filename, f"cannot read the file ({cause})") from None
    return load_bytes(data, filename)


def load_bytes(data: bytes, filename: str) -> Document:
    """Parse `data` according to the extension of `filename`."""
    kind = _kind_of(filename)
    if not data:
        raise DocumentError(filename, "empty file (0 bytes)")
    if kind in ("txt", "md"):
        raw_pages = _decode_text(data, filename).split("\f")
        warnings: tuple[str, ...] = ()
    else:
        _check_magic(data, filename, kind)
        raw_pages, warnings = _extract_with_mupdf(data, filename, kind)

    pages: list[Page] = []
    dropped: list[int] = []
    for number, raw in enumerate(raw_pages, start=1):
        text = _normalise(raw)
        if text.strip():
            pages.append(Page(number, text))
        else:
            dropped.append(number)
    if not pages:
        if kind in ("txt", "md"):
            raise DocumentError(filename, "no text (the file is blank)")
        raise DocumentError(filename, "no extractable text, is it a scanned PDF?")

    document = Document(
        filename=filename,
        kind=kind,
        pages=tuple(pages),
        page_count=len(raw_pages),
        dropped_pages=tuple(dropped),
        warnings=warnings,
    )
    logger.debug(
        "loaded %r: %s, %d/%d pages with text, dropped %s",
        filename, kind, len(pages), len(raw_pages), dropped,
    )
    return document


def _kind_of(filename: str) -> str:
    extension = os.path.splitext(filename)[1].lower()
    if extension not in SUPPORTED_EXTENSIONS:
        shown = extension or "(no extension)"
        supported = ", ".join(_LABELS[ext.lstrip(".")] for ext in SUPPORTED_EXTENSIONS)
        raise DocumentError(filename, f"unsupported file type '{shown}' (supported: {supported})")
    return extension.lstrip(".")


def _check_magic(data: bytes, filename: str, kind: str) -> None:
    # MuPDF sniffs content and ignores `filetype` (a PNG opened as "pdf" becomes a one-page
    # image document), so the extension must be checked against the bytes ourselves.
    if kind == "pdf":
        if _PDF_MAGIC not in data[:_PDF_HEADER_WINDOW]:
            raise DocumentError(
                filename, "not a PDF file (its content does not start with %PDF-); is the extension wrong?"
            )
        # MuPDF would "repair" a cut-off PDF into whatever pages survived; an incomplete
        # upload should be re-sent instead of indexed partially.
        if b"%%EOF" not in data[-_PDF_TRAILER_WINDOW:]:
            raise DocumentError(filename, "truncated PDF (no end-of-file marker); the file is incomplete")
    elif not data.startswith(_ZIP_MAGIC):
        label = _LABELS[kind]
        raise DocumentError(
            filename, f"not an {label} file (its content is not a ZIP archive); is the extension wrong?"
        )


def _extract_with_mupdf(data: bytes, filename: str, kind: str) -> tuple[list[str], tuple[str, ...]]:
    label = _LABELS[kind]
    page_number = 0
    try:
        with pymupdf.open(stream=data, filetype=kind) as doc:
            if doc.needs_pass:
                raise DocumentError(
                    filename, f"password-protected {label}: remove the password and try again"
                )
            if doc.page_count == 0:
                raise DocumentError(filename, f"corrupt or unreadable {label}: it has no pages")
            texts: list[str] = []
            for page_number in range(1, doc.page_count + 1):
                texts.append(doc.load_page(page_number - 1).get_text("text"))
            # Read after extraction: MuPDF also repairs lazily, when a page refers to an
            # object that the xref places wrongly.
            repaired = doc.is_repaired
    except DocumentError:
        raise
    except Exception as exc:  # pymupdf raises FileDataError, FzError*, ValueError, RuntimeError...
        where = f"page {page_number}: " if page_number else ""
        logger.debug("MuPDF failed on %r (%s)", filename, where or "open", exc_info=True)
        raise DocumentError(filename, f"corrupt or unreadable {label}: {where}{_short_cause(exc)}") from None
    if repaired:
        # info, not warning: the user already sees it in Document.warnings.
        logger.info("MuPDF repaired %r while reading it", filename)
        return texts, ("MuPDF repaired a damaged xref; some text may be missing or out of order",)
    return texts, ()


def _decode_text(data: bytes, filename: str) -> str:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _decode_or_fail(data, len(bom), encoding, filename)
    # Without a BOM only UTF-8 is accepted: a NUL byte means UTF-16 without BOM or a binary
    # file, and Python's UTF-8 codec would let it through.
    nul = data.find(b"\x00")
    text = _decode_or_fail(data, 0, "utf-8", filename, limit=nul if nul >= 0 else None)
    if nul >= 0:
        _fail_decoding(filename, data, nul)
    return text


def _decode_or_fail(data: bytes, skip: int, encoding: str, filename: str, limit: int | None = None) -> str:
    try:
        return data[skip:limit].decode(encoding)
    except UnicodeDecodeError as exc:
        _fail_decoding(filename, data, skip + exc.start)


def _fail_decoding(filename: str, data: bytes, offset: int) -> NoReturn:
    raise DocumentError(
        filename,
        f"not UTF-8 or UTF-16 text (invalid byte 0x{data[offset]:02x} at offset {offset}); save it as UTF-8",
    )


def _normalise(text: str) -> str:
    # PostgreSQL text columns reject NUL, and chunk offsets must not depend on line endings.
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").rstrip()


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
