"""Saved web pages and CSV files -> pages.

A web page's main content is taken by trafilatura (navigation, sidebars, cookie banners and
footers are not stored), as Markdown cut into sections at its headings. The encoding is the one
the page declares (BOM, then `<meta charset>`), else UTF-8, else what charset-normalizer guesses:
Chinese pages saved in GB18030 say so only in their meta tag.
"""

from __future__ import annotations

import codecs
import csv
import html
import io
import logging
import re
from typing import cast

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


MAX_TREE_HTML_BYTES = 2_000_000
"""Above this size a web page is read by the streaming reader (`_streamed_text`) rather than parsed into a
tree for trafilatura. As a tree, a page of small tags (`<p>a <b>few</b> words</p>`) costs ~186 bytes of
memory per byte of HTML and trafilatura ~25 s per MB on 2 loaded cores (peak RSS measured: 1 MB +190 MB,
2 MB +375 MB, 4 MB +750 MB in 86 s, 20 MB +3.7 GB in 695 s; issue 33: a 50 MB one passed 6 GB). Streamed,
~5 bytes per byte (20 MB: +110 MB in 8 s; 50 MB: +260 MB, a 370 MB peak, in 51 s). This bounds a tree at
~0.4 GB; a saved article is far below it."""
_LOST_SHARE = 0.5
"""The tree parser is taken to have lost text when it holds less than this share of the page's visible
text characters, counted without parsing (`_visible_length`): the safety net for a loss libxml2 does not
report as a fatal error, as it does for its limits (255 levels of nesting, a text node over 10 MB)."""


def read_html(data: bytes, filename: str) -> list[Page]:
    import trafilatura

    markup = decode_html(data, filename)
    if len(data) > MAX_TREE_HTML_BYTES:
        logger.info(
            "%s: %d bytes of HTML, over %d: read by the streaming reader", filename, len(data), MAX_TREE_HTML_BYTES
        )
        return _streamed_pages(markup)
    # trafilatura parses with the same libxml2 tree parser and the same limits: a page that lost text here
    # would be stored as its title alone (issue 33), so it is read by the streaming reader instead.
    # (The check costs a tree of its own before trafilatura's: 0.4 s and +72 MB for 2 MB of small tags.)
    body, parsed, stopped = _body_text(markup)
    if stopped or (parsed is not None and parsed < _visible_length(markup) * _LOST_SHARE):
        logger.info(
            "%s: libxml2's tree parser lost text (%s): read by the streaming reader", filename, stopped or "by count"
        )
        return _streamed_pages(markup)
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
        markdown = body
    title = ""
    metadata = trafilatura.extract_metadata(markup)
    if metadata is not None and metadata.title:
        title = metadata.title
    return _titled(markdown_sections(markdown), title)


def _streamed_pages(markup: str) -> list[Page]:
    markdown, title = _streamed_text(markup)
    return _titled(markdown_sections(markdown), title)


def _titled(pages: list[Page], title: str) -> list[Page]:
    """The document title (<title>) heads the text before the first heading."""
    title = " ".join(title.split())
    if title and pages and not pages[0].title and title not in pages[0].text[: len(title) + 10]:
        first = pages[0]
        pages[0] = Page(first.number, f"{title}\n\n{first.text}", title=title)
    return pages


def _length(text: str) -> int:
    """Characters of `text` that are not white space (the measure of how much text was kept)."""
    return len("".join(text.split()))


_HIDDEN_OPEN = re.compile(r"<(?:(script|style|template)(?![\w-])|(!--))", re.IGNORECASE)
_HIDDEN_CLOSE = {
    "script": re.compile(r"</script[^<>]*>", re.IGNORECASE),
    "style": re.compile(r"</style[^<>]*>", re.IGNORECASE),
    "template": re.compile(r"</template[^<>]*>", re.IGNORECASE),
    "!--": re.compile(r"-->"),
}
# '<' is not allowed inside the tag so that a run of unclosed '<' costs one pass, not one pass per '<'.
_TAG = re.compile(r"<[^<>]*>")


def _visible_length(markup: str) -> int:
    """How many text characters a browser would show: the page without its scripts, styles, templates,
    comments and tags, entities counted as the character they stand for. A cheap count (no parse, each
    character looked at a bounded number of times) to tell whether a parser lost text."""
    shown: list[str] = []
    at = 0
    while (opened := _HIDDEN_OPEN.search(markup, at)) is not None:
        shown.append(markup[at : opened.start()])
        closed = _HIDDEN_CLOSE[(opened.group(1) or opened.group(2)).lower()].search(markup, opened.end())
        at = len(markup) if closed is None else closed.end()
    shown.append(markup[at:])
    return _length(html.unescape(_TAG.sub(" ", "".join(shown))))


def _body_text(markup: str) -> tuple[str, int | None, str]:
    """By lxml's tree parser: (the page's text without scripts, styles and navigation; how many characters
    of text the tree holds with only its scripts and styles left out, None when it cannot be parsed; the
    fatal error that stopped the parser early, or '')."""
    import lxml.html
    from lxml import etree

    parser = lxml.html.HTMLParser()
    try:
        root = lxml.html.fromstring(markup, parser=parser)
    except Exception:  # noqa: BLE001 - lxml's ParserError on an empty document, ValueError on an encoding declaration
        return "", None, ""
    # What libxml2 reports when a limit stops it: "Excessive depth in document: 256, use XML_PARSE_HUGE
    # option", "Resource limit exceeded: Buffer size limit exceeded" (a text node over 10 MB).
    stopped = next((e.message for e in parser.error_log if e.level == etree.ErrorLevels.FATAL), "")
    for bad in root.xpath("//script|//style|//template"):
        bad.drop_tree()
    parsed = _length(root.text_content())
    for bad in root.xpath("//noscript|//nav"):
        bad.drop_tree()
    text = "\n".join(line.strip() for line in root.text_content().splitlines() if line.strip())
    return text, parsed, stopped


_SKIPPED = frozenset(("script", "style", "template", "noscript", "nav"))
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_BLOCKS = frozenset(
    (
        "address article aside blockquote body br dd details dialog div dl dt fieldset figcaption figure footer "
        "form header hr li main ol p pre section summary table tbody thead tfoot tr ul"
    ).split()
)
_CELLS = frozenset(("td", "th"))
_FEED_CHARS = 1 << 20


class _TextTarget:
    """An lxml parser target that keeps the text and builds no tree: the reader of pages too deep or too
    large for a tree. Headings become Markdown '#' lines, so the page is cut into sections as trafilatura's
    Markdown is; block elements end a line."""

    def __init__(self) -> None:
        self._done: list[str] = []
        self._parts: list[str] = []
        self._skipped = 0
        self._title: list[str] | None = None
        self.title = ""
        self._heading: list[str] | None = None
        self._level = 0

    def _add(self, text: str) -> None:
        self._parts.append(text)
        if len(self._parts) > 4096:
            # Millions of small strings cost ~50 bytes each beyond their text: join them as they come.
            self._done.append("".join(self._parts))
            self._parts.clear()

    def start(self, tag: str, attrib: dict[str, str], /) -> None:
        name = tag.lower()
        if name in _SKIPPED:
            self._skipped += 1
        elif name == "title" and not self.title:
            self._title = []
        elif name in _HEADINGS and self._heading is None:
            self._heading, self._level = [], _HEADINGS[name]
        elif name in _BLOCKS:
            self._add("\n")
        elif name in _CELLS:
            self._add(" | ")

    def end(self, tag: str, /) -> None:
        name = tag.lower()
        if name in _SKIPPED:
            self._skipped = max(0, self._skipped - 1)
        elif name == "title" and self._title is not None:
            self.title, self._title = " ".join("".join(self._title).split()), None
        elif name in _HEADINGS and self._heading is not None and _HEADINGS[name] == self._level:
            text = " ".join("".join(self._heading).split())
            self._heading = None
            self._add(f"\n\n{'#' * self._level} {text}\n\n" if text else "\n")
        elif name in _BLOCKS:
            self._add("\n")

    def data(self, data: str, /) -> None:
        if self._skipped:
            return
        if self._title is not None:
            self._title.append(data)
        elif self._heading is not None:
            self._heading.append(data)
        else:
            self._add(data)

    def close(self) -> str:
        self._done.append("".join(self._parts))
        self._parts.clear()
        return "".join(self._done)


def _streamed_text(markup: str) -> tuple[str, str]:
    """(the page's text as Markdown, its title), read by libxml2's HTML parser without a tree, fed 1 MB at
    a time. `huge_tree` lifts the limits that make the tree parser drop a body (255 levels of nesting, a
    text node over 10 MB); without a tree, memory grows with the text kept, not with the markup."""
    from lxml import etree

    target = _TextTarget()
    # The stubs' ParserTarget protocol lists every callback; lxml calls only those a target has.
    parser = etree.HTMLParser(
        target=cast("etree.ParserTarget[str]", target), huge_tree=True, no_network=True, encoding="utf-8"
    )
    for start in range(0, len(markup), _FEED_CHARS):
        parser.feed(markup[start : start + _FEED_CHARS].encode("utf-8"))
    text: str = parser.close()
    return text, target.title


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
