"""Generate real PDF, EPUB and XPS files in memory for tests (no fixtures on disk, no network).

Plain functions returning bytes, so any test module can import them.
"""
from __future__ import annotations

import html
import io
import zipfile
from xml.sax.saxutils import quoteattr

import pymupdf

_PAGE_RECT = pymupdf.Rect(72, 72, 523, 770)  # A4 minus one-inch margins


def make_pdf(pages: list[str], *, fontname: str = "helv", fontsize: float = 11) -> bytes:
    """A PDF with one page per string; an empty string gives a blank page.

    `fontname` is a built-in font: Base-14 ("helv", "tiro", "cour") or CJK ("china-s",
    "china-t", "japan", "korea"), the latter backed by MuPDF's Droid Sans Fallback.
    """
    with pymupdf.open() as doc:
        for text in pages:
            page = doc.new_page()
            if text:
                # insert_textbox silently drops what does not fit and says so by a negative
                # return; a test must never run on less text than it thinks.
                left = page.insert_textbox(_PAGE_RECT, text, fontname=fontname, fontsize=fontsize)
                if left < 0:
                    raise ValueError(f"text does not fit on one page: {text[:40]!r}...")
        return doc.tobytes()


def make_encrypted_pdf(
    pages: list[str] | None = None, *, user_password: str = "secret", owner_password: str = "owner"
) -> bytes:
    """An AES-256 PDF; with a non-empty user password it cannot be opened without it."""
    with pymupdf.open(stream=make_pdf(pages or ["Top secret text."]), filetype="pdf") as doc:
        return doc.tobytes(
            encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=user_password, owner_pw=owner_password
        )


def make_truncated_pdf(pages: list[str] | None = None) -> bytes:
    """A real PDF cut in half, like an interrupted upload."""
    data = make_pdf(pages or ["First page of a long report.", "Second page.", "Third page."])
    cut = data[: len(data) // 2]
    if b"%%EOF" in cut:
        raise ValueError("cut PDF still holds an end-of-file marker")
    return cut


def make_damaged_xref_pdf(pages: list[str] | None = None) -> bytes:
    """A PDF whose startxref points to the wrong place, so MuPDF must rebuild the xref."""
    data = make_pdf(pages or ["Text that survives a repair."])
    head, sep, tail = data.rpartition(b"startxref\n")
    if not sep:
        raise ValueError("no startxref in generated PDF")
    offset, _, rest = tail.partition(b"\n")
    return head + sep + b"5".rjust(len(offset)) + b"\n" + rest


def make_misplaced_object_pdf(pages: list[str] | None = None) -> bytes:
    """A PDF whose xref is intact except one wrong object offset (the first page's).

    MuPDF opens it without complaint and repairs only when the page is read.
    """
    data = make_pdf(pages or ["Page read after a late repair.", "Second page."])
    lines = data.split(b"\n")
    xref = lines.index(b"xref")
    # Entries follow "xref" and the "0 N" subsection header, one row per object number.
    row = xref + 2 + _first_page_xref(data)
    offset, rest = lines[row][:10], lines[row][10:]
    lines[row] = b"%010d" % (int(offset) + 3) + rest
    return b"\n".join(lines)


def _first_page_xref(data: bytes) -> int:
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        return doc.page_xref(0)


def make_png(width: int = 32, height: int = 32) -> bytes:
    """A solid-colour PNG."""
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pixmap.clear_with(180)
    return pixmap.tobytes("png")


def make_image_only_pdf() -> bytes:
    """One page with an embedded image and a filled rectangle, but no text: like a scan."""
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_image(pymupdf.Rect(72, 72, 272, 272), stream=make_png())
        page.draw_rect(pymupdf.Rect(300, 300, 500, 400), color=(1, 0, 0), fill=(0, 0, 1))
        return doc.tobytes()


_CONTAINER_XML = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
    '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>"
)


def make_epub(chapters: list[str], *, title: str = "Test book") -> bytes:
    """A minimal valid EPUB 3: one XHTML file per chapter, blank lines separate paragraphs.

    MuPDF lays chapters out on pages and starts each chapter on a new page, so a short
    chapter is exactly one page.
    """
    ids = [f"ch{i}" for i in range(1, len(chapters) + 1)]
    manifest = "".join(
        f'<item id="{cid}" href="{cid}.xhtml" media-type="application/xhtml+xml"/>' for cid in ids
    )
    spine = "".join(f'<itemref idref="{cid}"/>' for cid in ids)
    opf = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="bookid">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="bookid">urn:uuid:00000000-0000-4000-8000-000000000000</dc:identifier>'
        f"<dc:title>{html.escape(title)}</dc:title><dc:language>en</dc:language>"
        '<meta property="dcterms:modified">2024-01-01T00:00:00Z</meta></metadata>'
        '<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        f"{manifest}</manifest><spine>{spine}</spine></package>"
    )
    toc = "".join(f'<li><a href="{cid}.xhtml">Chapter {i}</a></li>' for i, cid in enumerate(ids, 1))
    nav = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
        f'<head><title>Contents</title></head><body><nav epub:type="toc"><ol>{toc}</ol></nav></body></html>'
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        # The OCF spec requires "mimetype" first and uncompressed, so readers can sniff it.
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", _CONTAINER_XML)
        archive.writestr("OEBPS/content.opf", opf)
        archive.writestr("OEBPS/nav.xhtml", nav)
        for cid, text in zip(ids, chapters):
            body = "".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n\n") if p)
            archive.writestr(
                f"OEBPS/{cid}.xhtml",
                '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{cid}</title></head><body>{body}</body></html>",
            )
    return buffer.getvalue()


_XPS_NS = "http://schemas.microsoft.com/xps/2005/06"
_XPS_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="fdseq" ContentType="application/vnd.ms-package.xps-fixeddocumentsequence+xml"/>'
    '<Default Extension="fdoc" ContentType="application/vnd.ms-package.xps-fixeddocument+xml"/>'
    '<Default Extension="fpage" ContentType="application/vnd.ms-package.xps-fixedpage+xml"/>'
    '<Default Extension="otf" ContentType="application/vnd.ms-opentype"/>'
    "</Types>"
)
_XPS_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="R0" Type="http://schemas.microsoft.com/xps/2005/06/fixedrepresentation"'
    ' Target="/FixedDocSeq.fdseq"/></Relationships>'
)


def make_xps(pages: list[str]) -> bytes:
    """An XPS package with one FixedPage per string, one Glyphs run per line.

    PyMuPDF reads XPS but cannot write it (no XPS document writer in MuPDF), so the package
    is assembled with zipfile, like the EPUB. XPS text needs an embedded font; MuPDF's
    built-in Helvetica (bare CFF) is embedded, which MuPDF's FreeType loader accepts.
    """
    font = bytes(pymupdf.Font("helv").buffer)
    contents = "".join(
        f'<PageContent Source="/Documents/1/Pages/{n}.fpage"/>' for n in range(1, len(pages) + 1)
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _XPS_CONTENT_TYPES)
        archive.writestr("_rels/.rels", _XPS_RELS)
        archive.writestr(
            "FixedDocSeq.fdseq",
            f'<FixedDocumentSequence xmlns="{_XPS_NS}">'
            '<DocumentReference Source="/Documents/1/FixedDoc.fdoc"/></FixedDocumentSequence>',
        )
        archive.writestr("Documents/1/FixedDoc.fdoc", f'<FixedDocument xmlns="{_XPS_NS}">{contents}</FixedDocument>')
        archive.writestr("Resources/Fonts/helv.otf", font)
        for n, text in enumerate(pages, start=1):
            glyphs = "".join(
                '<Glyphs FontUri="/Resources/Fonts/helv.otf" FontRenderingEmSize="12" Fill="#FF000000"'
                f' OriginX="96" OriginY="{96 + 18 * row}" UnicodeString={quoteattr(_xps_unicode(line))}/>'
                for row, line in enumerate(text.splitlines())
                if line
            )
            archive.writestr(
                f"Documents/1/Pages/{n}.fpage",
                f'<FixedPage xmlns="{_XPS_NS}" Width="816" Height="1056" xml:lang="en-US">{glyphs}</FixedPage>',
            )
    return buffer.getvalue()


def _xps_unicode(line: str) -> str:
    # In XPS a UnicodeString starting with "{" is markup; "{}" escapes it.
    return "{}" + line if line.startswith("{") else line


def make_docx(paragraphs: list[str]) -> bytes:
    """A minimal Word document (the three parts Word needs: content types, the package relation and
    word/document.xml with one paragraph per string)."""
    import io
    import zipfile
    from xml.sax.saxutils import escape

    body = "".join(f"<w:p><w:r><w:t xml:space=\"preserve\">{escape(p)}</w:t></w:r></w:p>" for p in paragraphs)
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'),
        "_rels/.rels": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships/officeDocument" Target="word/document.xml"/></Relationships>'),
        "word/document.xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            f"<w:body>{body}</w:body></w:document>"),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in parts.items():
            z.writestr(name, text)
    return out.getvalue()
