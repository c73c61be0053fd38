"""Conversations that last: each finished turn saved to PostgreSQL, a conversation reopened as turns.

The page, `rag ask --conversation ID` and `rag conversations` share these. A reopened turn's
sources whose chunk is gone (the document was deleted or replaced since) are marked in `Turn.gone`,
so their badges say so instead of opening another text.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rag.generate.conversation import Say, Turn, export_markdown
from rag.generate.prompt import Source
from rag.generate.records import turn_from_record, turn_record
from rag.text import Text

if TYPE_CHECKING:
    from rag.store.conversations import ConversationInfo, Conversations


def save_turn(conversations: Conversations, conversation_id: str | None, turn: Turn) -> str:
    """Append `turn` to the conversation (a new one, titled by the question, when `conversation_id` is
    None); the conversation's id."""
    if conversation_id is None:
        conversation_id = str(conversations.create(turn.question, turn.kbs, turn.model).id)
    conversations.append(conversation_id, turn_record(turn))
    return conversation_id


def load_conversation(conversations: Conversations, conversation_id: str) -> tuple[ConversationInfo, list[Turn]]:
    """The conversation and its turns, each source whose chunk is gone marked."""
    info = conversations.require(conversation_id)
    records = conversations.turns(info.id)
    turns = [turn_from_record(r) for r in records]
    missing = conversations.missing_chunks([str(s.hit.id) for t in turns for s in t.sources])
    return info, [
        dataclasses.replace(t, gone=tuple(s.n for s in t.sources if str(s.hit.id) in missing)) if missing else t
        for t in turns
    ]


def conversation_json(info: ConversationInfo, turns: Sequence[Turn]) -> str:
    """The conversation as JSON: its title, knowledge bases, dates and every turn's record."""
    data: dict[str, Any] = {
        "id": str(info.id),
        "title": info.title,
        "knowledge_bases": list(info.knowledge_bases),
        "model": info.model,
        "created_at": info.created_at.isoformat(),
        "updated_at": info.updated_at.isoformat(),
        "turns": [turn_record(t) for t in turns],
    }
    return json.dumps(data, ensure_ascii=False, indent=2)


def conversation_markdown_export(
    info: ConversationInfo, turns: Sequence[Turn], *, say: Say = str, source_line: Callable[[Source], str] | None = None
) -> str:
    """A stored conversation as Markdown under its title (`say`, `source_line`: as `export_markdown`'s)."""
    body = export_markdown(turns, say=say, source_line=source_line)
    return body.replace(f"# {say(Text('Conversation'))}\n", f"# {info.title}\n", 1)
