"""Boxes drawn on a page for each chunk (rag.documents.render): a chunk that starts inside a line boxes its part."""

from __future__ import annotations

import pymupdf

from rag.chunking import Chunk
from rag.documents import load_bytes
from rag.documents.render import _part_in, render_page
from tests.docgen import make_pdf

PARAGRAPH = (
    "泡泡战士是基于跑跑卡丁车与泡泡堂所开发的游戏，由韩国开发与发行。中国大陆由盛大游戏运营，这是时隔六年"
    "再次授予盛大网络其游戏运营权。玩家以水枪、小枪、锤子或是水炸弹泡封敌人，即为一泡封，将水泡击破为一踢爆。"
)


def test_the_part_of_a_word_within_a_chunk_is_boxed_by_its_share_of_characters() -> None:
    word = (100.0, 10.0, 200.0, 20.0, "中国大陆由盛大游戏运", 0, 1, 0)  # ten characters at offset 50
    assert _part_in(word, 50, 0, 55) == pymupdf.Rect(100, 10, 150, 20)
    assert _part_in(word, 50, 55, 90) == pymupdf.Rect(150, 10, 200, 20)
    assert _part_in(word, 50, 0, 100) == pymupdf.Rect(100, 10, 200, 20)
    assert _part_in(word, 50, 60, 90) is None and _part_in(word, 50, 0, 50) is None


def test_a_chunk_starting_inside_a_chinese_line_boxes_its_part_of_that_line() -> None:
    """A Chinese line is one MuPDF word: the chunk starting inside it had none of that line boxed (a walk: the
    page drew the line in the colour of the chunk before, while the text view began the next chunk there)."""
    data = make_pdf([PARAGRAPH], fontname="china-s")
    doc = load_bytes(data, "游戏.pdf")
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        words = pdf[0].get_text("words")
    lines = {(w[5], w[6]) for w in words}
    assert len(lines) >= 3  # the paragraph wraps
    middle = doc.text.index(words[1][4]) + len(words[1][4]) // 2  # inside the second line
    chunks = [Chunk(0, "", 0, 0, middle, (1,)), Chunk(1, "", 0, middle, len(doc.text), (1,))]
    image = render_page(data, doc, 1, chunks)
    assert image.boxes == len(lines) + 1  # every line once, the second line by both chunks
