"""The context budget: what each part of the prompt costs against the model's window, and fitting it.

A prompt larger than the window loses its start (the instructions and the first sources) without
any error from the model, so the cost is counted before sending and the oldest exchanges of the
conversation are left out first.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from rag.chunking import count_tokens
from rag.generate.prompt import Source, build_messages, format_sources
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

    @property
    def used(self) -> int:
        return self.system + self.sources + self.history + self.question

    @property
    def fits(self) -> bool:
        return self.used + self.reserve <= self.limit

    @property
    def share(self) -> float:
        return (self.used + self.reserve) / self.limit if self.limit else 1.0


def context_budget(messages: Sequence[Message], sources: Sequence[Source], context_length: int,
                   *, reserve: int = ANSWER_RESERVE, preamble: str | None = None) -> Budget:
    """Token use per part of the prompt, counted with cl100k (an estimate of the model's own).

    `preamble` is text the model puts before the prompt itself (the embedded model's worked
    example, `rag.llms.citation_example`); it counts as system."""
    system_total = count_tokens(messages[0].content) if messages else 0
    system_total += count_tokens(preamble) if preamble else 0
    source_tokens = count_tokens(format_sources(sources)) if sources else 0
    history = sum(count_tokens(m.content) for m in messages[1:-1])
    question = count_tokens(messages[-1].content) if len(messages) > 1 else 0
    return Budget(max(system_total - source_tokens, 0), source_tokens, history, question, reserve,
                  context_length)


class FittedPrompt(NamedTuple):
    """A prompt that fits (or cannot be made to), its budget and how many exchanges were left out."""

    messages: list[Message]
    budget: Budget
    dropped: int


def fit_prompt(question: str, sources: Sequence[Source], template: str | None, history: Sequence[Message],
               limit: int, reserve: int = ANSWER_RESERVE, *, embedded: bool = False) -> FittedPrompt:
    """The prompt and its budget; the oldest exchanges are left out while it would not fit.

    `embedded`: for the embedded model, whose worked example goes before the prompt."""
    from rag.llms import citation_example  # the model clients: only once a prompt is fitted

    kept = list(history)
    dropped = 0
    while True:
        messages = build_messages(question, sources, system_template=template, history=kept)
        preamble = citation_example(messages) if embedded else None
        budget = context_budget(messages, sources, limit, reserve=reserve, preamble=preamble)
        if budget.fits or not kept:
            return FittedPrompt(messages, budget, dropped)
        kept = kept[2:]
        dropped += 1
