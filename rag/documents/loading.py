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
import re
import struct
import zipfile
import zlib

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
        refused = _refusal(exc, label)
        if refused is not None:
            raise DocumentError(filename, refused) from None
        cause = " ".join(str(exc).split())[:160] or exc.__class__.__name__
        if "encrypted" in cause.lower() or "password" in cause.lower():
            raise DocumentError(
                filename, Text("password-protected {kind} file: remove the password and try again", kind=label)
            ) from None
        raise DocumentError(
            filename, Text("corrupt or unreadable {kind} file: {cause}", kind=label, cause=cause)
        ) from None


_ENTITY_BOMB = ("amplification factor", "entity reference loop", "huge text node", "huge input lookup")
"""What libxml2 says when it stops an entity expansion (a "billion laughs")."""
_BAD_CRC = re.compile(r"Bad CRC-32 for file '(.+)'")


def _refusal(exc: BaseException, label: str) -> Text | None:
    """What a reader's failure refused, in words, when it is a known attack or damage rather than a file
    the reader cannot make sense of: its message and those it was raised from (openpyxl wraps them)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        message = str(current)
        if any(marker in message.lower() for marker in _ENTITY_BOMB):
            return Text('refused: its XML entities expand to far more text than the file holds (a "billion laughs")')
        if type(current).__name__ in ("EntitiesForbidden", "DTDForbidden", "ExternalReferenceForbidden"):
            return Text("refused: its XML declares entities, which Office never writes (an XML entity attack)")
        crc = _BAD_CRC.search(message)
        if crc:
            return Text("damaged {kind} file: its part {part} is corrupt", kind=label, part=crc.group(1))
        current = current.__cause__ or current.__context__
    return None


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
            members = archive.infolist()
    except (zipfile.BadZipFile, EOFError, ValueError):
        raise DocumentError(
            filename,
            Text(
                "truncated or damaged {kind} file (its ZIP archive cannot be read); the file is incomplete", kind=label
            ),
        ) from None
    names = [m.filename for m in members]
    # The sizes the archive declares, checked before a byte is unpacked (`testzip` unpacked every part to
    # check it: gigabytes for a bomb), then what the parts really unpack to, read a MB at a time.
    refused = _unpack_limits(members, kind) or _beyond_declared(data, members)
    if refused is not None:
        raise DocumentError(filename, refused)
    if "[Content_Types].xml" not in names or not any(n.startswith(_OOXML[kind]) for n in names):
        values = {"kind": label, "part": _OOXML[kind], "ext": kind}
        raise DocumentError(
            filename,
            Text("not an {kind} file: a ZIP archive without the {part} part every .{ext} has", **values)
            if _an(label)
            else Text("not a {kind} file: a ZIP archive without the {part} part every .{ext} has", **values),
        )


MAX_UNPACKED_BYTES = 1_000_000_000
"""The most an Office file may unpack to. Real ones unpack to 10-31 times their size (measured: a python-docx
report, openpyxl sheets of 200,000 rows), so a 200 MB upload (server.maxUploadSize) of ordinary content stays
within it or near; the bombs of issue 33 declared 2.2 GB and more from 6.4 MB."""
MAX_TREE_XML_BYTES = 200_000_000
"""The most XML a .docx or .pptx may unpack to: python-docx and python-pptx parse each part whole, at ~11 bytes
of memory per byte of XML (a 17.9 MB document.xml of 200,000 paragraphs peaked 194 MB above the start), so this
is ~2.2 GB of memory. (openpyxl streams a large .xlsx: its sheets are bounded by MAX_UNPACKED_BYTES.)"""
MAX_RATIO = 100
"""The most a large part may unpack to per byte packed. DEFLATE gives 1,032 at most; real parts give 10-31 (a
sheet of 200,000 rows of the same five numbers 15), a bomb's hundreds (the 2.2 GB .docx of issue 33: 344)."""
RATIO_FROM_BYTES = 10_000_000
"""Parts that unpack to less are not held to MAX_RATIO: 50,000 empty paragraphs compress 295 to 1 in a
300 KB document.xml, and a small part costs nothing however well it compresses."""


def _unpack_limits(members: list[zipfile.ZipInfo], kind: str) -> Text | None:
    """Why an Office file's ZIP archive is refused by the sizes it declares (a ZIP bomb), or None."""
    total = sum(m.file_size for m in members)
    if total > MAX_UNPACKED_BYTES:
        return Text(
            "unpacks to {size}: over the limit of {limit}",
            size=size_words(total),
            limit=size_words(MAX_UNPACKED_BYTES),
        )
    for member in members:
        if member.file_size >= RATIO_FROM_BYTES and member.file_size > MAX_RATIO * max(member.compress_size, 1):
            return Text(
                "its part {part} unpacks to {size} from {packed} ({ratio} times): over the limit of {limit} times",
                part=member.filename,
                size=size_words(member.file_size),
                packed=size_words(member.compress_size),
                ratio=f"{member.file_size // max(member.compress_size, 1):,}",
                limit=MAX_RATIO,
            )
    if kind in ("docx", "pptx"):
        xml = sum(m.file_size for m in members if m.filename.lower().endswith((".xml", ".rels")))
        if xml > MAX_TREE_XML_BYTES:
            return Text(
                "its XML unpacks to {size}: over the limit of {limit} that can be read in memory",
                size=size_words(xml),
                limit=size_words(MAX_TREE_XML_BYTES),
            )
    return None


_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")


def _beyond_declared(data: bytes, members: list[zipfile.ZipInfo]) -> Text | None:
    """Why a part is refused for unpacking to more than the archive declares, or None.

    The readers read a part whole (`ZipFile.read`), and zipfile then inflates up to 2 GB in one call before
    it cuts the output at the declared size: a part declaring 1 MB and holding 2.2 GB took 2.2 GB of memory
    (issue 33). Inflating each part here a MB at a time, and stopping a MB past its declared size, bounds
    that; an honest file costs one more inflate of what it holds, far below what parsing it costs (0.8 ms a
    MB: 15 ms for the 17.9 MB document.xml of 200,000 paragraphs that python-docx reads in 17 s)."""
    view = memoryview(data)
    for member in members:
        if member.compress_type == zipfile.ZIP_STORED or member.flag_bits & 0x1:
            continue  # stored: read as declared; encrypted: the reader says so
        if member.compress_type != zipfile.ZIP_DEFLATED:
            return Text(
                "its part {part} is compressed by method {method}, which Office never uses",
                part=member.filename,
                method=member.compress_type,
            )
        start = member.header_offset
        try:
            header = _LOCAL_HEADER.unpack_from(view, start)
        except struct.error:
            return None  # the reader fails it as damaged
        start += _LOCAL_HEADER.size + header[9] + header[10]
        inflater = zlib.decompressobj(-15)
        packed = view[start : start + member.compress_size]
        unpacked = 0
        try:
            # 64 KB of input at a time: what is left of it (`unconsumed_tail`, a copy) stays small.
            for offset in range(0, len(packed), 1 << 16):
                piece: bytes | memoryview = packed[offset : offset + (1 << 16)]
                while piece and not inflater.eof:
                    unpacked += len(inflater.decompress(piece, 1 << 20))
                    if unpacked > member.file_size:
                        return Text(
                            "its part {part} unpacks to more than the {size} it declares",
                            part=member.filename,
                            size=size_words(member.file_size),
                        )
                    piece = inflater.unconsumed_tail
                if inflater.eof:
                    break
        except zlib.error:
            return None  # damaged: the reader says so
    return None


def size_words(count: int) -> str:
    """A byte count for people, in decimal units: '2.2 GB', '6.4 MB', '40 KB', '512 bytes'."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= scale:
            shown = count / scale
            return f"{shown:.1f} {unit}".replace(".0 ", " ") if shown < 100 else f"{shown:.0f} {unit}"
    return f"{count} bytes"


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
