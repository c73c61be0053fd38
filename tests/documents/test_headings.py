"""rag.documents.headings: which lines of a plain text are headings (Chinese chapters, English chapters,
RFC-style numbered sections, Markdown), which look-alikes are not (a table of contents, page furniture,
sentences, lists), and the heading path an offset is under."""

from __future__ import annotations

import pytest

from rag.documents.headings import TEXT_LEVEL, Heading, Outline, find_headings


def titles(text: str, markdown: bool = False) -> list[str]:
    return [h.title for h in find_headings(text, markdown)]


def alone(line: str) -> str:
    """`line` as a paragraph of its own, between two others."""
    return f"Some text before it.\n\n{line}\n\nSome text after it.\n"


# --- Chinese chapters ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("第一回　甄士隐梦幻识通灵　贾雨村风尘怀闺秀", "第一回 甄士隐梦幻识通灵 贾雨村风尘怀闺秀"),
        ("　　第一百二十回 甄士隐详说太虚情 贾雨村归结红楼梦", "第一百二十回 甄士隐详说太虚情 贾雨村归结红楼梦"),
        ("第二十三章 风起", "第二十三章 风起"),
        ("第3节 实验方法", "第3节 实验方法"),
        ("第 12 章 归途", "第 12 章 归途"),
        ("第十卷", "第十卷"),
        ("第一部分　总则", "第一部分 总则"),
        ("第两千零一章 终", "第两千零一章 终"),
        ("第〇回 楔子", "第〇回 楔子"),
    ],
)
def test_chinese_chapter_lines_are_headings(line: str, title: str) -> None:
    # Chinese novels put no blank line around a chapter's line: none is needed.
    text = f"　　上一回的正文。\n{line}\n　　这一回的正文，说到这里。\n"
    assert find_headings(text) == [Heading(text.index(line), TEXT_LEVEL, title)]


@pytest.mark.parametrize(
    "line",
    [
        "　　此开卷第一回也。作者自云：因曾历过一番梦幻之后，故将真事隐去。",  # 第一回 inside a sentence
        "第二天他又去了学校，",  # 第二天: no chapter word
        "第三章讲述了主人公的童年和他在乡下度过的那些漫长夏天，以及后来他如何离开家乡去城里读书的经过",  # too long
        "第三章讲述了主人公的童年。",  # a sentence
        "第一回 甄士隐梦幻识通灵……1",  # a table of contents' line
        "第一回 甄士隐梦幻识通灵 .......... 1",
        "第一回 甄士隐梦幻识通灵        12",
    ],
)
def test_chinese_look_alikes_are_not(line: str) -> None:
    assert titles(f"　　正文。\n{line}\n　　正文。\n") == []


# --- English chapters and numbered sections ------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Chapter 1",
        "CHAPTER IV.",
        "CHAPTER IV. Down the Rabbit-Hole",
        "Part Two",
        "PART 3: The Return",
        "Section 3 The Format",
        "Book I",
        "   Chapter 12",
        "1 Introduction",
        "1.1 Purpose",
        "10.4.15 414 Request-URI Too Long",
        "1.  Introduction",
        "19.6.1.1 Changes to Simplify Multi-homed Web Servers and Conserve IP Addresses",
        "3.2.1 General Syntax",
        "4. 数据格式",
    ],
)
def test_english_and_numbered_headings(line: str) -> None:
    assert titles(alone(line)) == [" ".join(line.split())]


@pytest.mark.parametrize(
    "line",
    [
        "   10.4.15  414 Request-URI Too Long ...........................63",  # RFC 2616's TOC: indented
        "10.4.15  414 Request-URI Too Long ...........................63",  # and at column 0 too
        "1.  Introduction . . . . . . . . . . . . . . . . . . . . . . . 3",  # newer RFCs' TOC
        "10.4.15 414 Request-URI Too Long                               63",  # a page number set apart
        "Chapter 3   The Storm ......................... 41",
        "Fielding, et al.            Standards Track                   [Page 66]",
        "RFC 2616                        HTTP/1.1                       June 1999",
        "1 RFC 2616                      HTTP/1.1                       June 1999",
        "   10.4.15 414 Request-URI Too Long",  # a numbered heading starts at column 0
        "3.14 is pi",  # no title: a lowercase word
        "1. Introduction.",  # a sentence
        "2. Mix the flour, the sugar and the eggs;",
        "12 Monkeys Went To The Zoo And They All Ate Bananas And Then Went Home Again",  # too many words
        "1.1 " + "Very Long Heading " * 5,  # too long
        "Part 2 of the plan failed",  # prose: the word after the number is no title's
        "Chapter 3, in which nothing happens,",
        "1999 Was A Good Year",  # a year is no section number
    ],
)
def test_english_look_alikes_are_not(line: str) -> None:
    assert titles(alone(line)) == []


def test_a_numbered_or_titled_line_must_stand_alone() -> None:
    # A numbered list and a wrapped sentence at column 0 have neighbours; a heading has blank lines around.
    assert titles("Steps:\n\n1. Buy Milk\n2. Buy Eggs\n\nDone.\n") == []
    assert titles("As written in\nSection 3 The Format\nof the message.\n") == []
    assert titles("Body text.\n\n1.1 Purpose\n   starts right here.\n") == []
    # A bare 'Chapter 3' is a heading anywhere.
    assert titles("Body text.\nChapter 3\nMore text.\n") == ["Chapter 3"]


RFC_PAGE = """\
Network Working Group                                      R. Fielding
Request for Comments: 2616                                   UC Irvine
Category: Standards Track                                   Compaq/W3C

                Hypertext Transfer Protocol -- HTTP/1.1

Table of Contents

   1   Introduction ...................................................7
   1.1    Purpose......................................................7
   10.4.15  414 Request-URI Too Long ....................................63

Fielding, et al.            Standards Track                     [Page 1]

RFC 2616                        HTTP/1.1                       June 1999


1 Introduction

1.1 Purpose

   The Hypertext Transfer Protocol (HTTP) is an application-level
   protocol for distributed, collaborative, hypermedia information
   systems.

10.4.15 414 Request-URI Too Long

   The server is refusing to service the request because the Request-URI
   is longer than the server is willing to interpret.

Fielding, et al.            Standards Track                    [Page 66]

RFC 2616                        HTTP/1.1                       June 1999


10.4.16 415 Unsupported Media Type

   The server is refusing to service the request.
"""


def test_an_rfc_page_gives_its_sections_and_nothing_of_its_contents_or_furniture() -> None:
    found = find_headings(RFC_PAGE)
    lines = RFC_PAGE.split("\n")
    assert [(RFC_PAGE.count("\n", 0, h.offset) + 1, h.title) for h in found] == [
        (lines.index("1 Introduction") + 1, "1 Introduction"),
        (lines.index("1.1 Purpose") + 1, "1.1 Purpose"),
        (lines.index("10.4.15 414 Request-URI Too Long") + 1, "10.4.15 414 Request-URI Too Long"),
        (lines.index("10.4.16 415 Unsupported Media Type") + 1, "10.4.16 415 Unsupported Media Type"),
    ]


def test_the_first_line_and_crlf_free_ends() -> None:
    assert find_headings("第一回 开篇\n正文") == [Heading(0, TEXT_LEVEL, "第一回 开篇")]
    assert find_headings("Body.\n\n2 Last Section") == [Heading(7, TEXT_LEVEL, "2 Last Section")]


# --- Markdown ------------------------------------------------------------------------------------

GUIDE = """\
---
title: # not a heading
---
Intro before any heading.

# Guide #

Welcome.

## Install

```sh
# a comment, not a heading
pip install rag
```

### On Linux

Use the package manager.

Usage
-----

Run it.

---

#hashtag is no heading

1. Install is a list item in Markdown

Reference
=========

第二章 附录
"""


def test_markdown_headings_nest_into_a_path() -> None:
    found = find_headings(GUIDE, markdown=True)
    assert [(h.level, h.title) for h in found] == [
        (1, "Guide"),
        (2, "Install"),
        (3, "On Linux"),
        (2, "Usage"),
        (1, "Reference"),
        (TEXT_LEVEL, "第二章 附录"),
    ]
    assert found[3].offset == GUIDE.index("Usage\n")  # a setext heading starts at its title line
    outline = Outline(found)
    assert len(outline) == 6
    at = {
        needle: outline.at(GUIDE.index(needle))
        for needle in ("Intro", "Welcome", "pip install", "Use the package", "Run it", "#hashtag", "第二章")
    }
    assert at == {
        "Intro": "",
        "Welcome": "Guide",
        "pip install": "Guide › Install",
        "Use the package": "Guide › Install › On Linux",
        "Run it": "Guide › Usage",
        "#hashtag": "Guide › Usage",  # '---' after a blank line is a rule, not a heading
        "第二章": "Reference › 第二章 附录",
    }


def test_a_txt_file_has_atx_headings_but_no_setext_ones_and_keeps_numbered_lines() -> None:
    text = "# Book\n\nText.\n\nUsage\n-----\n\n1. Introduction\n\n第一回 开篇\n"
    assert titles(text) == ["Book", "1. Introduction", "第一回 开篇"]
    outline = Outline.of(text)
    # Chapters and numbered sections have no level of their own: each replaces the one before.
    assert outline.at(len(text) - 1) == "Book › 第一回 开篇"
    assert titles(text, markdown=True) == ["Book", "Usage", "第一回 开篇"]


def test_an_outline_names_the_heading_at_or_before_an_offset() -> None:
    text = "前言\n第一回 甲\n正文一\n第二回 乙\n正文二\n"
    outline = Outline.of(text)
    second = text.index("第二回")
    assert outline.at(0) == ""
    assert outline.at(text.index("第一回")) == "第一回 甲"
    assert outline.at(second - 1) == "第一回 甲"
    assert outline.at(second) == "第二回 乙"
    assert outline.at(second + 2) == "第二回 乙"  # a chunk starting inside the heading's line
    assert outline.at(len(text)) == "第二回 乙"
