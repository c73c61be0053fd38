"""Two numbered sources shared by the prompt, citation and conversation tests."""

from __future__ import annotations

import uuid

from rag import generate
from rag.store import Hit


def hit(name: str, pages: tuple[int, ...], content: str, score: float = 0.5) -> Hit:
    return Hit(
        id=uuid.uuid4(), content=content, metadata={"original_filename": name, "pages": list(pages)}, score=score
    )


SOURCES = generate.number_sources(
    [
        hit("report.pdf", (3,), "Revenue rose eleven percent."),
        hit("notes.md", (1, 2), "The board approved a dividend."),
    ]
)
