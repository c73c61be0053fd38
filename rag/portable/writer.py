"""`export_knowledge_base`: one knowledge base into one zip (the format: rag.portable), streamed.

Read in one REPEATABLE READ, READ ONLY transaction, so that every part is of the same moment while
ingests go on; rows come through server-side cursors in batches, so memory is bounded by a batch and
by the largest document's bytes, whatever the knowledge base's size. The zip is written beside the
target as `<name>.part` and renamed over it once whole: a failed or killed export leaves no half file
under the name asked for.

The chunks come in the order they were written (documents by `ingested_at`, then each one's chunks
by index), read through the documents' index rather than sorted (a sort of a million rows with their
text spills gigabytes to disk): an import writes them in that order again, which also rebuilds the
HNSW graph as the original ingests built it. The vectors are a second pass over the same rows, in the
same snapshot and order (a running digest of the ids checks it): a zip is written one member at a time.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, LiteralString

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from rag.errors import RagError, StoreError
from rag.portable.manifest import (
    CHUNKS,
    DOCUMENTS,
    QUESTION_RUNS,
    QUESTIONS,
    VECTORS,
    Manifest,
    Part,
    source_member,
)
from rag.store import Store
from rag.text import Text, chunks_text

Progress = Callable[[str, int, int], None]
"""Called as (stage, rows done, rows in all) while an export or an import goes on."""

BATCH_ROWS = 2_000
"""Rows fetched per round trip of a server-side cursor (chunks with their text: a few MB)."""
VECTOR_ROWS = 4_096
"""Vectors packed per write of the vectors part (6 MB at 384-d)."""
COMPRESS_LEVEL = 1
"""Deflate level of the JSONL parts and the sources. On the chunks.jsonl of 20,000 bench chunks (27 MB, on
a loaded 2-core machine) level 1 shrank it 5.7x at 78 MB/s, level 6 8.0x at 18 MB/s: the export would be
bound by deflate. The vectors are stored as they are: deflate shrank random 384-d float32 by 7 % at 15 MB/s."""


@dataclass(frozen=True)
class ExportResult:
    path: Path
    name: str
    documents: int
    chunks: int
    questions: int
    question_runs: int
    size_bytes: int
    """The zip's size on disk."""

    def line(self) -> Text:
        return Text(
            "exported {name}: {contents} to {path} ({mb} MB)",
            name=repr(self.name),
            contents=contents(self.documents, self.chunks, self.questions),
            path=str(self.path),
            mb=f"{self.size_bytes / 1e6:.1f}",
        )


def contents(documents: int, chunks: int, questions: int) -> Text:
    """'1 document, 10 chunks, 2 saved questions': what a knowledge base moved holds, each count with its noun
    in the number it takes (each a `Text` of its own, so that a UI says it in its language)."""
    return Text(
        "{documents}, {chunks}, {questions}",
        documents=Text("1 document") if documents == 1 else Text("{n} documents", n=documents),
        chunks=chunks_text(chunks),
        questions=Text("1 saved question") if questions == 1 else Text("{n} saved questions", n=questions),
    )


def json_line(record: dict[str, Any]) -> bytes:
    """One record a line: json.dumps escapes every newline inside strings, so a line is a record for any reader
    that splits on b'\\n' (U+2028 and its kind are left as they are: they are not b'\\n')."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class _Member:
    """A zip member being written, with its size and SHA-256 kept for the manifest."""

    def __init__(self, archive: zipfile.ZipFile, name: str, *, deflate: bool = True) -> None:
        info = zipfile.ZipInfo(name, date_time=datetime.now().timetuple()[:6])
        info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
        # Through a ZipInfo the archive's compresslevel is not applied (Python 3.11 reads `_compresslevel`).
        info._compresslevel = COMPRESS_LEVEL  # type: ignore[attr-defined]
        self.name = name
        self._file: IO[bytes] = archive.open(info, "w", force_zip64=True)
        self._digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self._digest.update(data)
        self.size += len(data)

    def close(self) -> Part:
        self._file.close()
        return Part(self.size, self._digest.hexdigest())


def _iso(value: datetime) -> str:
    return value.isoformat()


def export_knowledge_base(
    store: Store, name: str, out: Path, *, sources: bool = True, progress: Progress | None = None
) -> ExportResult:
    """Write knowledge base `name` to the zip `out` (replaced if it exists): its settings, documents (with
    their bytes unless `sources` is False), chunks, vectors, saved questions and their runs."""
    out = Path(out)
    partial = out.with_name(out.name + ".part")
    try:
        with store.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            with zipfile.ZipFile(partial, "w", allowZip64=True) as archive:
                manifest = _Export(conn, archive, name, progress or (lambda *_: None)).run(sources)
        os.replace(partial, out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return ExportResult(
        out, name, manifest.documents, manifest.chunks, manifest.questions, manifest.question_runs, out.stat().st_size
    )


class _Export:
    """One export's reads and writes, in the order of the members."""

    def __init__(self, conn: psycopg.Connection, archive: zipfile.ZipFile, name: str, progress: Progress) -> None:
        self.conn = conn
        self.archive = archive
        self.name = name
        self.progress = progress
        self.parts: dict[str, Part] = {}
        self.done = 0
        self.total = 0

    def _advance(self, stage: str, rows: int) -> None:
        self.done += rows
        self.progress(stage, self.done, self.total)

    def run(self, sources: bool) -> Manifest:
        kb = self._knowledge_base()
        counts = self._counts()
        documents, chunks, questions, runs = counts
        self.total = documents * (2 if sources else 1) + 2 * chunks + questions + runs
        self.progress("documents", 0, self.total)
        self._documents()
        if sources:
            self._sources()
        ids_digest = self._chunks(chunks)
        self._vectors(chunks, int(kb["dimension"]), ids_digest)
        self._questions()
        self._runs()
        manifest = Manifest(
            name=self.name,
            embedder=kb["embedder"],
            dimension=int(kb["dimension"]),
            chunk_settings=kb["chunk_settings"],
            source_folder=kb["source_folder"],
            created_at=_iso(kb["created_at"]),
            documents=documents,
            chunks=chunks,
            questions=questions,
            question_runs=runs,
            sources=sources,
            parts=self.parts,
            exported_at=datetime.now(UTC).isoformat(),
        )
        info = zipfile.ZipInfo("manifest.json", date_time=datetime.now().timetuple()[:6])
        info.compress_type = zipfile.ZIP_DEFLATED
        self.archive.writestr(info, manifest.as_json())
        return manifest

    def _knowledge_base(self) -> dict[str, Any]:
        with self.conn.cursor(row_factory=dict_row) as cur:
            cur.execute(
                "SELECT embedder, dimension, chunk_settings, source_folder, created_at FROM knowledge_bases "
                "WHERE name = %s",
                (self.name,),
            )
            row = cur.fetchone()
        if row is None:
            raise RagError(Text("no knowledge base named {name}", name=repr(self.name)))
        return row

    def _counts(self) -> tuple[int, int, int, int]:
        row = self.conn.execute(
            "SELECT (SELECT count(*) FROM documents WHERE knowledge = %s), "
            "(SELECT count(*) FROM vector_store WHERE metadata->>'knowledge' = %s), "
            "(SELECT count(*) FROM kb_questions WHERE knowledge = %s), "
            "(SELECT count(*) FROM kb_question_runs WHERE knowledge = %s)",
            (self.name,) * 4,
        ).fetchone()
        assert row is not None, "a SELECT without FROM returns one row"
        return int(row[0]), int(row[1]), int(row[2]), int(row[3])

    def _iter_documents(self, columns: str) -> Iterator[dict[str, Any]]:
        """The knowledge base's documents in the order they were written, through a server-side cursor."""
        with self.conn.cursor(name="export_documents", row_factory=dict_row) as cur:
            cur.itersize = BATCH_ROWS
            cur.execute(
                sql.SQL("SELECT {} FROM documents WHERE knowledge = %s ORDER BY ingested_at, id").format(
                    sql.SQL(columns)
                ),
                (self.name,),
            )
            yield from cur

    def _documents(self) -> None:
        member = _Member(self.archive, DOCUMENTS)
        for doc in self._iter_documents(
            "id, original_filename, path, sha256, size_bytes, page_count, chunk_count, chunk_settings, ingested_at"
        ):
            member.write(json_line({**doc, "id": str(doc["id"]), "ingested_at": _iso(doc["ingested_at"])}))
            self._advance("documents", 1)
        self.parts[DOCUMENTS] = member.close()

    def _sources(self) -> None:
        # One document's bytes at a time: the cursor hands over one row per fetch here (itersize 1 would
        # be the same; BATCH_ROWS documents of 200 MB would not).
        with self.conn.cursor(name="export_sources") as cur:
            cur.itersize = 1
            cur.execute("SELECT id, content FROM documents WHERE knowledge = %s ORDER BY ingested_at, id", (self.name,))
            for document_id, content in cur:
                member = _Member(self.archive, source_member(str(document_id)))
                member.write(bytes(content))
                self.parts[member.name] = member.close()
                self._advance("documents", 1)

    def _rows(self, columns: str) -> Iterator[tuple[bool, tuple[Any, ...]]]:
        """The knowledge base's chunk rows (id first), documents in the order they were written and each
        one's chunks by index, then the rows of no document of the base (written by other tools) by id;
        each with whether its document is one of the base's."""
        of_document = sql.SQL(
            "SELECT {} FROM vector_store WHERE document_id = %s AND metadata->>'knowledge' = %s "
            "ORDER BY (metadata->>'chunk_index')::int, id"
        ).format(sql.SQL(columns))
        for doc in self._iter_documents("id, chunk_count"):
            params = (doc["id"], self.name)
            if doc["chunk_count"] <= BATCH_ROWS:  # a plain query: a server-side cursor costs two round trips more
                for row in self.conn.execute(of_document, params, binary=True):
                    yield True, row
                continue
            with self.conn.cursor(name="export_chunks", binary=True) as cur:
                cur.itersize = BATCH_ROWS
                cur.execute(of_document, params)
                for row in cur:
                    yield True, row
        with self.conn.cursor(name="export_other_chunks", binary=True) as cur:
            cur.itersize = BATCH_ROWS
            cur.execute(
                sql.SQL(
                    "SELECT {} FROM vector_store v WHERE metadata->>'knowledge' = %s AND (document_id IS NULL "
                    "OR NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = v.document_id AND d.knowledge = %s)) "
                    "ORDER BY id"
                ).format(sql.SQL(columns)),
                (self.name, self.name),
            )
            for row in cur:
                yield False, row

    def _chunks(self, expected: int) -> str:
        member = _Member(self.archive, CHUNKS)
        ids = hashlib.sha256()
        written = 0
        self._advance("chunks", 0)
        for of_base, (chunk_id, content, metadata, document_id) in self._rows("id, content, metadata, document_id"):
            ids.update(chunk_id.bytes)
            member.write(
                json_line(
                    {
                        "id": str(chunk_id),
                        # A row of another document (or none) is exported as a row of none: its document
                        # is not in this file.
                        "document_id": str(document_id) if of_base else None,
                        "content": content or "",
                        "metadata": metadata,
                    }
                )
            )
            written += 1
            if written % BATCH_ROWS == 0:
                self._advance("chunks", BATCH_ROWS)
        self._advance("chunks", written % BATCH_ROWS)
        self.parts[CHUNKS] = member.close()
        _same_count(written, expected)
        return ids.hexdigest()

    def _vectors(self, expected: int, dimension: int, ids_digest: str) -> None:
        member = _Member(self.archive, VECTORS, deflate=False)
        ids = hashlib.sha256()
        block = np.empty((VECTOR_ROWS, dimension), dtype="<f4")
        filled = written = 0
        self._advance("vectors", 0)
        for _, (chunk_id, vector) in self._rows("id, embedding"):
            ids.update(chunk_id.bytes)
            block[filled] = _vector_of(chunk_id, vector, dimension)
            filled += 1
            if filled == VECTOR_ROWS:
                member.write(block.tobytes())
                written += filled
                self._advance("vectors", filled)
                filled = 0
        member.write(block[:filled].tobytes())
        written += filled
        self._advance("vectors", filled)
        self.parts[VECTORS] = member.close()
        _same_count(written, expected)
        if ids.hexdigest() != ids_digest:  # the same snapshot and ORDER BY: only a bug gets here
            raise StoreError(Text("the chunks were read in two different orders; nothing was exported"))

    def _questions(self) -> None:
        self._dated_rows(
            QUESTIONS,
            "SELECT document, position, question, answer, answer_start, answer_end, language, created_at "
            "FROM kb_questions WHERE knowledge = %s ORDER BY document, position",
            "created_at",
        )

    def _runs(self) -> None:
        self._dated_rows(
            QUESTION_RUNS,
            "SELECT ran_at, embedder, chunk_settings, mode, questions, fingerprint, hit_at_1, hit_at_3, "
            "hit_at_5, mrr FROM kb_question_runs WHERE knowledge = %s ORDER BY id",
            "ran_at",
        )

    def _dated_rows(self, part: str, query: LiteralString, dated: str) -> None:
        """The knowledge base's rows of `query` as the JSONL part `part`, the timestamp `dated` in ISO form."""
        member = _Member(self.archive, part)
        with self.conn.cursor(name=f"export_{part.split('.')[0]}", row_factory=dict_row) as cur:
            cur.itersize = BATCH_ROWS
            cur.execute(query, (self.name,))
            for row in cur:
                member.write(json_line({**row, dated: _iso(row[dated])}))
                self._advance("questions", 1)
        self.parts[part] = member.close()


def _vector_of(chunk_id: uuid.UUID, vector: Any, dimension: int) -> np.ndarray:
    if vector is None:
        raise StoreError(Text("chunk {id} has no vector; nothing was exported", id=str(chunk_id)))
    values = np.asarray(vector, dtype=np.float32)
    if values.shape != (dimension,):
        raise StoreError(
            Text(
                "chunk {id} has a {got}-d vector, the knowledge base is {dimension}-d; nothing was exported",
                id=str(chunk_id),
                got=values.size,
                dimension=dimension,
            )
        )
    return values


def _same_count(written: int, expected: int) -> None:
    if written != expected:  # the same snapshot: only a bug gets here
        raise StoreError(
            Text(
                "{written} chunks were read, {expected} were counted; nothing was exported",
                written=written,
                expected=expected,
            )
        )
