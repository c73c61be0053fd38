"""The document as sentence-aligned windows, and N of them spread over it."""

from __future__ import annotations

import pytest

from rag.tuning.passages import MAX_WINDOW_CHARS, WINDOW_CHARS, Window, spread, usable, windows
from tests.tuning.samples import chinese_document, english_document


@pytest.mark.parametrize("document", [english_document(12), chinese_document(12)])
def test_windows_tile_the_document_in_whole_sentences(document: str) -> None:
    tiles = windows(document)
    assert [w.index for w in tiles] == list(range(len(tiles)))
    covered = "".join(document[w.start : w.end] for w in tiles)
    assert covered == "".join(tiles[i].text for i in range(len(tiles)))
    assert "".join(document.split()) == "".join(covered.split())  # nothing but whitespace between them
    for w in tiles[:-1]:
        assert w.text[-1] in ".。" and len(w.text) >= WINDOW_CHARS
        assert w.text == w.text.strip()


def test_a_sentence_longer_than_the_limit_is_cut_at_spaces() -> None:
    document = " ".join(f"word{i}" for i in range(600))  # no full stop anywhere
    tiles = windows(document)
    assert len(tiles) > 3 and all(len(w.text) <= MAX_WINDOW_CHARS for w in tiles)
    assert " ".join(w.text for w in tiles) == document


def test_the_passages_are_spread_evenly_and_boilerplate_is_skipped() -> None:
    tiles = windows(english_document(12))
    assert [w.index for w in spread(tiles, 3)] == [2, 6, 10]
    assert len(spread(tiles, 50)) == len(tiles)  # a short document gives what it has
    junk = Window(6, tiles[6].start, tiles[6].end, "Contents .......... 12\n" * 20)
    moved = spread([*tiles[:6], junk, *tiles[7:]], 3)
    assert [w.index for w in moved] == [2, 5, 10]  # the nearest usable window of the same stretch


@pytest.mark.parametrize(
    "text",
    [
        "Copyright 2024 Example Press. All rights reserved. " * 5,
        "12 345 678 90 " * 20,
        "Too short to ask about.",
        "Page " + " ".join(str(i) for i in range(120)),
    ],
)
def test_boilerplate_and_figures_are_not_usable(text: str) -> None:
    assert not usable(Window(0, 0, len(text), text))


def test_prose_in_either_language_is_usable() -> None:
    for document in (english_document(1), chinese_document(3)):
        assert usable(windows(document)[0])


def test_the_sizes_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 1 character"):
        windows("text", 0)
    with pytest.raises(ValueError, match="at least 1 passage"):
        spread([], 0)
