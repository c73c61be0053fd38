"""rag.documents.text through load_bytes: encodings, form feeds as pages, normalisation, refusals."""

from __future__ import annotations

import pytest

from rag.documents import Page, load_bytes
from tests.documents.reasons import reason_of

# --- TXT and MD ------------------------------------------------------------------------------

TEXT = "Grüße aus Köln — 東京\nsecond line"


@pytest.mark.parametrize(
    "data",
    [
        TEXT.encode("utf-8"),
        b"\xef\xbb\xbf" + TEXT.encode("utf-8"),
        b"\xff\xfe" + TEXT.encode("utf-16-le"),
        b"\xfe\xff" + TEXT.encode("utf-16-be"),
    ],
    ids=["utf8", "utf8-bom", "utf16le-bom", "utf16be-bom"],
)
def test_text_encodings_are_decoded(data: bytes) -> None:
    doc = load_bytes(data, "notes.txt")
    assert doc.kind == "txt"
    assert doc.pages == (Page(1, TEXT),)
    assert doc.page_count == 1


def test_form_feeds_split_pages() -> None:
    doc = load_bytes(b"one\fTwo\n\f\fthree\f", "paged.md")
    assert doc.kind == "md"
    assert doc.pages == (Page(1, "one"), Page(2, "Two"), Page(4, "three"))
    # A blank part is no page without extractable text, and the blank end after the last form feed
    # (RFC 2616's 177th "page") is no page at all.
    assert doc.dropped_pages == ()
    assert doc.page_count == 4


def test_line_endings_nul_and_trailing_whitespace_are_normalised() -> None:
    data = ("  indented\r\nwindows\rold mac\x00 nul \t \r\n\r\n").encode("utf-16-le")
    doc = load_bytes(b"\xff\xfe" + data, "mixed.txt")
    assert doc.text == "  indented\nwindows\nold mac nul"


def test_latin1_text_is_refused_naming_the_byte() -> None:
    assert reason_of("café au lait".encode("latin-1"), "menu.txt") == (
        "not UTF-8 or UTF-16 text (invalid byte 0xe9 at offset 3); save it as UTF-8"
    )


def test_nul_byte_in_utf8_text_is_refused() -> None:
    assert reason_of("hi".encode("utf-16-le"), "wide.md") == (
        "not UTF-8 or UTF-16 text (invalid byte 0x00 at offset 1); save it as UTF-8"
    )


def test_odd_length_utf16_is_refused() -> None:
    assert reason_of(b"\xff\xfe" + "ok".encode("utf-16-le") + b"!", "odd.txt") == (
        "not UTF-8 or UTF-16 text (invalid byte 0x21 at offset 6); save it as UTF-8"
    )


def test_blank_text_file_is_refused() -> None:
    assert reason_of(b" \n\r\n\f\t\n", "blank.txt") == "no text (the file is blank)"


# --- generic failures ------------------------------------------------------------------------
