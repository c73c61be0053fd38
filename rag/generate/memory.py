"""Memory that fits the window (the seed's 会话记忆压缩): older turns folded into a running summary.

When the history, the sources and the question would overflow the model's window, the packer
leaves the oldest exchanges out; instead of losing them, the model writes a summary of them (and
of the summary before, if any) in the conversation's language. The summary goes into the prompt
as the first exchange ("Summary of our conversation so far: …"), is kept with the turn (and so
with the stored conversation), and the next turn starts from it: only exchanges newer than those
it covers are folded in later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag import scripts
from rag.errors import ModelError
from rag.llms.stream import collect
from rag.llms.types import ChatModel, Message
from rag.text import Text

SUMMARY_CHARS = 1500
"""A summary longer than this is cut (a small model that does not stop)."""

OPENING = {"en": "Summary of our conversation so far: ", "zh": "此前对话的摘要："}
ACK = {"en": "Noted: I will keep it in mind.", "zh": "好的，我会记住这些。"}
PROMPT = {
    "en": (
        "Summarize the conversation below so that it can be continued without it. Keep every fact the "
        "user stated or asked about: names, numbers, dates, codes, decisions, and what the answers found. "
        "Write plain sentences, at most 120 words, in English.\n\n{previous}{exchanges}\n\nSummary:"
    ),
    "zh": (
        "请总结下面的对话，使之后不看原对话也能继续。保留用户说过或问过的每个事实：名称、数字、日期、编号、"
        "决定，以及回答找到的内容。用中文写成简洁的句子，不超过200字。\n\n{previous}{exchanges}\n\n摘要："
    ),
}
PREVIOUS = {"en": "Summary of what came before: {summary}\n\n", "zh": "更早对话的摘要：{summary}\n\n"}


@dataclass(frozen=True)
class Memory:
    summary: str
    covers: int
    """How many of the conversation's first exchanges (a question and its answer) the summary stands for."""


def language_of(messages: Sequence[Message]) -> str:
    return scripts.language_of(" ".join(m.content for m in messages))


def summary_exchange(memory: Memory | None, language: str) -> list[Message]:
    """The summary as the prompt's first exchange; [] without one."""
    if memory is None or not memory.summary.strip():
        return []
    return [Message("user", OPENING[language] + memory.summary.strip()), Message("assistant", ACK[language])]


def summarize(
    model: ChatModel,
    exchanges: Sequence[Message],
    previous: str = "",
    *,
    language: str | None = None,
    on_place: Callable[[int], None] | None = None,
    tick: Callable[[], None] | None = None,
) -> str:
    """The model's summary of `exchanges` (and of the `previous` summary); ModelError when it fails.
    `on_place` is told the summary's place in line for a model that answers one question at a time; `tick` is
    called meanwhile (rag.llms.stream.collect: a page's Stop raises from it)."""
    language = language or language_of(exchanges)
    lines = "\n".join(f"{'User' if m.role == 'user' else 'Assistant'}: {m.content.strip()}" for m in exchanges)
    before = PREVIOUS[language].format(summary=previous.strip()) if previous.strip() else ""
    prompt = PROMPT[language].format(previous=before, exchanges=lines)
    written = collect(
        lambda stop: model.stream([Message("user", prompt)], temperature=0.0, stop_event=stop),
        enough=lambda text: len(text) > SUMMARY_CHARS,
        on_place=on_place,
        tick=tick,
        name="chat-summary",
    )
    text = " ".join(written.split())
    if not text:
        raise ModelError(Text("the model wrote an empty summary"))
    return text[:SUMMARY_CHARS]
