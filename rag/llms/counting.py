"""Counting a prompt's tokens as the model will: its own tokenizer where we run it, cl100k otherwise.

The context budget and the packer need the real count: Qwen's tokenizer writes Chinese in ~0.42
tokens a character where cl100k needs ~1 (400 vs 950 tokens for the same 600 characters, measured
here), so counting Qwen's prompts with cl100k left more than half of the window unused for Chinese.
Ollama has no tokenize endpoint, so its prompts are estimated with cl100k plus the chat framing, and
the estimate is calibrated with the `prompt_eval_count` Ollama reports after each answer (per model).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rag.llms.types import Message
from rag.text import Text

MESSAGE_FRAMING = 4
"""Tokens a chat template adds around each message (role, start and end marks), for the estimate."""


class TokenCounter(Protocol):
    @property
    def name(self) -> str:
        """How the count is made, as the budget bar says it ("Qwen's tokenizer", "cl100k estimate")."""
        ...

    def text(self, text: str) -> int: ...

    def prompt(self, messages: Sequence[Message]) -> int:
        """Tokens of the whole prompt the model reads for `messages` (template included)."""
        ...


@dataclass(frozen=True)
class Cl100kCounter:
    """The cl100k estimate, times `factor`: what the model's own counts were, measured on its last answers."""

    factor: float = 1.0

    @property
    def name(self) -> str:
        if self.factor == 1.0:
            return Text("cl100k estimate")
        return Text("cl100k estimate × {factor}, calibrated on the model's own counts", factor=f"{self.factor:.2f}")

    def text(self, text: str) -> int:
        return round(_cl100k(text) * self.factor)

    def prompt(self, messages: Sequence[Message]) -> int:
        framed = sum(_cl100k(m.content) + MESSAGE_FRAMING for m in messages) + MESSAGE_FRAMING
        return round(framed * self.factor)


def _cl100k(text: str) -> int:
    from rag.chunking import count_tokens  # tiktoken: only once something is counted

    return count_tokens(text)


CL100K = Cl100kCounter()


PLAUSIBLE = (0.6, 1.6)
"""Ratios of reported to estimated prompt tokens taken for calibration: outside them the report is of
something else (Ollama counts only what it evaluated, so a prompt it had cached reports a fraction)."""
_factors: dict[str, float] = {}
_factors_lock = threading.Lock()


def calibrate(model_name: str, estimated: int, reported: int | None) -> None:
    """Learn from one answer how the model counts: `reported` (Ollama's prompt_eval_count) against
    the cl100k `estimated` tokens of the same prompt; a running mean over the last answers."""
    if not reported or estimated <= 0 or not PLAUSIBLE[0] <= reported / estimated <= PLAUSIBLE[1]:
        return
    with _factors_lock:
        old = _factors.get(model_name)
        ratio = reported / estimated
        _factors[model_name] = ratio if old is None else 0.5 * old + 0.5 * ratio


def forget_calibration() -> None:
    with _factors_lock:
        _factors.clear()


def token_counter(model: object) -> TokenCounter:
    """The model's own counter when it has one (the embedded models), else the cl100k estimate,
    calibrated with what the model reported for its earlier prompts."""
    own = getattr(model, "token_counter", None)
    if callable(own):
        counter = own()
        if counter is not None:
            return counter  # type: ignore[no-any-return]
    with _factors_lock:
        factor = _factors.get(str(getattr(model, "name", "")))
    return CL100K if factor is None else Cl100kCounter(factor)
