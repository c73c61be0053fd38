"""A ChatModel stand-in for question generation: it reads the passage out of the prompt and streams the
reply a test gives for it, a few characters at a time, as a model streams tokens."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

from rag.errors import GenerationError
from rag.llms.types import GenerationStats, Message, StreamEvent


def passage_of(prompt: str) -> str:
    """The passage a prompt asks about (or the sentence, for a statement asked about alone)."""
    for label in ("Passage:\n", "段落：\n", "Sentence:\n", "句子：\n"):
        if label in prompt:
            return prompt.split(label, 1)[1]
    raise AssertionError(f"no passage in the prompt {prompt[:80]!r}")


class ReplyingModel:
    """Replies `reply(passage)` to each prompt; `fail_on` passages (by call number, 1-based) raise."""

    name = "ollama:scripted"
    supports_tools = False
    supports_thinking = False

    def __init__(self, reply: Callable[[str], str], *, fail_on: Sequence[int] = (), piece: int = 3) -> None:
        self.reply = reply
        self.fail_on = set(fail_on)
        self.piece = piece
        self.prompts: list[str] = []
        self.conversations: list[list[Message]] = []
        self.streamed: list[str] = []
        """What each call streamed before it ended (the whole reply, or less when stopped)."""
        self.temperatures: list[float] = []
        self.on_call: Callable[[int], None] | None = None

    def context_length(self) -> int:
        return 4096

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        num_ctx: int | None = None,
        think: bool | None = None,
        stop_event: threading.Event | None = None,
    ) -> Iterator[StreamEvent]:
        prompt = messages[-1].content
        self.prompts.append(prompt)
        self.conversations.append(list(messages))
        self.temperatures.append(temperature)
        if self.on_call is not None:
            self.on_call(len(self.prompts))
        if len(self.prompts) in self.fail_on:
            raise GenerationError("the model fell over")
        text = self.reply(passage_of(messages[0].content))
        sent = ""
        for i in range(0, len(text), self.piece):
            if stop_event is not None and stop_event.is_set():
                break
            sent += text[i : i + self.piece]
            yield StreamEvent("content", text[i : i + self.piece])
        self.streamed.append(sent)
        yield StreamEvent("done", stats=GenerationStats(done_reason="stop"))
