"""Inline citation markers as links to their source card (issue 29, item 10)."""

from __future__ import annotations

from ui import citelinks


def test_a_marker_links_to_its_source_and_the_link_reads_back() -> None:
    assert citelinks.href("3fa2b1c0", 2) == "#source-3fa2b1c0-2"
    assert citelinks.marker(":blue-badge[2]", "3fa2b1c0", 2) == "[:blue-badge[2]](#source-3fa2b1c0-2)"
    assert citelinks.parse("3fa2b1c0-2") == ("3fa2b1c0", 2)
    assert citelinks.parse("#source-3fa2b1c0-12") == ("3fa2b1c0", 12)


def test_anything_else_is_no_source() -> None:
    for value in (None, "", "3fa2b1c0", "3fa2-b1c0-x", "#other-1-2", "a b-1", 7):
        assert citelinks.parse(value) is None


def test_the_listener_looks_for_the_links_it_is_given() -> None:
    assert "PREFIX" not in citelinks._JS
    assert 'a[href^="#source-"]' in citelinks._JS and "/^#source-([0-9A-Za-z]+)-([0-9]+)$/" in citelinks._JS
