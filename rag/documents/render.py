"""Pictures of chunks: coloured text (ChunkViz-like) and boxes drawn on the rendered page.

pymupdf is imported by the drawing of a page only: the Upload and Chat pages import this module, and pymupdf's
import alone takes 73 MB of the process's own memory (its Python bindings), which a session that asks questions
and draws no page should not cost (`bench --only sessions`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag.chunking import Chunk
from rag.documents import Document

if TYPE_CHECKING:
    import pymupdf

# Pale fills that stay readable under dark text; overlaps get their own, stronger colour.
PALETTE = ("#cfe3ff", "#ffe1b8", "#d5f2d0", "#f6d2f0")
OVERLAP = "#ffb3b3"
BOX_COLOURS = ((0.18, 0.44, 0.87), (0.93, 0.55, 0.11), (0.22, 0.63, 0.29), (0.75, 0.27, 0.68))


def chunks_html(text: str, chunks: Sequence[Chunk], *, limit: int = 300_000) -> str:
    """The text with each chunk on an alternating background and overlaps in red.

    Hovering a piece shows which chunk(s) it belongs to; a small badge marks each chunk start.
    """
    shown = text[:limit]
    cuts = {0, len(shown)}
    for c in chunks:
        if c.start < len(shown):
            cuts.add(c.start)
            cuts.add(min(c.end, len(shown)))
    points = sorted(cuts)
    starts = {c.start: c.index for c in chunks}
    ordered = sorted(chunks, key=lambda c: c.start)
    parts = [
        '<div class="chunkviz" style="white-space: pre-wrap; font-family: ui-monospace, monospace; '
        'font-size: 0.82rem; line-height: 1.55;">'
    ]
    first = 0
    for a, b in zip(points, points[1:]):
        while first < len(ordered) and ordered[first].end <= a:
            first += 1
        covering = [c.index for c in ordered[first:] if c.start <= a and c.end >= b and c.start < b]
        piece = html.escape(shown[a:b])
        if a in starts:
            parts.append(
                f'<sup style="background:#1d2433;color:#fff;border-radius:3px;padding:0 3px;'
                f'font-size:0.65rem;margin-right:1px">{starts[a]}</sup>'
            )
        if not covering:
            parts.append(f'<span style="color:#8a93a6" title="not in any chunk">{piece}</span>')
        elif len(covering) == 1:
            colour = PALETTE[covering[0] % len(PALETTE)]
            parts.append(f'<span style="background:{colour}" title="chunk {covering[0]}">{piece}</span>')
        else:
            label = " and ".join(str(i) for i in covering)
            parts.append(f'<span style="background:{OVERLAP}" title="overlap of chunks {label}">{piece}</span>')
    if len(text) > limit:
        parts.append(f'<div style="color:#8a93a6">… {len(text) - limit:,} more characters not shown</div>')
    parts.append("</div>")
    return "".join(parts)


@dataclass(frozen=True)
class PageImage:
    png: bytes
    page_number: int
    boxes: int
    """How many word boxes were drawn."""


PAGED_KINDS = ("pdf", "epub", "xps")


def renderable(doc: Document) -> bool:
    return doc.kind in PAGED_KINDS


def has_page_images(filename: str) -> bool:
    """Whether a document of this name has pages to draw (Word, slides, sheets and web pages do not)."""
    return filename.rsplit(".", 1)[-1].lower() in PAGED_KINDS


def _word_offsets(page_text: str, words: Sequence[tuple]) -> list[tuple[int, tuple]]:
    """Where each MuPDF word starts in our page text (both come from MuPDF in reading order)."""
    found: list[tuple[int, tuple]] = []
    cursor = 0
    for word in words:
        at = page_text.find(word[4], cursor)
        if at < 0:
            continue
        found.append((at, word))
        cursor = at + len(word[4])
    return found


def _part_in(word: tuple, at: int, lo: int, hi: int) -> pymupdf.Rect | None:
    """The box of the part of `word` (MuPDF's, starting at offset `at` of the page text) within [lo, hi), its
    width shared out evenly among its characters; None when none of it is. A Chinese line is one MuPDF
    "word": a chunk that starts inside it was drawn over the whole line, in the colour of the chunk before."""
    length = len(word[4])
    start, end = max(lo, at), min(hi, at + length)
    if start >= end:
        return None
    import pymupdf

    x0, y0, x1, y1 = word[:4]
    step = (x1 - x0) / max(length, 1)
    return pymupdf.Rect(x0 + step * (start - at), y0, x0 + step * (end - at), y1)


def render_page(
    data: bytes,
    doc: Document,
    page_number: int,
    chunks: Sequence[Chunk] = (),
    *,
    zoom: float = 1.4,
) -> PageImage:
    """The page as PNG, with the words of each given chunk boxed in the chunk's colour."""
    import pymupdf

    if not renderable(doc):
        raise ValueError(f"{doc.filename}: {doc.kind.upper()} files have no page images")
    index = next((i for i, p in enumerate(doc.pages) if p.number == page_number), None)
    with pymupdf.open(stream=data, filetype=doc.kind) as pdf:
        page = pdf[page_number - 1]
        drawn = 0
        if index is not None and chunks:
            base = doc.page_starts[index]
            page_text = doc.pages[index].text
            words = _word_offsets(page_text, page.get_text("words"))
            for chunk in chunks:
                lo, hi = chunk.start - base, chunk.end - base
                lines: dict[tuple[int, int], pymupdf.Rect] = {}
                for at, word in words:
                    rect = _part_in(word, at, lo, hi)
                    if rect is not None:
                        key = (word[5], word[6])
                        lines[key] = lines[key] | rect if key in lines else rect
                colour = BOX_COLOURS[chunk.index % len(BOX_COLOURS)]
                shape = page.new_shape()
                for rect in lines.values():
                    shape.draw_rect(rect + (-1, -1, 1, 1))
                shape.finish(color=colour, fill=colour, fill_opacity=0.18, stroke_opacity=0.8, width=0.8)
                shape.commit()
                drawn += len(lines)
        pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
        return PageImage(pixmap.tobytes("png"), page_number, drawn)
