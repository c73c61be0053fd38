"""Conversations kept in PostgreSQL, beside the knowledge bases: one row per conversation, one per turn.

A turn is stored as the JSON record of `rag.generate.records` (question, query, route, sources with
their chunk ids and ranks, answer, citations, model, timings, how it ended) with the columns a list
needs beside it. The tables come with the schema (CREATE ... IF NOT EXISTS), so an existing
database gets them on its next start without `vector_store` being touched.
"""

from __future__ import annotations

import builtins
import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from rag.errors import RagError
from rag.text import Text

CONVERSATIONS_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id uuid PRIMARY KEY,
    title text NOT NULL,
    knowledge_bases text[] NOT NULL DEFAULT '{}',
    model text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS messages (
    id uuid PRIMARY KEY,
    conversation_id uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    position integer NOT NULL,
    question text NOT NULL,
    answer text NOT NULL,
    model text NOT NULL DEFAULT '',
    stopped boolean NOT NULL DEFAULT false,
    turn jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (conversation_id, position)
);
CREATE INDEX IF NOT EXISTS conversations_updated_idx ON conversations (updated_at DESC);
"""

TITLE_CHARS = 80


def _dumps(value: Any) -> str:
    # A tool's structured result may hold values JSON has no type for (a date, a UUID): kept as text.
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class ConversationInfo:
    id: uuid.UUID
    title: str
    knowledge_bases: tuple[str, ...]
    model: str
    created_at: datetime
    updated_at: datetime
    turns: int


def title_from(question: str) -> str:
    """A conversation's title: its first question on one line, cut at TITLE_CHARS."""
    line = " ".join(question.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def parse_id(value: str | uuid.UUID) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value).strip())
    except ValueError:
        raise RagError(
            Text("{value} is not a conversation id (list them: python -m rag conversations list)", value=repr(value))
        ) from None


class Conversations:
    """The conversations of one database; each call takes a connection from the store's pool."""

    def __init__(self, connect: Callable[[], AbstractContextManager[psycopg.Connection]]) -> None:
        self._connect = connect

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._connect() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(query, params)
            return list(cur.fetchall())

    _LIST = (
        "SELECT c.id, c.title, c.knowledge_bases, c.model, c.created_at, c.updated_at, "
        "count(m.id)::int AS turns FROM conversations c LEFT JOIN messages m ON m.conversation_id = c.id "
    )

    @staticmethod
    def _info(row: dict[str, Any]) -> ConversationInfo:
        return ConversationInfo(
            row["id"],
            row["title"],
            tuple(row["knowledge_bases"] or ()),
            row["model"],
            row["created_at"],
            row["updated_at"],
            row["turns"],
        )

    def list(self) -> list[ConversationInfo]:
        """Newest first."""
        rows = self._rows(self._LIST + "GROUP BY c.id ORDER BY c.updated_at DESC, c.created_at DESC")
        return [self._info(r) for r in rows]

    def get(self, conversation_id: str | uuid.UUID) -> ConversationInfo | None:
        rows = self._rows(self._LIST + "WHERE c.id = %s GROUP BY c.id", (parse_id(conversation_id),))
        return self._info(rows[0]) if rows else None

    def require(self, conversation_id: str | uuid.UUID) -> ConversationInfo:
        found = self.get(conversation_id)
        if found is None:
            raise RagError(
                Text("no conversation {id} (list them: python -m rag conversations list)", id=str(conversation_id))
            )
        return found

    def create(self, title: str, knowledge_bases: Sequence[str] = (), model: str = "") -> ConversationInfo:
        new_id = uuid.uuid4()
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO conversations (id, title, knowledge_bases, model) VALUES (%s, %s, %s, %s)",
                (new_id, title_from(title) or "Conversation", list(knowledge_bases), model),
            )
        return self.require(new_id)

    def append(self, conversation_id: str | uuid.UUID, record: dict[str, Any]) -> int:
        """Store one turn at the end of the conversation (in one transaction); its 1-based position."""
        cid = parse_id(conversation_id)
        with self._connect() as conn, conn.transaction():
            row = conn.execute("SELECT knowledge_bases FROM conversations WHERE id = %s FOR UPDATE", (cid,)).fetchone()
            if row is None:
                raise RagError(Text("no conversation {id}: it was deleted", id=str(cid)))
            next_row = conn.execute(
                "SELECT coalesce(max(position), 0) + 1 FROM messages WHERE conversation_id = %s", (cid,)
            ).fetchone()
            assert next_row is not None, "an aggregate returns one row"
            position = next_row[0]
            conn.execute(
                "INSERT INTO messages (id, conversation_id, position, question, answer, model, stopped, turn) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    uuid.uuid4(),
                    cid,
                    position,
                    str(record.get("question", "")),
                    str(record.get("answer", "")),
                    str(record.get("model", "")),
                    bool(record.get("stopped")),
                    Jsonb(record, dumps=_dumps),
                ),
            )
            kbs = list(dict.fromkeys([*(row[0] or []), *(record.get("kbs") or [])]))
            conn.execute(
                "UPDATE conversations SET updated_at = now(), knowledge_bases = %s, "
                "model = CASE WHEN %s <> '' THEN %s ELSE model END WHERE id = %s",
                (kbs, str(record.get("model", "")), str(record.get("model", "")), cid),
            )
        return int(position)

    def turns(self, conversation_id: str | uuid.UUID) -> builtins.list[dict[str, Any]]:  # `list` is a method here
        """The stored turn records, in order."""
        rows = self._rows(
            "SELECT turn FROM messages WHERE conversation_id = %s ORDER BY position", (parse_id(conversation_id),)
        )
        return [r["turn"] for r in rows]

    def rename(self, conversation_id: str | uuid.UUID, title: str) -> None:
        cleaned = " ".join(title.split())
        if not cleaned:
            raise RagError(Text("the title is empty: give the conversation a name"))
        with self._connect() as conn:
            cur = conn.execute(
                "UPDATE conversations SET title = %s WHERE id = %s", (cleaned[:200], parse_id(conversation_id))
            )
            if cur.rowcount == 0:
                raise RagError(Text("no conversation {id}", id=str(conversation_id)))

    def delete(self, conversation_id: str | uuid.UUID) -> bool:
        with self._connect() as conn:
            return conn.execute("DELETE FROM conversations WHERE id = %s", (parse_id(conversation_id),)).rowcount > 0

    def missing_chunks(self, chunk_ids: Sequence[str]) -> set[str]:
        """Which of these chunk ids are no longer stored (their document was deleted or replaced)."""
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted:
            return set()
        ids = [parse_chunk(c) for c in wanted]
        rows = self._rows("SELECT id::text AS id FROM vector_store WHERE id = ANY(%s)", ([i for i in ids if i],))
        present = {r["id"] for r in rows}
        return {c for c in wanted if c not in present}


def parse_chunk(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def iter_chunk_ids(records: Sequence[dict[str, Any]]) -> Iterator[str]:
    for record in records:
        for source in record.get("sources") or ():
            yield str(source["hit"]["id"])
