"""Turn an uploaded file into numbered pages of plain text: PDF, EPUB, XPS (MuPDF, with OCR of
scanned pages), Word, PowerPoint, Excel (office.py), web pages and CSV (web.py), TXT and MD.

Every failure is a `DocumentError(filename, reason)` whose reason is one plain-English line,
because the app shows it to the user as is; the reason is a `rag.text.Text`, so the app can show
it in the user's language (ui/zh_lib/documents.py).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import zipfile

from rag.documents.model import KIND_LABELS, Document, Page, Progress
from rag.documents.text import decode_text
from rag.errors import DocumentError
from rag.text import Text

logger = logging.getLogger("rag.documents")

SUPPORTED_EXTENSIONS: tuple[str, ...] = (
    ".pdf",
    ".epub",
    ".xps",
    ".docx",
    ".pptx",
    ".xlsx",
    ".xls",
    ".html",
    ".htm",
    ".csv",
    ".txt",
    ".md",
)
_MUPDF = ("pdf", "epub", "xps")
_OOXML = {"docx": "word/", "pptx": "ppt/", "xlsx": "xl/"}
"""The folder every Word, PowerPoint, Excel package has: a ZIP without it is not that format."""
_CFB_MAGIC = bytes.fromhex("d0cf11e0a1b11ae1")
"""OLE compound file: .xls/.doc/.ppt, and the wrapper Office puts around a password-protected
.docx/.xlsx/.pptx."""
READERS = {
    "pdf": "MuPDF",
    "epub": "MuPDF",
    "xps": "MuPDF",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "xlsx": "openpyxl",
    "xls": "xlrd",
    "html": "trafilatura",
    "htm": "trafilatura",
    "csv": "csv",
    "txt": "text",
    "md": "text",
}

READ_TYPES = Text(
    "PDF, EPUB, XPS, Word (.docx), PowerPoint (.pptx), Excel (.xlsx, .xls), web pages (.html, .htm), "
    "CSV, TXT and Markdown"
)
"""The file types that are read, in words."""


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
        raise DocumentError(filename, Text("cannot read the file ({cause})", cause=cause)) from None
    return load_bytes(data, filename)


def load_bytes(data: bytes, filename: str, progress: Progress | None = None) -> Document:
    """Parse `data` according to the extension of `filename`; `progress` hears about each page of
    a PDF (OCR is slow)."""
    kind = _kind_of(filename)
    if not data:
        raise DocumentError(filename, Text("empty file (0 bytes)"))
    warnings: tuple[str, ...] = ()
    reader = READERS[kind]
    scanned = 0
    first_lines: tuple[int, ...] = ()
    if kind in ("txt", "md"):
        pages, count, first_lines = _text_pages(decode_text(data, filename).split("\f"))
    elif kind in _MUPDF:
        _check_magic(data, filename, kind)
        from rag.documents import mupdf  # pymupdf: imported only for the formats that need it

        extracted = mupdf.extract_pages(data, filename, kind, progress)
        pages, count = _numbered([p.text for p in extracted.pages], [p.ocr for p in extracted.pages])
        warnings, reader, scanned = extracted.warnings, extracted.reader, extracted.scanned
    else:
        read, count = _read_other(data, filename, kind)
        pages = [Page(p.number, text, p.title) for p in read if (text := _normalise(p.text)).strip()]
    numbers = {p.number for p in pages}
    # A text file's blank part (between two form feeds) holds nothing that could not be read.
    dropped = [n for n in range(1, count + 1) if n not in numbers] if kind in _MUPDF else []
    if not pages:
        raise DocumentError(filename, _nothing_read(kind, scanned))

    document = Document(
        filename=filename,
        kind=kind,
        pages=tuple(pages),
        page_count=count,
        dropped_pages=tuple(dropped),
        warnings=warnings,
        reader=reader,
        first_lines=first_lines,
    )
    logger.debug(
        "loaded %r: %s, %d/%d pages with text, dropped %s",
        filename,
        kind,
        len(pages),
        count,
        dropped,
    )
    return document


def _numbered(texts: list[str], confidences: list[float | None] | None = None) -> tuple[list[Page], int]:
    pages = []
    for number, raw in enumerate(texts, start=1):
        text = _normalise(raw)
        if text.strip():
            pages.append(Page(number, text, ocr=confidences[number - 1] if confidences else None))
    return pages, len(texts)


def _text_pages(parts: list[str]) -> tuple[list[Page], int, tuple[int, ...]]:
    """A text file's form-feed-separated parts as pages: (pages with text, parts in all up to the last
    with text, the file line each page starts on). A form feed is no line break, and a part's trailing
    blank lines, cut off from its page, still count; the blank end after a last form feed is no page.
    (Given the parts, not the text: the whole text is not kept meanwhile.)"""
    pages: list[Page] = []
    first_lines: list[int] = []
    line = 1
    for number, raw in enumerate(parts, start=1):
        unified = _unify(raw)
        newlines = unified.count("\n")
        if unified and not unified.isspace():  # (strip() would copy a 200 MB text to tell)
            pages.append(Page(number, unified.rstrip()))
            first_lines.append(line)
        line += newlines
    return pages, pages[-1].number if pages else len(parts), tuple(first_lines)


def _nothing_read(kind: str, scanned: int) -> Text:
    if kind in ("txt", "md"):
        return Text("no text (the file is blank)")
    if kind in _MUPDF:
        from rag.documents import ocr

        if not scanned:
            return Text("no extractable text: its pages hold neither text nor a scanned page image")
        if not ocr.available():
            return Text(
                "no extractable text: its pages are scanned images and no OCR engine is installed ({hint})",
                hint=ocr.ENABLE_HINT,
            )
        return Text("no text: OCR found none on its scanned pages")
    return Text("no text: the {kind} file holds no text (only images, or nothing)", kind=KIND_LABELS[kind])


def _read_other(data: bytes, filename: str, kind: str) -> tuple[list[Page], int]:
    """Office, web and CSV files: (pages with their numbers and titles, pages in the source)."""
    label = KIND_LABELS[kind]
    if kind in _OOXML:
        _check_ooxml(data, filename, kind)
    elif kind == "xls" and not data.startswith(_CFB_MAGIC):
        raise DocumentError(filename, Text("not an Excel 97-2003 file (no OLE header); is the extension wrong?"))
    try:
        if kind in ("html", "htm"):
            from rag.documents import web

            pages = web.read_html(data, filename)
            return pages, len(pages)
        if kind == "csv":
            from rag.documents import web

            pages = web.read_csv(decode_text(data, filename))
            return pages, len(pages)
        from rag.documents import office

        if kind == "docx":
            pages = office.read_docx(data)
            return pages, len(pages)
        if kind == "pptx":
            return office.read_pptx(data)
        if kind == "xlsx":
            return office.read_xlsx(data)
        return office.read_xls(data)
    except DocumentError:
        raise
    except MemoryError:
        raise DocumentError(filename, Text("the {kind} file is too large to read in memory", kind=label)) from None
    except Exception as exc:  # the readers raise KeyError, BadZipFile, XLRDError, lxml errors, ...
        logger.debug("%s reader failed on %r", label, filename, exc_info=True)
        cause = " ".join(str(exc).split())[:160] or exc.__class__.__name__
        if "encrypted" in cause.lower() or "password" in cause.lower():
            raise DocumentError(
                filename, Text("password-protected {kind} file: remove the password and try again", kind=label)
            ) from None
        raise DocumentError(
            filename, Text("corrupt or unreadable {kind} file: {cause}", kind=label, cause=cause)
        ) from None


def _check_ooxml(data: bytes, filename: str, kind: str) -> None:
    label = KIND_LABELS[kind]
    if data.startswith(_CFB_MAGIC):
        # Office wraps an encrypted package in a compound file with EncryptionInfo/EncryptedPackage streams.
        if "Encrypt".encode("utf-16-le") in data[: 1 << 20]:
            raise DocumentError(
                filename,
                Text(
                    "password-protected {kind} file: remove the password (File › Info › Protect) and save it again",
                    kind=label,
                ),
            )
        old = {"docx": ".doc", "pptx": ".ppt", "xlsx": ".xls"}[kind]
        if kind == "xlsx":
            raise DocumentError(
                filename,
                Text(
                    "an old binary Office file ({old}) named .{ext}: save it as .{ext} "
                    "in {kind} first, or rename it to .xls",
                    old=old,
                    ext=kind,
                    kind=label,
                ),
            )
        raise DocumentError(
            filename,
            Text(
                "an old binary Office file ({old}) named .{ext}: save it as .{ext} in {kind} first",
                old=old,
                ext=kind,
                kind=label,
            ),
        )
    if not data.startswith(_ZIP_MAGIC):
        raise DocumentError(filename, _not_zip(label))
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            broken = archive.testzip()
    except (zipfile.BadZipFile, EOFError, ValueError):
        raise DocumentError(
            filename,
            Text(
                "truncated or damaged {kind} file (its ZIP archive cannot be read); the file is incomplete", kind=label
            ),
        ) from None
    if broken is not None:
        raise DocumentError(filename, Text("damaged {kind} file: its part {part} is corrupt", kind=label, part=broken))
    if "[Content_Types].xml" not in names or not any(n.startswith(_OOXML[kind]) for n in names):
        values = {"kind": label, "part": _OOXML[kind], "ext": kind}
        raise DocumentError(
            filename,
            Text("not an {kind} file: a ZIP archive without the {part} part every .{ext} has", **values)
            if _an(label)
            else Text("not a {kind} file: a ZIP archive without the {part} part every .{ext} has", **values),
        )


def _an(label: str) -> bool:
    return label[0] in "AEIOX"  # an Excel, an XPS, an EPUB; a Word, a PowerPoint


def _not_zip(label: str) -> Text:
    if _an(label):
        return Text("not an {kind} file (its content is not a ZIP archive); is the extension wrong?", kind=label)
    return Text("not a {kind} file (its content is not a ZIP archive); is the extension wrong?", kind=label)


def _kind_of(filename: str) -> str:
    extension = os.path.splitext(filename)[1].lower()
    if extension not in SUPPORTED_EXTENSIONS:
        shown = extension or Text("(no extension)")
        raise DocumentError(
            filename,
            Text("unsupported file type '{extension}' (supported: {types})", extension=shown, types=READ_TYPES),
        )
    return extension.lstrip(".")


def _check_magic(data: bytes, filename: str, kind: str) -> None:
    # MuPDF sniffs content and ignores `filetype` (a PNG opened as "pdf" becomes a one-page
    # image document), so the extension must be checked against the bytes ourselves.
    if kind == "pdf":
        if _PDF_MAGIC not in data[:_PDF_HEADER_WINDOW]:
            raise DocumentError(
                filename, Text("not a PDF file (its content does not start with %PDF-); is the extension wrong?")
            )
        # MuPDF would "repair" a cut-off PDF into whatever pages survived; an incomplete
        # upload should be re-sent instead of indexed partially.
        if b"%%EOF" not in data[-_PDF_TRAILER_WINDOW:]:
            raise DocumentError(filename, Text("truncated PDF (no end-of-file marker); the file is incomplete"))
    elif not data.startswith(_ZIP_MAGIC):
        raise DocumentError(filename, _not_zip(KIND_LABELS[kind]))


def _normalise(text: str) -> str:
    return _unify(text).rstrip()


def _unify(text: str) -> str:
    # PostgreSQL text columns reject NUL, and chunk offsets must not depend on line endings.
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
