"""The vocabulary every chat model speaks: messages in, `StreamEvent`s out, and what a generation cost.

Kept free of any client library, so that code which only builds prompts or reads statistics (the
CLI, the prompt packer) imports no HTTP or llama.cpp machinery.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Message:
    role: str
    """'system', 'user' or 'assistant' ('tool' for tool results)."""
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"message role must be one of {', '.join(ROLES)}, got {self.role!r}")


@dataclass(frozen=True)
class GenerationStats:
    """What one generation cost. Durations are in seconds; None when the model did not say."""

    done_reason: str | None = None
    """'stop' (natural end or a stop sequence), 'length' (token limit), 'stopped' (stop_event), ..."""
    total_duration: float | None = None
    load_duration: float | None = None
    prompt_eval_count: int | None = None
    prompt_eval_duration: float | None = None
    eval_count: int | None = None
    """Tokens generated (for a stopped Ollama stream: the chunks received, one token each)."""
    eval_duration: float | None = None

    @property
    def tokens_per_second(self) -> float | None:
        """Generation speed: eval_count / eval_duration."""
        if self.eval_count is None or not self.eval_duration:
            return None
        return self.eval_count / self.eval_duration

    @property
    def prompt_tokens_per_second(self) -> float | None:
        if self.prompt_eval_count is None or not self.prompt_eval_duration:
            return None
        return self.prompt_eval_count / self.prompt_eval_duration

    @classmethod
    def from_ollama(cls, chunk: Any) -> GenerationStats:
        """From Ollama's final chunk (`done: true`), whose durations are in nanoseconds."""

        def seconds(ns: int | None) -> float | None:
            return None if ns is None else ns / 1e9

        return cls(
            done_reason=chunk.done_reason,
            total_duration=seconds(chunk.total_duration),
            load_duration=seconds(chunk.load_duration),
            prompt_eval_count=chunk.prompt_eval_count,
            prompt_eval_duration=seconds(chunk.prompt_eval_duration),
            eval_count=chunk.eval_count,
            eval_duration=seconds(chunk.eval_duration),
        )


@dataclass(frozen=True)
class StreamEvent:
    kind: str
    """'thinking', 'content', 'loop' (rag.llms.loops cut a repetition), 'queue' (waiting for a model that
    answers one question at a time) or 'done'."""
    text: str = ""
    stats: GenerationStats | None = None
    """Only on 'done'."""
    keep: int | None = None
    """Only on 'loop': how many characters of the content so far to keep."""
    place: int | None = None
    """Only on 'queue': the place in line (1: next), each time it changes; 0 when the model is its."""


@dataclass(frozen=True)
class LoadedModel:
    """One model Ollama holds in memory (GET /api/ps)."""

    name: str
    size: int
    """Bytes the model takes in memory, VRAM included."""
    size_vram: int
    context_length: int | None
    """The context window it was loaded with (Ollama >= 0.7 reports it)."""
    expires_at: datetime | None

    @property
    def share_on_gpu(self) -> str:
        """Where the model sits, worded as `ollama ps` does: '100% GPU', '37%/63% CPU/GPU', '100% CPU'."""
        if self.size_vram == 0:
            return "100% CPU"
        if self.size_vram == self.size:
            return "100% GPU"
        if self.size <= 0 or self.size_vram > self.size:
            return "unknown"
        cpu = round((self.size - self.size_vram) / self.size * 100)
        return f"{cpu}%/{100 - cpu}% CPU/GPU"


# Deliberately not runtime_checkable: isinstance() would read the properties, which for Ollama can
# mean a network round trip.
class ChatModel(Protocol):
    @property
    def name(self) -> str:
        """'ollama:<model>' or 'local:gemma3-270m'; resolve_chat_model() accepts it back."""
        ...

    @property
    def supports_tools(self) -> bool: ...

    @property
    def supports_thinking(self) -> bool: ...

    def context_length(self) -> int:
        """Tokens the model reads at once, as it runs now (prompt and answer together)."""
        ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        num_ctx: int | None = None,
        think: bool | None = None,
        stop_event: threading.Event | None = None,
    ) -> Iterator[StreamEvent]: ...


def check_messages(messages: Sequence[Message]) -> list[Message]:
    """`messages` as a list, refused when empty or not made of Message objects (a caller's bug)."""
    items = list(messages)
    if not items:
        raise ValueError("stream() needs at least one message")
    for m in items:
        if not isinstance(m, Message):
            raise TypeError(f"stream() takes Message objects, got {type(m).__name__}")
    return items
