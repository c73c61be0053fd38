"""Prompting a small base model: a Question/Answer completion prompt, a worked example that shows it
how to cite, and the stop sequences that end its answer.

A base model completes text rather than chats, and a 270M one copies a pattern far better than it
follows an instruction; these are the patterns, kept apart from the llama.cpp plumbing that runs it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.llms.types import Message
from rag.scripts import HAN_CHAR

PROMPT_STOP = (
    "Question:",
    "\nContext:",
    "\n\n\n",
    "<end_of_turn>",
    "\n\nSources:",
    "\n\n资料：",
    "\n\n[",
    "\n---",
    "\n\nExample:",
)
"""A base model runs on into a new 'Question: ...' or a new block of sources (and invents them);
these end the answer."""

# A worked example put before a grounded prompt for the base model, in the question's language:
# a 270M base model copies a pattern far better than it follows an instruction. On the 24
# questions of rag/evaluation/data/retrieval-set.json (each with its passage and two distractors, greedy
# decoding), the first citation named the right source for 16 answers with it, 13 without
# (`python -m rag bench --only answers`).
CITATION_EXAMPLE_EN = (
    "Sources:\n[1] manual.pdf p. 4\nThe warranty covers parts and labour for two years from the date of "
    "purchase.\n\n[2] faq.pdf p. 1\nReturns are accepted within 30 days.\n\n"
    "Question: How long is the warranty?\n"
    "Answer: The warranty covers parts and labour for two years from the date of purchase [1]."
)
CITATION_EXAMPLE_ZH = (
    "资料：\n[1] 手册.pdf p. 4\n保修期为自购买之日起两年，包括零件和人工。\n\n"
    "[2] 常见问题.pdf p. 1\n三十天内可以退货。\n\n"
    "Question: 保修期多长？\nAnswer: 保修期为自购买之日起两年，包括零件和人工 [1]。"
)
_NUMBERED_SOURCE = re.compile(r"^\[1\] ", re.MULTILINE)


def asks_in_chinese(question: str) -> bool:
    """Whether a question gets the Chinese system prompt and worked example (one rule for both)."""
    return bool(HAN_CHAR.search(question))


def citation_example(messages: Sequence[Message]) -> str | None:
    """The worked example for a prompt with numbered sources (`[1] file p. 2` lines, as
    rag.generate.format_sources writes them), in the language of the last question; None for any
    other prompt, which it would only bias."""
    if not any(m.role == "system" and _NUMBERED_SOURCE.search(m.content) for m in messages):
        return None
    question = next((m.content for m in reversed(messages) if m.role == "user"), "")
    return CITATION_EXAMPLE_ZH if asks_in_chinese(question) else CITATION_EXAMPLE_EN


def completion_prompt(messages: Sequence[Message], example: str | None = None) -> str:
    """A completion-style prompt for a base model: the system text, then 'Question: ...' /
    'Answer: ...' turns, ending with 'Answer:' for the model to complete; `example`, a worked
    example in the same shape, comes first, set apart by a '---' line.

    A user message that already has its own 'Question:' line (context pasted before the question)
    is kept as it is.
    """
    blocks: list[str] = [f"Example:\n\n{example.strip()}\n\n---"] if example else []
    system = "\n\n".join(m.content.strip() for m in messages if m.role == "system" and m.content.strip())
    if system:
        blocks.append(system)
    for m in messages:
        text = m.content.strip()
        if m.role == "user":
            asks = text.startswith("Question:") or "\nQuestion:" in text
            blocks.append(f"{text}\nAnswer:" if asks else f"Question: {text}\nAnswer:")
        elif m.role == "assistant":
            if blocks and blocks[-1].endswith("Answer:"):
                blocks[-1] += f" {text}"
            else:
                blocks.append(f"Answer: {text}")
        elif m.role == "tool":
            blocks.append(f"Tool result: {text}")
    if not blocks or not blocks[-1].endswith("Answer:"):
        blocks.append("Answer:")
    return "\n\n".join(blocks)


# The embedded instruct model (Qwen2.5-Coder-1.5B) follows the system prompt's citation rule in
# English but rarely in Chinese; said again right after the question, where a small model weighs it
# most, it cites (`python -m rag bench --only answers` measures both). "Answer this question directly"
# is what most of its misreadings lacked (it copied a sentence near the answer, or named the subject:
# "王法慧 [1]" for "她是哪位皇帝的皇后？"): on the conversation bench's 62 questions asked alone, right
# answers went from 24/31 to 28/31 in Chinese and 29/31 to 30/31 in English. The Chinese example
# stays a shape ("……[1]"), not words: "答案内容 [1]" was copied as an answer, and with no example at
# all it cited the gold passage 2 times in 31 instead of 26.
CITE_REMINDER_EN = (
    "(Answer this question directly from the sources above, and put the source number in brackets, like [1], "
    "after each sentence that uses it.)"
)
CITE_REMINDER_ZH = "（只根据上面的资料，直接回答这个问题。每句话末尾标注所用资料的编号，格式如：……[1]。）"


def with_cite_reminder(messages: Sequence[Message]) -> list[Message]:
    """`messages` with the citation reminder after the last question, in its language, when the
    system prompt holds numbered sources; unchanged otherwise."""
    out = list(messages)
    if not any(m.role == "system" and _NUMBERED_SOURCE.search(m.content) for m in out):
        return out
    for i in range(len(out) - 1, -1, -1):
        if out[i].role == "user":
            reminder = CITE_REMINDER_ZH if asks_in_chinese(out[i].content) else CITE_REMINDER_EN
            out[i] = Message("user", f"{out[i].content}\n\n{reminder}")
            break
    return out
