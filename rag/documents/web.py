"""Saved web pages and CSV files -> pages.

A web page's main content is taken by trafilatura (navigation, sidebars, cookie banners and
footers are not stored), as Markdown cut into sections at its headings. The encoding is the one
the page declares (BOM, then `<meta charset>`), else UTF-8, else what charset-normalizer guesses:
Chinese pages saved in GB18030 say so only in their meta tag.
"""

from __future__ import annotations

import codecs
import csv
import io
import logging
import re

from rag.documents.model import Page
from rag.documents.sections import SectionBuilder, markdown_sections, markdown_table
from rag.errors import DocumentError
from rag.text import Text

logger = logging.getLogger("rag.documents")

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
# Browsers read these labels as the larger encoding that contains them (WHATWG Encoding).
_SUPERSETS = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
}


def decode_html(data: bytes, filename: str) -> str:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    declared = _META_CHARSET.search(data[:4096])
    if declared:
        label = declared.group(1).decode("ascii", "replace").lower()
        label = _SUPERSETS.get(label, label)
        try:
            return data.decode(label, errors="replace")
        except LookupError:
            logger.info("%s declares an unknown charset %r; guessing", filename, label)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise DocumentError(filename, Text("cannot tell the web page's text encoding (not UTF-8, none declared)"))
    return str(best)


def read_html(data: bytes, filename: str) -> list[Page]:
    import trafilatura

    markup = decode_html(data, filename)
    markdown = trafilatura.extract(
        markup,
        output_format="markdown",
        include_tables=True,
        include_comments=False,
        include_images=False,
        include_links=False,
        favor_recall=True,
        deduplicate=False,
    )
    if not markdown or not markdown.strip():
        # trafilatura finds no main content in very short pages: take the whole body's text then.
        markdown = _body_text(markup)
    title = ""
    metadata = trafilatura.extract_metadata(markup)
    if metadata is not None and metadata.title:
        title = " ".join(metadata.title.split())
    pages = markdown_sections(markdown)
    if title and pages and not pages[0].title and title not in pages[0].text[: len(title) + 10]:
        # The document title (<title>) heads the text before the first heading.
        first = pages[0]
        pages[0] = Page(first.number, f"{title}\n\n{first.text}", title=title)
    return pages


def _body_text(markup: str) -> str:
    import lxml.html

    try:
        root = lxml.html.fromstring(markup)
    except Exception:  # noqa: BLE001 - lxml's ParserError on an empty document, ValueError on an encoding declaration
        return ""
    for bad in root.xpath("//script|//style|//noscript|//nav|//template"):
        bad.drop_tree()
    return "\n".join(line.strip() for line in root.text_content().splitlines() if line.strip())


def read_csv(text: str) -> list[Page]:
    """One table; the delimiter sniffed (comma, semicolon, tab or pipe)."""
    sample = text[:20_000]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(io.StringIO(text), dialect))
    builder = SectionBuilder()
    builder.text(markdown_table(rows))
    return builder.pages()
