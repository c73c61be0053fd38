"""Follow-up rewriting: "and in 2023?" becomes a standalone query before it is searched.

A follow-up searched as asked finds passages about nothing; the model that answers is asked for
one line that can be understood without the conversation. A failure is never fatal: the
question is searched as asked, with a note saying so.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from rag.errors import ModelError
from rag.generate.sentences import MARKER
from rag.llms.types import ChatModel, Message
from rag.text import Text, text_of

REWRITE_PROMPT = (
    "Rewrite the last question of this conversation as one standalone search query that can be "
    "understood without the conversation. Keep its language. Reply with the query only.\n\n"
    "{history}\nLast question: {question}\nStandalone query:"
)


@dataclass(frozen=True)
class Rewrite:
    query: str
    """What to search: the rewrite, or the question when rewriting failed."""
    note: str = ""
    """Why the question was searched as asked (empty when the rewrite worked)."""


def rewrite_messages(history: Sequence[Message], question: str, max_turns: int = 3) -> list[Message]:
    """A prompt asking the model for a standalone retrieval query for a follow-up question."""
    recent = [m for m in history if m.role in ("user", "assistant")][-2 * max_turns:]
    lines = "\n".join(f"{'User' if m.role == 'user' else 'Assistant'}: {m.content.strip()[:600]}" for m in recent)
    return [Message("user", REWRITE_PROMPT.format(history=lines, question=question))]


ANSWER_CHARS = 200
"""A rewrite longer than this and four times the question is an answer, not a query: Qwen 1.5B
once replied "Zhen Shiyin's daughter, also known as Yinglian [1], was 20 years old." to "how old
was she?"; a standalone query adds a name or a year, not a paragraph."""


def clean_rewrite(text: str, fallback: str) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.strip("\"'“”「」 ")
    return line[:500] if line else fallback


def answered_instead(rewrite: str, question: str) -> bool:
    """Whether the model answered the follow-up instead of rewriting it: the line cites a source
    (a query has no [1]) or is far longer than the question."""
    if MARKER.search(rewrite) and not MARKER.search(question):
        return True
    return len(rewrite) > max(ANSWER_CHARS, 4 * len(question))


def rewrite_query(model: ChatModel, history: Sequence[Message], question: str, *, thinks: bool = False) -> Rewrite:
    """The follow-up rewritten for retrieval by `model`; `thinks`: turn its thinking off for this."""
    parts: list[str] = []
    stop = threading.Event()
    try:
        for event in model.stream(rewrite_messages(history, question), temperature=0.0,
                                  think=False if thinks else None, stop_event=stop):
            if event.kind == "content":
                parts.append(event.text)
                if "\n" in "".join(parts).strip():
                    stop.set()  # one line is all clean_rewrite keeps: a base model would go on
    except ModelError as exc:
        return Rewrite(question, Text("Rewriting the follow-up failed ({error}); searched for the question as asked.",
                                      error=text_of(exc)))
    query = clean_rewrite("".join(parts), question)
    if answered_instead(query, question):
        return Rewrite(question, Text("The model answered the follow-up instead of rewriting it; searched for the "
                                      "question as asked."))
    return Rewrite(query)
