"""TXT and MD chunks ingested into the real store: each row's `location` (what its citation says) names
the chapter or section its text starts under and the lines of the file it covers, worked out here the
slow way (character by character) for a 红楼梦-style novel and an RFC 2616-style text with form feeds,
page headers and footers, a table of contents and CRLF line ends."""

from __future__ import annotations

import random

from rag.chunking import ChunkSettings
from rag.embeddings.local import LocalEmbedder
from rag.ingest import ingest_bytes

SETTINGS = ChunkSettings(chunk_size=120)

CHAPTERS = [
    "第一回　甄士隐梦幻识通灵　贾雨村风尘怀闺秀",
    "第二回　贾夫人仙逝扬州城　冷子兴演说荣国府",
    "第三回　贾雨村夤缘复旧职　林黛玉抛父进京都",
    "第四回　薄命女偏逢薄命郎　葫芦僧乱判葫芦案",
    "第五回　游幻境指迷十二钗　饮仙醪曲演红楼梦",
]
WORDS = ["士隐", "雨村", "黛玉", "宝玉", "贾母", "凤姐", "葫芦庙", "姑苏", "扬州", "荣国府", "宁国府", "甄家"]


def novel() -> tuple[str, list[tuple[int, str]]]:
    """A novel with a preface and five chapters: (its text, (file line, title) of each chapter)."""
    rng = random.Random(27)
    lines = ["红楼梦", "　　此开卷第一回也。作者自云：因曾历过一番梦幻之后，故将真事隐去。"]
    headings = []
    for title in CHAPTERS:
        lines.append(title)
        headings.append((len(lines), " ".join(title.split())))
        for _ in range(rng.randint(12, 20)):
            said = "，".join(rng.choice(WORDS) + rng.choice(["说道", "笑道", "听了", "来到", "想着"]) for _ in range(3))
            lines.append(f"　　{said}。第二天又到{rng.choice(WORDS)}去了。")
        if rng.random() < 0.5:
            lines.append("")
    return "\n".join(lines) + "\n", headings


SECTIONS = [
    "1 Introduction",
    "1.1 Purpose",
    "1.2 Requirements",
    "10 Status Code Definitions",
    "10.4 Client Error 4xx",
    "10.4.14 413 Request Entity Too Large",
    "10.4.15 414 Request-URI Too Long",
    "10.4.16 415 Unsupported Media Type",
]


def rfc() -> tuple[str, list[tuple[int, str]]]:
    """An RFC 2616-style text with CRLF line ends: a table of contents, numbered sections, pages of 56
    lines with a footer and a header parted by a form feed (on the header's line, as in the RFC). (Its
    text, (file line, title) of each section.)"""
    rng = random.Random(2616)
    body = [
        "Network Working Group                                      R. Fielding",
        "Request for Comments: 2616                                   UC Irvine",
        "",
        "                Hypertext Transfer Protocol -- HTTP/1.1",
        "",
        "Table of Contents",
        "",
    ]
    for page, section in enumerate(SECTIONS, start=7):  # '   10.4.15  414 Request-URI Too Long ......63'
        number, title = section.split(" ", 1)
        body.append(f"   {number:<8} {title} ".ljust(68, ".") + str(page))
    body += ["", "10.4.15 414 Request-URI Too Long ...........................63", "", "Status of this Memo", ""]
    body += ["   This document specifies an Internet standards track protocol for the Internet"] * 24 + [""]
    starts = {}
    for title in SECTIONS:
        starts[len(body)] = title
        body += [title, ""]
        for _ in range(rng.randint(2, 4)):
            words = " ".join(
                rng.choice(["server", "request", "the", "URI", "client", "MUST", "entity", "is"]) for _ in range(70)
            )
            wrapped = [words[i : i + 66].strip() for i in range(0, len(words), 66)]
            body += ["   " + w for w in wrapped[: rng.randint(3, 9)]] + [""]
    lines: list[str] = []
    headings = []
    page = 1
    for number, line in enumerate(body):
        if len(lines) % 56 == 52:  # the page's foot, then the next page's head after a form feed
            lines += [
                "",
                f"Fielding, et al.            Standards Track                    [Page {page}]",
                "\fRFC 2616                        HTTP/1.1                       June 1999",
                "",
                "",
            ]
            page += 1
        if number in starts:
            headings.append((len(lines) + 1, starts[number]))
        lines.append(line)
    return "\r\n".join(lines) + "\r\n", headings


def text_and_lines(raw: str) -> tuple[str, list[int]]:
    """What loading a TXT makes of `raw` (pages parted at form feeds, each cut at its blank end, blank
    ones dropped, joined by a blank line), character by character, with each one's file line."""
    pages: list[tuple[list[str], list[int]]] = [([], [])]
    line = 1
    for char in raw.replace("\r\n", "\n"):
        if char == "\f":
            pages.append(([], []))
            continue
        pages[-1][0].append(char)
        pages[-1][1].append(line)
        line += char == "\n"
    chars: list[str] = []
    lines: list[int] = []
    for page_chars, page_lines in pages:
        while page_chars and page_chars[-1].isspace():
            page_chars.pop()
            page_lines.pop()
        if page_chars:
            if chars:
                chars += ["\n", "\n"]
                lines += [lines[-1]] * 2
            chars += page_chars
            lines += page_lines
    return "".join(chars), lines


def expected_location(text: str, lines: list[int], headings: list[tuple[int, str]], start: int, end: int) -> str:
    first = next(i for i in range(start, end) if not text[i].isspace())
    last = next(i for i in reversed(range(start, end)) if not text[i].isspace())
    top, bottom = lines[first], lines[last]
    above = [title for line, title in headings if line <= top]
    where = f"line {top}" if top == bottom else f"lines {top}–{bottom}"
    return f"{above[-1]} · {where}" if above else where


def stored(store, knowledge: str, raw: bytes, filename: str) -> list:
    result = ingest_bytes(store, LocalEmbedder(), raw, filename, knowledge, SETTINGS)
    assert result.status == "stored", result
    return list(store.iter_chunks(knowledge))


def test_a_chinese_novel_cites_its_chapters_and_lines(store) -> None:
    raw, headings = novel()
    hits = stored(store, "novel-kb", raw.encode(), "红楼梦.txt")
    text, lines = text_and_lines(raw)
    assert len(hits) >= 20
    for hit in hits:
        start, end = hit.metadata["start"], hit.metadata["end"]
        assert text[start:end].strip() == hit.content.strip()
        assert hit.location == expected_location(text, lines, headings, start, end)
    cited = [h.location for h in hits]
    assert cited[0].startswith("lines 1–")  # the preface: before any chapter
    for title in CHAPTERS:  # every chapter is cited, none as 'p. 1'
        assert any(where.startswith(" ".join(title.split()) + " · line") for where in cited), title


def test_an_rfc_cites_its_sections_across_form_feeds_and_crlf(store) -> None:
    raw, headings = rfc()
    assert raw.count("\f") >= 3
    hits = stored(store, "rfc-kb", raw.encode(), "rfc2616.txt")
    text, lines = text_and_lines(raw)
    for hit in hits:
        start, end = hit.metadata["start"], hit.metadata["end"]
        assert text[start:end].strip() == hit.content.strip()
        assert hit.location == expected_location(text, lines, headings, start, end)
    cited = [h.location for h in hits]
    # The table of contents and the first page's header are before any section: lines only.
    assert cited[0].startswith("lines 1–")
    assert {where.split(" · ")[0] for where in cited if " · " in where} == set(SECTIONS)
    # No page header, footer or contents line became a heading.
    assert not any(where.startswith(("RFC 2616", "Fielding", "   ", "Table")) for where in cited)
    # Chunks on the last page count the file's lines, past the form feeds (which are no line breaks).
    last_page = raw.count("\f") + 1
    assert any(h.metadata["pages"] == [last_page] for h in hits)
    assert lines[-1] == raw.rstrip().count("\n") + 1


def test_a_markdown_chunk_cites_its_heading_path(store) -> None:
    raw = (
        "# Field Guide\n\nWelcome to the depot.\n\n## Receiving\n\n"
        + "Pallets are checked on arrival. " * 30
        + "\n\n### Damaged goods\n\n"
        + "Photograph the damage before signing. " * 30
        + "\n"
    )
    hits = stored(store, "md-kb", raw.encode(), "guide.md")
    text, lines = text_and_lines(raw)
    headings = [
        (raw[: raw.index(h)].count("\n") + 1, path)
        for h, path in (
            ("# Field", "Field Guide"),
            ("## Receiving", "Field Guide › Receiving"),
            ("### Damaged", "Field Guide › Receiving › Damaged goods"),
        )
    ]
    assert [h.location for h in hits] == [
        expected_location(text, lines, headings, h.metadata["start"], h.metadata["end"]) for h in hits
    ]
    assert any(h.location.startswith("Field Guide › Receiving › Damaged goods · line") for h in hits)
