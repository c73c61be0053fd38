"""A knowledge base's question set, kept in PostgreSQL beside it, and the figures of every check run on it:
`rag questions FILE --kb NAME` saves one, `rag eval --kb NAME` re-runs it and says what changed since the
last run (a retrieval regression check, issue #30).

One row per question (its text, the answer quoted from the document, the answer's [start, end) in the
document's text, its language and the document's `original_filename`); one row per run (when, the embedder,
the chunk settings, the search mode, hit@1/3/5 and MRR, and a fingerprint of the questions it ran, so that a
run is only compared with one on the same questions). Both go with their knowledge base (ON DELETE CASCADE).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from rag.errors import RagError
from rag.text import Text

QUESTION_SETS_SCHEMA = """
CREATE TABLE IF NOT EXISTS kb_questions (
    knowledge text NOT NULL REFERENCES knowledge_bases(name) ON DELETE CASCADE,
    document text NOT NULL,
    position integer NOT NULL,
    question text NOT NULL,
    answer text NOT NULL,
    answer_start integer NOT NULL CHECK (answer_start >= 0),
    answer_end integer NOT NULL CHECK (answer_end > answer_start),
    language text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (knowledge, document, position)
);
CREATE TABLE IF NOT EXISTS kb_question_runs (
    id bigserial PRIMARY KEY,
    knowledge text NOT NULL REFERENCES knowledge_bases(name) ON DELETE CASCADE,
    ran_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    embedder text NOT NULL,
    chunk_settings jsonb NOT NULL,
    mode text NOT NULL,
    questions integer NOT NULL,
    fingerprint text NOT NULL,
    hit_at_1 double precision NOT NULL,
    hit_at_3 double precision NOT NULL,
    hit_at_5 double precision NOT NULL,
    mrr double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_question_runs_knowledge_idx ON kb_question_runs (knowledge, mode, id DESC);
"""


@dataclass(frozen=True)
class SavedQuestion:
    text: str
    answer: str
    start: int
    end: int
    """[start, end) of `answer` in the document's text (`Document.text`, which stored chunk offsets index)."""
    language: str
    document: str
    """The document's `original_filename` in the knowledge base."""


@dataclass(frozen=True)
class RunFigures:
    """One check of a question set: what it ran with and what it measured."""

    embedder: str
    chunk_settings: dict[str, Any]
    mode: str
    questions: int
    fingerprint: str
    hit_at_1: float
    hit_at_3: float
    hit_at_5: float
    mrr: float
    ran_at: datetime | None = None
    """When it ran (set by the database; None before it is saved)."""


def fingerprint(questions: Sequence[SavedQuestion]) -> str:
    """A digest of the questions and their answers' places: two runs compare only on the same set."""
    rows = [[q.document, q.text, q.start, q.end] for q in questions]
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()[:16]


Connect = Callable[[], AbstractContextManager[psycopg.Connection]]


class QuestionSets:
    """The question sets and their runs, over the store's pooled connections (`Store.question_sets`)."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect

    def replace(self, knowledge: str, document: str, questions: Sequence[SavedQuestion]) -> int:
        """Make `questions` the set's questions about `document` (those of other documents stay); returns how
        many the set holds now. The knowledge base must exist."""
        if any(q.document != document for q in questions):
            raise ValueError(f"every question must be about {document!r}")
        with self._connect() as conn, conn.transaction():
            found = conn.execute("SELECT 1 FROM knowledge_bases WHERE name = %s FOR UPDATE", (knowledge,)).fetchone()
            if found is None:
                raise RagError(
                    Text(
                        "no knowledge base named {name}: ingest the document into it first",
                        name=repr(knowledge),
                    )
                )
            conn.execute("DELETE FROM kb_questions WHERE knowledge = %s AND document = %s", (knowledge, document))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO kb_questions (knowledge, document, position, question, answer, answer_start, "
                    "answer_end, language) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [
                        (knowledge, document, i, q.text, q.answer, q.start, q.end, q.language)
                        for i, q in enumerate(questions)
                    ],
                )
            row = conn.execute("SELECT count(*) FROM kb_questions WHERE knowledge = %s", (knowledge,)).fetchone()
            return int(row[0]) if row else 0

    def questions(self, knowledge: str) -> list[SavedQuestion]:
        """The set's questions, by document and then in the order they were saved."""
        with self._connect() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(
                "SELECT question, answer, answer_start, answer_end, language, document FROM kb_questions "
                "WHERE knowledge = %s ORDER BY document, position",
                (knowledge,),
            )
            return [
                SavedQuestion(
                    r["question"], r["answer"], r["answer_start"], r["answer_end"], r["language"], r["document"]
                )
                for r in cur.fetchall()
            ]

    def save_run(self, knowledge: str, run: RunFigures) -> RunFigures:
        """Record a run; returns it with the time the database gave it."""
        with self._connect() as conn:
            row = conn.execute(
                "INSERT INTO kb_question_runs (knowledge, embedder, chunk_settings, mode, questions, fingerprint, "
                "hit_at_1, hit_at_3, hit_at_5, mrr) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING ran_at",
                (
                    knowledge,
                    run.embedder,
                    Jsonb(run.chunk_settings),
                    run.mode,
                    run.questions,
                    run.fingerprint,
                    run.hit_at_1,
                    run.hit_at_3,
                    run.hit_at_5,
                    run.mrr,
                ),
            ).fetchone()
        return RunFigures(**{**run.__dict__, "ran_at": row[0] if row else None})

    def last_run(self, knowledge: str, mode: str) -> RunFigures | None:
        """The latest run of the set in `mode`; None before the first."""
        with self._connect() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(
                "SELECT embedder, chunk_settings, mode, questions, fingerprint, hit_at_1, hit_at_3, hit_at_5, mrr, "
                "ran_at FROM kb_question_runs WHERE knowledge = %s AND mode = %s ORDER BY id DESC LIMIT 1",
                (knowledge, mode),
            )
            row = cur.fetchone()
        return RunFigures(**row) if row else None
