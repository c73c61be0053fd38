"""Turn an uploaded file (PDF, EPUB, XPS, TXT, MD) into numbered pages of plain text.

Every failure is a `DocumentError(filename, reason)` whose reason is one plain-English line,
because the app shows it to the user as is.
"""
from __future__ import annotations

import hashlib
import logging
import os

from rag.documents.model import KIND_LABELS, Document, Page
from rag.documents.text import decode_text
from rag.errors import DocumentError

logger = logging.getLogger("rag.documents")

SUPPORTED_EXTENSIONS: tuple[str, ...] = (".pdf", ".epub", ".xps", ".txt", ".md")

_PDF_MAGIC = b"%PDF-"
_ZIP_MAGIC = b"PK\x03\x04"
# Readers accept a little junk before the header and after the end marker, so do we.
_PDF_HEADER_WINDOW = 1024
_PDF_TRAILER_WINDOW = 2048


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
        raw_pages = decode_text(data, filename).split("\f")
        warnings: tuple[str, ...] = ()
    else:
        _check_magic(data, filename, kind)
        from rag.documents import mupdf  # pymupdf: imported only for the formats that need it

        raw_pages, warnings = mupdf.extract_pages(data, filename, kind)

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
        supported = ", ".join(KIND_LABELS[ext.lstrip(".")] for ext in SUPPORTED_EXTENSIONS)
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
        label = KIND_LABELS[kind]
        raise DocumentError(
            filename, f"not an {label} file (its content is not a ZIP archive); is the extension wrong?"
        )



def _normalise(text: str) -> str:
    # PostgreSQL text columns reject NUL, and chunk offsets must not depend on line endings.
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").rstrip()
