"""Headings in a plain text (TXT, MD), so that a chunk of a novel or an RFC can say where it is.

A PDF page has a number; a text file has only lines, and every chunk of it would cite 'p. 1'. Its
headings tell 第二回 from 第五回 and section 10.4.15 from 10.4.16: `Outline.of(text)` scans the text
once for lines that look like headings, and `Outline.at(offset)` names the one at or before an offset
by bisection.

What is a heading:
- Markdown ATX headings (`## Install`), in .md and .txt, and in .md setext ones (a line underlined with
  `===` or `---`), outside fenced code blocks and front matter. Their levels make the heading path
  ('Guide › Install').
- A Chinese chapter at a line's start: 第N回, 第N章, 第N节, 第N卷, 第N部分 with N in Arabic or Chinese
  numerals ('第二回　贾夫人仙逝扬州城　冷子兴演说荣国府').
- 'Chapter 12', 'CHAPTER IV. Down the Rabbit-Hole', 'Part 2', 'Section 3', 'Book I' at a line's start.
- In .txt, a numbered section at column 0 as in RFCs: '10.4.15 414 Request-URI Too Long', '1.  Introduction'
  (in Markdown '1. Install' is a list item).
These last three have no level the text makes clear: each replaces the one before, below the
Markdown headings.

What is not, though it looks alike: a line longer than a heading is; a sentence (a line that ends
with '.', ',', ';', ':' or holds '。'); a table of contents' line, with dot leaders or a page number
set apart at its end ('   10.4.15  414 Request-URI Too Long ...........63'); page furniture ('Fielding,
et al.      Standards Track      [Page 66]': columns set apart by runs of spaces). A numbered line, and
an English chapter line with a title in words, must stand alone, with a blank line (or a page's start)
before and after, and its title must start like one (a capital, a digit, CJK): so '3.14 is pi', a
wrapped sentence at column 0 and a numbered list stay text. (A Chinese table of contents without page
numbers, a bare list of chapter lines, does give headings: nothing tells it from the chapters.)
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from rag.documents.model import HEADING_JOIN
from rag.documents.sections import MAX_HEADING_CHARS

TEXT_LEVEL = 7
"""The level of a chapter or a numbered section: below any Markdown heading; each replaces the last."""
MAX_CHAPTER_LINE = 40
"""Characters of a Chinese chapter line at most: 红楼梦's longest, 第一百二十回 with its couplet, has 22;
a paragraph of a novel, one line, has more."""
MAX_LINE = 80
"""Characters of an English or numbered heading line at most: an RFC's lines have 72."""
MAX_TITLE_WORDS = 12

_CN_DIGITS = "0-9０-９一二三四五六七八九十百千零〇两"
_EN_NUMBERS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    "sixteen|seventeen|eighteen|nineteen|twenty|first|second|third|last"
)
# One pattern for every kind, searched from each newline (`_AFTER_NEWLINE`): re then skips from '\n'
# to '\n' with its literal-prefix loop instead of trying `^` at every character, and the lookahead
# (the first character any alternative can start with) turns ordinary lines away before the six
# alternatives are tried: the search alone takes 0.48 s instead of 2.5 s over a 200 MB English text.
_LINE = (
    r"(?:(?P<fence>[ ]{0,3}(?:`{3,}|~{3,}))"
    r"|[ ]{0,3}(?P<atx>\#{1,6})(?:[ \t]+(?P<atx_title>[^\n]*))?(?=\n|\Z)"
    r"|(?P<setext>[ ]{0,3}(?:=+|-+))[ \t]*(?=\n|\Z)"
    r"|[ \t\u3000]*(?P<cn>第[ \t]?[" + _CN_DIGITS + r"]{1,9}[ \t]?(?:回|章|节|節|卷|部分)[^\n]*)"
    r"|[ \t]*(?P<en>(?:Chapter|CHAPTER|Part|PART|Section|SECTION|Book|BOOK)[ \t]+"
    r"(?:\d{1,4}(?:\.\d{1,3})*|[IVXLC]{1,8}|(?i:" + _EN_NUMBERS + r"))(?![\w-])(?P<en_title>[^\n]*))"
    r"|(?P<num>\d{1,2}(?:\.\d{1,3}){0,5}\.?[ \t]+(?P<num_title>[^\n]*))"
    r")"
)
_AT_START = re.compile(_LINE)
_AFTER_NEWLINE = re.compile(r"\n(?=[ \t\u3000]*[#`~=\-第CPSB\d])" + _LINE)

_TOC = re.compile(
    r"(?:\.\s?){3,}\s*\d*\s*$"  # dot leaders, with or without a page number: '.......63', '. . . 7'
    r"|(?:…|·|－|—){2,}\s*\d*\s*$"  # a Chinese table of contents' leaders: '第二回 …… 12'
    r"|\S\s{2,}\d+\s*$"  # a page number set apart after the title: 'Introduction      7'
)
_FURNITURE = re.compile(
    r"\[Page \d+\]\s*$"  # an RFC's page footer
    r"|\S {4,}\S"  # columns set apart by runs of spaces: 'RFC 2616        HTTP/1.1        June 1999'
)
_SENTENCE_END = re.compile(r"[.,;:，、；：”」』]$")
_TITLE_START = re.compile(r"[A-Z0-9\"'“‘(\[]|[^\x00-\x7f]")
_SEPARATOR = re.compile(r"^[\s.:\-–—]+")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FRONT_MATTER = re.compile(r"---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_MATTER_WINDOW = 1 << 16
_NOT_UNDER = ("#", ">", "- ", "* ", "+ ", "|", "```", "~~~")
"""What a line above '---' or '===' starts with when it is no setext heading's title."""


@dataclass(frozen=True)
class Heading:
    offset: int
    """Where its line starts in the text (a setext heading's: its title line's)."""
    level: int
    """1-6 for Markdown headings, `TEXT_LEVEL` for the others."""
    title: str
    """The line as one line (whitespace runs made one space), without Markdown's #s."""


def find_headings(text: str, markdown: bool = False) -> list[Heading]:
    """The headings of `text` in order (the module's docstring says what is one); `markdown` for a .md
    file: setext headings, fenced code and front matter count there, numbered lines do not.

    One pass of one regex over the text, a little Python per candidate line: over a 200 MB RFC-like
    English text (200 M characters, 43,000 headings) 1.1 s, 2.0 s with both cores busy; over 200 MB of
    Chinese (67 M characters, 15,000 chapters) 0.3-0.45 s (measured on this project's 2-core VM)."""
    found: list[Heading] = []
    fence = ""  # the fence character of the open code block, '' outside one
    skip_to = 0
    if markdown and text.startswith("---"):
        front = _FRONT_MATTER.match(text[:_FRONT_MATTER_WINDOW])
        skip_to = front.end() if front else 0
    for start, match in _line_matches(text):
        if start < skip_to:
            continue
        kind = "atx" if match.lastgroup == "atx_title" else str(match.lastgroup)  # the outermost group closes last
        if kind == "fence":
            if markdown:
                char = match.group("fence").lstrip()[0]
                fence = "" if fence == char else fence or char
            continue
        heading = None if fence else _heading(text, match, kind, start, markdown)
        if heading is None:
            continue
        if found and found[-1].offset == heading.offset:  # a chapter line underlined: one setext heading
            found[-1] = heading
        else:
            found.append(heading)
    return found


def _line_matches(text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """(line start, match) of every line the pattern matches at its start."""
    first = _AT_START.match(text)
    if first:
        yield 0, first
    for match in _AFTER_NEWLINE.finditer(text):
        yield match.start() + 1, match


def _heading(text: str, match: re.Match[str], kind: str, start: int, markdown: bool) -> Heading | None:
    """The heading that `match` (at line `start`) is, or None when it is a look-alike."""
    if kind == "atx":
        title = _one_line(_ATX_CLOSE.sub("", match.group("atx_title") or ""))
        return Heading(start, len(match.group("atx")), title) if title else None
    if kind == "setext":
        above = _line_before(text, start)
        title = _one_line(above)
        # Under a blank line '---' is a rule; under a list item, a quote, a heading or a table row, no heading.
        if not markdown or not title or above.lstrip().startswith(_NOT_UNDER):
            return None
        return Heading(start - len(above) - 1, 1 if "=" in match.group("setext") else 2, title)
    line = match.group(kind)
    title = _one_line(line)
    if kind == "cn":
        # No column check: full-width or runs of spaces often part a chapter's number from its couplet.
        if len(title) > MAX_CHAPTER_LINE or "。" in title or _SENTENCE_END.search(title) or _TOC.search(line):
            return None
        return Heading(start, TEXT_LEVEL, title)
    if (kind == "num" and markdown) or len(title) > MAX_LINE or _TOC.search(line) or _FURNITURE.search(line):
        return None
    words = _one_line(_SEPARATOR.sub("", match.group("en_title")) if kind == "en" else match.group("num_title"))
    if kind == "en" and not words:  # 'Chapter 3', 'CHAPTER IV.'
        return Heading(start, TEXT_LEVEL, title)
    if (
        not words
        or len(words.split()) > MAX_TITLE_WORDS
        or _SENTENCE_END.search(words)
        or not _TITLE_START.match(words)
    ):
        return None
    # A title in words must stand alone: a line of a wrapped paragraph or of a list has neighbours.
    if not (_blank_before(text, start) and _blank_after(text, match.end())):
        return None
    return Heading(start, TEXT_LEVEL, title)


def _one_line(line: str) -> str:
    return " ".join(line.split())[:MAX_HEADING_CHARS]


def _line_before(text: str, start: int) -> str:
    """The line that ends just before line `start` ('' for the first line)."""
    if start == 0:
        return ""
    return text[text.rfind("\n", 0, start - 1) + 1 : start - 1]


def _blank_before(text: str, start: int) -> bool:
    """Whether line `start` is the text's (or a page's: pages are joined by a blank line) first, or
    follows a blank line."""
    return start == 0 or not _line_before(text, start).strip()


def _blank_after(text: str, end: int) -> bool:
    """Whether the line ending at `end` is the text's last or a blank line follows it."""
    following = text.find("\n", end + 1)
    return end >= len(text) - 1 or not text[end + 1 : following if following >= 0 else len(text)].strip()


class Outline:
    """The headings of a text as the heading path at each heading's offset: `at(offset)` by bisection.

    Markdown headings nest by level ('Guide › Install'); a chapter or numbered section sits below them
    and replaces the one before (the nearest: '第二回 …', '10.4.15 414 Request-URI Too Long')."""

    __slots__ = ("_offsets", "_paths")

    def __init__(self, headings: Iterable[Heading]) -> None:
        offsets: list[int] = []
        paths: list[str] = []
        stack: list[Heading] = []
        for heading in headings:
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
            offsets.append(heading.offset)
            paths.append(HEADING_JOIN.join(h.title for h in stack))
        self._offsets = offsets
        self._paths = paths

    @classmethod
    def of(cls, text: str, markdown: bool = False) -> Outline:
        return cls(find_headings(text, markdown))

    def __len__(self) -> int:
        return len(self._offsets)

    def at(self, offset: int) -> str:
        """The heading path of the last heading whose line starts at or before `offset`; '' before any."""
        index = bisect.bisect_right(self._offsets, offset) - 1
        return self._paths[index] if index >= 0 else ""
