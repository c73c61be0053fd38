"""Two numbered sources shared by the prompt, citation and conversation tests, and a conversation about models
named by numbers (the follow-up tests)."""

from __future__ import annotations

import uuid

from rag import generate
from rag.llms.types import Message
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


MODELS_ASKED = (
    Message("user", "How much does Model 4 cost?"),
    Message("assistant", "Model 4 costs $18,500.00 [1]."),
    Message("user", "And Model 5?"),
    Message("assistant", "Model 5 costs $21,000.00 [1]."),
    Message("user", "What is the warranty?"),
    Message("assistant", "Every model comes with a three-year warranty [1]."),
)
"""A walk's conversation before its "How heavy is it?" (no answer in it says "weight")."""
