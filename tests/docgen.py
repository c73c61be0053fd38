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
        return doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=user_password, owner_pw=owner_password)


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


def make_repeated_stream_pdf(pages: int = 15, repeats: int = 200) -> bytes:
    """A small PDF whose pages all draw one content stream that repeats a text block `repeats` times:
    ~20 KB of file, ~1.5 million characters a page (the memory bomb of issue 18)."""
    doc = pymupdf.open()
    doc.new_page().insert_text((40, 40), "\n".join(["lorem ipsum dolor sit amet " * 3] * 60), fontsize=3)
    for _ in range(pages - 1):
        doc.new_page()
    shared = doc[0].get_contents()[0]
    doc.update_stream(shared, doc.xref_stream(shared) * repeats)
    for number in range(1, pages):
        doc.xref_set_key(doc[number].xref, "Contents", f"{shared} 0 R")
    data = doc.tobytes(garbage=1, deflate=True)
    doc.close()
    return data


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
    manifest = "".join(f'<item id="{cid}" href="{cid}.xhtml" media-type="application/xhtml+xml"/>' for cid in ids)
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
    contents = "".join(f'<PageContent Source="/Documents/1/Pages/{n}.fpage"/>' for n in range(1, len(pages) + 1))
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

    body = "".join(f'<w:p><w:r><w:t xml:space="preserve">{escape(p)}</w:t></w:r></w:p>' for p in paragraphs)
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
        ),
        "_rels/.rels": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships/officeDocument" Target="word/document.xml"/></Relationships>'
        ),
        "word/document.xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            f"<w:body>{body}</w:body></w:document>"
        ),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in parts.items():
            z.writestr(name, text)
    return out.getvalue()


def make_scan_pdf(pages: list[str], *, fontname: str = "helv", fontsize: float = 12, dpi: int = 150) -> bytes:
    """A scanned document: each page of text rendered to a grey image at `dpi`, and the images put
    into a new PDF, one per page, with no text layer (what a scanner writes)."""
    with (
        pymupdf.open(stream=make_pdf(pages, fontname=fontname, fontsize=fontsize), filetype="pdf") as source,
        pymupdf.open() as scan,
    ):
        for page in source:
            png = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).tobytes("png")
            target = scan.new_page(width=page.rect.width, height=page.rect.height)
            target.insert_image(target.rect, stream=png)
        return scan.tobytes()


def make_table_pdf(intro: str, rows: list[list[str]], *, ruled: bool = True) -> bytes:
    """A PDF page with a paragraph and a table drawn below it (grid lines when `ruled`)."""
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 523, 160), intro, fontname="helv", fontsize=11)
        widths = [120, 160, 120]
        top, height = 180, 22
        for r, row in enumerate(rows):
            x = 72
            for c, cell in enumerate(row):
                box = pymupdf.Rect(x, top + r * height, x + widths[c], top + (r + 1) * height)
                if ruled:
                    page.draw_rect(box, color=(0, 0, 0), width=0.6)
                page.insert_text((box.x0 + 4, box.y1 - 7), cell, fontname="helv", fontsize=10)
                x += widths[c]
        return doc.tobytes()


def make_real_docx() -> bytes:
    """A Word report made by python-docx: a title, headings, a table, a text box-free body, a
    header, a footer and a comment."""
    import io

    import docx

    d = docx.Document()
    d.sections[0].header.paragraphs[0].text = "ACME Confidential"
    d.sections[0].footer.paragraphs[0].text = "Prepared by the finance team"
    d.add_heading("Annual Report 2023", 0)
    d.add_heading("Results", 1)
    para = d.add_paragraph("Revenue grew 12% in 2023, driven by the Falcon product line.")
    d.add_comment(para.runs, text="Check the 12% against the audited figures", author="Li Wei")
    d.add_heading("Price list", 2)
    table = d.add_table(rows=3, cols=2)
    for r, (sku, price) in enumerate([("SKU", "Price"), ("SKU-6678", "$42,000.00"), ("SKU-1020", "$9,500.00")]):
        table.cell(r, 0).text, table.cell(r, 1).text = sku, price
    d.add_heading("Outlook", 1)
    d.add_paragraph("We expect the Osprey launch to open the Asian market in 2024.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def make_pptx() -> bytes:
    """A deck made by python-pptx: a title slide with speaker notes, a slide with a text box,
    a table and a chart with a title."""
    import io

    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Quarterly review"
    first.placeholders[1].text = "Bookings reached 3.4 million euros"
    first.notes_slide.notes_text_frame.text = "Thank the Lisbon office for the Vasco deal"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Regions"
    box = second.shapes.add_textbox(Inches(0.5), Inches(1.5), Inches(4), Inches(0.8))
    box.text_frame.text = "The Nordic region doubled its pipeline"
    shape = second.shapes.add_table(2, 2, Inches(0.5), Inches(2.5), Inches(4), Inches(1))
    for r, row in enumerate([("Region", "Pipeline"), ("Nordic", "1.9 million")]):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("Bookings", (1.2, 3.4))
    chart = second.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(5), Inches(1.5), Inches(4), Inches(3), data
    ).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Bookings by quarter"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_xlsx(*, password: str | None = None) -> bytes:
    """A workbook made by openpyxl: sheets 'Sales' (with a cell comment) and 'Costs'."""
    import io

    import openpyxl
    from openpyxl.comments import Comment

    book = openpyxl.Workbook()
    sales = book.active
    sales.title = "Sales"
    sales.append(["SKU", "Product", "Price"])
    sales.append(["SKU-6678", "Falcon X", 42000])
    sales.append(["SKU-1020", "Osprey", 9500.5])
    sales["C2"].comment = Comment("List price before discounts", "Li Wei")
    costs = book.create_sheet("Costs")
    costs.append(["Item", "Cost"])
    costs.append(["Warehouse rent in Rotterdam", 1200])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def make_encrypted_office(inner: bytes = b"") -> bytes:
    """What Office writes for a password-protected .xlsx/.docx: an OLE compound file holding the
    EncryptionInfo and EncryptedPackage streams (their names in the directory, in UTF-16)."""
    header = bytes.fromhex("d0cf11e0a1b11ae1") + b"\x00" * 504
    directory = "EncryptionInfo".encode("utf-16-le") + b"\x00" * 50 + "EncryptedPackage".encode("utf-16-le")
    return header + directory + inner + b"\x00" * 1024


def make_unmapped_glyph_pdf(pages: list[str]) -> bytes:
    """A PDF whose font gives some glyphs no real Unicode character, as maths fonts without a ToUnicode
    map do: one page per string (Helvetica, one line each), where `@` is drawn as a glyph that
    extracts as a private-use code (U+F0B6, the Symbol font's own code for ∂) and `#` as one that
    extracts as U+FFFD."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>")
    objects.append(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
        "/Encoding << /Type /Encoding /Differences [35 /uniFFFD 64 /uniF0B6] >> >>"
    )
    for i, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * i} 0 R >>"
        )
        stream = f"BT /F1 11 Tf 72 770 Td ({escaped}) Tj ET"
        objects.append(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def make_zip_bomb(
    base: bytes,
    part: str,
    head: str,
    unit: str,
    tail: str,
    unpacked: int,
    *,
    declared: int | None = None,
) -> bytes:
    """The Office file `base` (a ZIP) with its `part` replaced by `head`, `unit` repeated up to ~`unpacked`
    bytes, then `tail`: a real ZIP bomb of ~1 KB zipped per MB unpacked, made in a second or two without
    unpacking or compressing it whole (one MB of units is DEFLATEd once, ending in a full flush, after
    which nothing refers back, so its bytes repeat). `declared`: the size the archive claims for the part
    (a lie when it is not the real one)."""
    import struct
    import zlib

    chunk = (unit * max(1, (1 << 20) // len(unit))).encode()
    repeats = max(1, (unpacked - len(head) - len(tail)) // len(chunk))
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = packer.compress(head.encode()) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)
    last = packer.compress(tail.encode()) + packer.flush(zlib.Z_FINISH)
    crc = zlib.crc32(head.encode())
    for _ in range(repeats):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(tail.encode(), crc)
    size = len(head.encode()) + repeats * len(chunk) + len(tail.encode())
    packed = first + block * repeats + last
    if size >= 1 << 32:
        raise ValueError("a bomb of 4 GiB or more needs ZIP64, which this writer does not do")

    members: list[tuple[str, bytes, int, int, int]] = []  # name, packed bytes, crc, size, method
    with zipfile.ZipFile(io.BytesIO(base)) as source:
        for info in source.infolist():
            if info.filename == part:
                members.append((part, packed, crc, size if declared is None else declared, 8))
            else:
                raw = source.read(info.filename)
                squeezer = zlib.compressobj(6, zlib.DEFLATED, -15)
                members.append((info.filename, squeezer.compress(raw) + squeezer.flush(), zlib.crc32(raw), len(raw), 8))
    out = io.BytesIO()
    directory = io.BytesIO()
    for name, data, member_crc, member_size, method in members:
        encoded = name.encode()
        offset = out.tell()
        fields = (20, 0, method, 0, 0x21, member_crc, len(data), member_size, len(encoded), 0)
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + encoded + data)
        directory.write(
            struct.pack("<IH", 0x02014B50, 20)
            + struct.pack("<HHHHHIIIHHHHHII", *fields[:-1], 0, 0, 0, 0, 0, offset)
            + encoded
        )
    start = out.tell()
    listing = directory.getvalue()
    out.write(listing)
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(listing), start, 0))
    return out.getvalue()
