"""The context budget: what each part of the prompt costs against the model's window.

A prompt larger than the window loses its start (the instructions and the first sources) without
any error from the model, so the cost is counted before sending (rag.generate.packing fits it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.generate.prompt import Source, format_sources
from rag.llms.counting import CL100K, Cl100kCounter, TokenCounter
from rag.llms.types import Message

ANSWER_RESERVE = 512
"""Tokens of the context window kept free for the answer."""


@dataclass(frozen=True)
class Budget:
    system: int
    sources: int
    history: int
    question: int
    reserve: int
    """Tokens kept free for the answer."""
    limit: int
    counted_with: str = CL100K.name
    """How the tokens were counted (the model's tokenizer, or the cl100k estimate)."""
    scale: float | None = 1.0
    """The calibration factor of a cl100k estimate (rag.llms.counting.calibrate); None when the
    model's own tokenizer counted."""
    summary: int = 0
    """Tokens of the summary of the older turns (rag.generate.memory), counted apart from the history."""

    @property
    def used(self) -> int:
        return self.system + self.sources + self.summary + self.history + self.question

    @property
    def fits(self) -> bool:
        return self.used + self.reserve <= self.limit

    @property
    def share(self) -> float:
        return (self.used + self.reserve) / self.limit if self.limit else 1.0


def context_budget(
    messages: Sequence[Message],
    sources: Sequence[Source],
    limit: int,
    counter: TokenCounter = CL100K,
    *,
    reserve: int = ANSWER_RESERVE,
    summary: int = 0,
) -> Budget:
    """Token use per part of a built prompt: the whole as `counter` counts it (template included);
    the system part is what is left after the sources, the summary (the first `summary` messages
    after the system prompt), the history and the question."""
    total = counter.prompt(messages)
    source_tokens = counter.text(format_sources(sources)) if sources else 0
    summary_tokens = sum(counter.text(m.content) for m in messages[1 : 1 + summary])
    history = sum(counter.text(m.content) for m in messages[1 + summary : -1])
    question = counter.text(messages[-1].content) if len(messages) > 1 else 0
    return Budget(
        max(total - source_tokens - summary_tokens - history - question, 0),
        source_tokens,
        history,
        question,
        reserve,
        limit,
        counter.name,
        scale=counter.factor if isinstance(counter, Cl100kCounter) else None,
        summary=summary_tokens,
    )
