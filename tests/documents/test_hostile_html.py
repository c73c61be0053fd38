"""Hostile web pages (issue 33): text that libxml2's tree parser drops (255+ levels of nesting, a text node over
10 MB) is read by the streaming reader instead of being stored as a title alone, and a large page of small
tags is read without building a tree (as a tree it costs ~190 bytes of memory per byte of HTML)."""

from __future__ import annotations

import resource
import time

from rag.documents import load_bytes
from rag.documents.web import MAX_TREE_HTML_BYTES, _visible_length

PHRASE = "The harbour lantern burns violet at midnight."


def nested(depth: int, inner: str) -> str:
    return "<div>" * depth + inner + "</div>" * depth


def test_text_nested_past_255_levels_is_read() -> None:
    page = f"<html><head><title>Deep</title></head><body>{nested(300, f'<p>{PHRASE}</p>')}</body></html>"
    assert len(page) < 4_000  # issue 33's file: 3.7 KB
    doc = load_bytes(page.encode(), "deep.html")
    assert PHRASE in doc.text and doc.text.startswith("Deep")


def test_text_after_a_deeply_nested_part_of_an_ordinary_page_is_read() -> None:
    article = f"<article><h1>Results</h1><p>{'Revenue grew by twelve percent in the east. ' * 20}</p>"
    tail = f"<h2>Outlook</h2><p>{PHRASE}</p></article>"
    page = f"<html><body>{article}{nested(2_000, '<span>deep</span>')}{tail}</body></html>"
    doc = load_bytes(page.encode(), "report.html")
    assert PHRASE in doc.text and "Revenue grew by twelve percent" in doc.text
    assert [p.title for p in doc.pages] == ["Results", "Results › Outlook"]


def test_a_text_node_over_10_mb_is_read_whole() -> None:
    words = "beacon " * 1_600_000  # 11.2 MB in one text node
    page = f"<html><head><title>Huge</title></head><body><p>{words}</p><p>{PHRASE}</p></body></html>"
    doc = load_bytes(page.encode(), "huge.html")
    assert doc.text.count("beacon") == 1_600_000 and PHRASE in doc.text


def test_a_large_page_of_small_tags_is_read_in_bounded_memory() -> None:
    unit = "<p>a <b>few</b> words</p>"
    count = 3 * MAX_TREE_HTML_BYTES // len(unit) // 2
    page = f"<html><head><title>Big</title></head><body><h1>Start</h1>{unit * count}<p>{PHRASE}</p></body></html>"
    data = page.encode()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux: the high-water mark
    started = time.monotonic()
    doc = load_bytes(data, "big.html")
    seconds = time.monotonic() - started
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) << 10
    # As a tree this 3 MB page took +496 MB and ~45 s (trafilatura); streamed, +18 MB and 1.7 s.
    assert grown < 40 * len(data), f"resident memory grew {grown / 1e6:.0f} MB for {len(data) / 1e6:.1f} MB of HTML"
    assert seconds < 30
    assert doc.text.count("a few words") == count and PHRASE in doc.text


def test_an_ordinary_page_keeps_trafilatura_leaving_out_navigation_and_scripts() -> None:
    links = "".join(f'<li><a href="/p{i}">Section {i} of the handbook</a></li>' for i in range(60))
    data = '{"props": "' + "x" * 50_000 + '"}'
    page = (
        f'<html><body><nav><ul>{links}</ul></nav><script type="application/json">{data}</script>'
        f"<article><h1>Results</h1><p>{'Revenue grew by twelve percent in the east. ' * 8}</p></article>"
        "</body></html>"
    )
    doc = load_bytes(page.encode(), "site.html")
    assert "Revenue grew by twelve percent" in doc.text
    assert "Section 7 of the handbook" not in doc.text and "props" not in doc.text


def test_the_visible_text_count_is_one_pass_over_hostile_markup() -> None:
    # A tag pattern that may span '<' or a closing search restarted at each opening would take minutes here.
    for markup in ("<" * 2_000_000, "<script>" * 250_000, "<!--" * 500_000, "<a " * 700_000):
        started = time.monotonic()
        _visible_length(markup)
        assert time.monotonic() - started < 5, markup[:10]
    assert _visible_length("<p>a &amp; b</p><script>var x = 1;</script><!-- no --><style>p {}</style>c") == 4
