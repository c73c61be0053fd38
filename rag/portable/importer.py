"""`import_knowledge_base`: an export (rag.portable) into this database, whole or not at all.

In order, so that a refusal writes nothing:
1. the zip's directory and manifest (rag.portable.reader.Archive.open);
2. the name: one that exists is refused unless `replace`;
3. the embedder: the one the app would search the knowledge base with must be the file's, else it is
   refused naming both, unless `reembed` (the chunk texts are embedded again with the current one);
4. one full read of every part: checksums, counts, records, finite vectors, and which ids are taken;
5. with `reembed`, the new vectors, into a temporary file (no transaction stays open for the hours a
   million chunks take on a CPU);
6. one transaction: the old knowledge base deleted if replaced, then the new one's rows, every part read and
   checked again. Until it commits the old knowledge base is what every reader sees; a kill at any moment
   rolls it back. Then, once it is large enough for one (rag.store.graphs), its HNSW index built in bulk
   (a kill then leaves it searched row by row until a search builds it).

Ids: a document's and a chunk's id are kept, so that search results and citations (chunk ids) are the
same after a round trip into another database. Where any of them is taken already by a row outside the
knowledge base being replaced (the same file imported again under another name, `--as`), every document
and chunk gets a new id instead, the chunks' `metadata.document_id` following their document's: all
kept or all new, never a mix. The BM25 statistics are not in the file: the triggers on `vector_store`
(rag.store.bm25_stats) count the rows as they are written, in the same transaction.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from dataclasses import replace as replaced_with
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from rag.errors import EmbedderMismatchError, RagError, StoreError
from rag.portable.manifest import CHUNKS, DOCUMENTS, QUESTION_RUNS, QUESTIONS, Manifest, PortableFileError
from rag.portable.reader import Archive
from rag.portable.writer import Progress, contents
from rag.store import Store, copy_rows, graphs
from rag.text import Text

if TYPE_CHECKING:
    from rag.embeddings import Embedder
    from rag.settings import Settings

COPY_ROWS = 5_000
"""Chunk rows per COPY statement: each statement's BM25 trigger aggregates its rows' terms at once, so
one COPY of a million rows would hold all their tsvectors in the server's memory together."""
ID_LOOKUP = 5_000
"""Ids asked about per statement when looking for ids taken already (80 KB of parameters)."""
EMBED_BATCH = 256
"""Chunk texts handed to the embedder at once when re-embedding (it batches further itself)."""
STAGE_CHUNKS = 5_000
"""Chunks per batch of a staged import (`import_staged`), each batch committed on its own: a batch ends with the
document that brings it to this many (a document of more is a batch of its own, written COPY_ROWS at a time)."""
STAGE_BYTES = 64 << 20
"""Documents' source bytes per staged batch at most, so that a batch of large PDFs is not redone whole."""
STAGING_PREFIX = "kb_staging_"
"""The schemas of staged imports on the target: `kb_staging_` and 24 hex digits of the knowledge base's name."""
STAGING_LOCK = 1_083_551_931
"""The advisory lock class (with hashtext of the name) that a staged import of a name holds while it runs."""

DOCUMENT_COLUMNS = (
    "id, knowledge, original_filename, path, sha256, content, size_bytes, page_count, chunk_count, chunk_settings, "
    "ingested_at"
)
"""The columns of `documents` an import writes (and a staging's `documents` holds, after its ordinal)."""
DOCUMENT_VALUES = ", ".join(["%s"] * 11)


@dataclass(frozen=True)
class ImportResult:
    name: str
    documents: int
    chunks: int
    questions: int
    question_runs: int
    embedder: str
    dimension: int
    replaced: bool
    """Whether a knowledge base of that name was there and has been replaced."""
    ids_kept: bool
    """Whether the documents and chunks kept their ids (False: some were taken here; all got new ones)."""
    reembedded: bool
    resumed: int = 0
    """Chunks a staged import (`import_staged`) found staged by a run before this one, and did not write again."""

    def line(self) -> Text:
        return Text(
            "imported {name}: {contents} ({embedder}, {dimension}-d{replaced}{reembedded}{new_ids})",
            name=repr(self.name),
            contents=contents(self.documents, self.chunks, self.questions),
            embedder=self.embedder,
            dimension=self.dimension,
            # Each note a Text of its own (a UI translates it), or nothing.
            replaced=Text("; replaced the one before") if self.replaced else "",
            reembedded=Text("; re-embedded") if self.reembedded else "",
            new_ids="" if self.ids_kept else Text("; given new ids, as the file's are in use here"),
        )


def embedder_for_import(settings: Settings, built_with: str) -> str:
    """The name of the embedder the app would search a knowledge base built with `built_with` with, as
    rag.ingest.embedder_for_kb decides it for one that exists: under RAG_EMBEDDER=auto (and `local`, for a
    local one) the one it was built with, otherwise the configured one."""
    from rag import retrieve
    from rag.embeddings import keeps_built_embedder

    if keeps_built_embedder(settings.embedder, built_with):
        return built_with
    return retrieve.embedder_named_or_default(settings).name


def import_knowledge_base(
    store: Store,
    path: Path,
    *,
    settings: Settings,
    name: str | None = None,
    replace: bool = False,
    reembed: bool = False,
    embedder: Embedder | None = None,
    keep_embedder: bool = False,
    progress: Progress | None = None,
) -> ImportResult:
    """Import the export at `path` as knowledge base `name` (default: the name it was exported under).

    `replace`: a knowledge base of that name is replaced (atomically), else refused. `reembed`: the chunk
    texts are embedded again with `embedder` (default: the configured one) instead of a mismatch being
    refused. `embedder` without `reembed`: the embedder the knowledge base must have been built with
    (default: the one the app would use, `embedder_for_import`). `keep_embedder`: no such check, the knowledge
    base keeps the embedder it was built with (a copy between databases, rag.portable.copy: the app that
    searches the target is not this one).
    """
    report = progress or (lambda *_: None)
    path = Path(path)
    with Archive.open(path) as archive:
        manifest = archive.manifest
        target, replaced = _target(store, manifest, name, replace)
        if reembed:
            if embedder is None:
                from rag import retrieve

                embedder = retrieve.embedder_named_or_default(settings)
        elif not keep_embedder:
            current = embedder.name if embedder is not None else embedder_for_import(settings, manifest.embedder)
            if current != manifest.embedder:
                raise OtherEmbedderError(str(path), manifest.embedder, target, current)
        job = _Import(store, archive, target, report)
        keep_ids = job.verify()
        if embedder is not None and reembed:
            with tempfile.TemporaryFile(prefix="rag-import-vectors-") as vectors:
                job.embed(embedder, vectors)
                vectors.seek(0)
                job.write(
                    embedder.name, embedder.dimension, keep_ids, replace, _file_blocks(vectors, embedder.dimension)
                )
            used, dimension = embedder.name, embedder.dimension
        else:
            job.write(manifest.embedder, manifest.dimension, keep_ids, replace, archive.vector_blocks())
            used, dimension = manifest.embedder, manifest.dimension
    return _result(manifest, target, used, dimension, replaced, keep_ids, reembed)


def import_staged(
    store: Store,
    path: Path,
    *,
    name: str | None = None,
    replace: bool = False,
    restart: bool = False,
    progress: Progress | None = None,
) -> ImportResult:
    """Import the export at `path` as `import_knowledge_base` does with `keep_embedder` (the knowledge base keeps
    the embedder it was built with: a copy between databases, rag.portable.copy), but resumable: the rows go
    first into a staging schema of the target in batches committed one by one, then into the knowledge base in
    one transaction. A run killed while staging leaves the target's knowledge bases as they were, and the next
    run with a file of the same content (the manifest's checksums: an export of an unchanged source made again
    is the same) goes on after the last batch committed; a file of other content, or `restart`, starts over.

    The staging schema (`_Staging`) holds the rows as they will be written (their ids, metadata and vectors), in
    the file's order; nothing in the app reads it, so it is invisible to listing, search and the UI. The last
    transaction deletes the old knowledge base (`replace`), moves the rows into `documents` and `vector_store`
    (INSERT ... SELECT in the server: the triggers count the BM25 statistics, the indexes take the rows; the
    HNSW index of a large knowledge base is built after the commit, as in `import_knowledge_base`), writes the saved
    questions, and drops the staging schema: the knowledge base is whole or absent at every moment, and one
    being replaced is searched until the commit. Where the target refuses CREATE SCHEMA (a role without CREATE
    on the database), the import is made in one transaction instead, as `import_knowledge_base` makes it.
    """
    report = progress or (lambda *_: None)
    path = Path(path)
    with Archive.open(path) as archive:
        manifest = archive.manifest
        target, replaced = _target(store, manifest, name, replace)
        job = _Import(store, archive, target, report)
        keep_ids = job.verify()
        staging = _Staging(store, target)
        resumed = 0
        with staging.locked():
            content = _content_digest(manifest, target, keep_ids)
            state = None if restart else staging.state()
            staged = True
            if state is not None and state[0] == content:
                _, documents, resumed = state
            elif staging.create(content):
                documents = 0
            else:  # no staging schema here: all of it in one transaction, as a plain import
                staged = False
                job.write(manifest.embedder, manifest.dimension, keep_ids, replace, archive.vector_blocks())
            if staged:
                if documents or resumed:
                    report("resuming", resumed, manifest.chunks)
                job.stage(staging, keep_ids, documents, resumed)
                job.finish(staging, manifest.embedder, manifest.dimension, replace)
    return _result(manifest, target, manifest.embedder, manifest.dimension, replaced, keep_ids, False, resumed)


def _target(store: Store, manifest: Manifest, name: str | None, replace: bool) -> tuple[str, bool]:
    """The name the file is imported under (`name`, else the one it was exported under), and whether a knowledge
    base of that name is there to replace; NameTakenError where there is one and not `replace`."""
    from rag.ingest import validate_kb_name

    target = validate_kb_name(manifest.name if name is None else name)
    there = store.get_knowledge_base(target) is not None
    if there and not replace:
        raise NameTakenError(target)
    return target, there


def _result(
    manifest: Manifest,
    target: str,
    embedder: str,
    dimension: int,
    replaced: bool,
    keep_ids: bool,
    reembedded: bool,
    resumed: int = 0,
) -> ImportResult:
    return ImportResult(
        target,
        manifest.documents,
        manifest.chunks,
        manifest.questions,
        manifest.question_runs,
        embedder,
        dimension,
        replaced,
        keep_ids,
        reembedded,
        resumed,
    )


def staging_schema(name: str) -> str:
    """The schema a staged import of knowledge base `name` stages its rows in (one per name and database)."""
    return STAGING_PREFIX + hashlib.sha256(name.encode("utf-8")).hexdigest()[:24]


def _content_digest(manifest: Manifest, target: str, keep_ids: bool) -> str:
    """What staged rows are of: the file's content (its manifest but the time it was exported: the parts'
    checksums, counts and settings), the name it is imported under, and whether the ids are the file's."""
    body = asdict(replaced_with(manifest, exported_at=""))
    body.update(target=target, keep_ids=keep_ids)
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode("utf-8")).hexdigest()


class _Staging:
    """A staged import's schema on the target, named by the knowledge base's name (staging_schema): `documents`
    and `vector_store` hold the rows as they will be written (`ordinal`: the file's order), `state` one row, the
    content they are of and how many documents and chunks are staged, updated in each batch's transaction.
    UNLOGGED: no WAL for rows written twice; a server that crashes empties them, which `state` then tells."""

    def __init__(self, store: Store, target: str) -> None:
        self.store = store
        self.target = target
        self.schema = staging_schema(target)

    def table(self, name: str) -> sql.Identifier:
        return sql.Identifier(self.schema, name)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """This name's staging for this process alone while it runs (a session lock on a connection of its
        own; a killed process's lock goes with its connection)."""
        with self.store.connection() as conn:
            row = conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (STAGING_LOCK, self.target)).fetchone()
            conn.commit()
            if not (row and row[0]):
                raise RagError(
                    Text(
                        "a copy into knowledge base {name} is running in this database already: wait for it to end",
                        name=repr(self.target),
                    )
                )
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (STAGING_LOCK, self.target))
                conn.commit()

    def state(self) -> tuple[str, int, int] | None:
        """(content, documents, chunks) staged, or None: no staging, or one whose tables a crash emptied."""
        with self.store.connection() as conn, conn.transaction():
            # A staging made before `cjk_terms` (an older version of the app) is made again.
            found = conn.execute(
                "SELECT to_regclass(%s) IS NOT NULL AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = "
                "to_regclass(%s) AND attname = 'cjk_terms' AND NOT attisdropped)",
                (f"{self.schema}.state", f"{self.schema}.vector_store"),
            ).fetchone()
            if not (found and found[0]):
                return None
            row = conn.execute(
                sql.SQL(
                    "SELECT content, documents, chunks, (SELECT count(*) FROM {}), (SELECT count(*) FROM {}) FROM {}"
                ).format(self.table("documents"), self.table("vector_store"), self.table("state"))
            ).fetchone()
        if row is None or (row[1], row[2]) != (row[3], row[4]):
            return None
        return str(row[0]), int(row[1]), int(row[2])

    def drop(self, conn: psycopg.Connection) -> None:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))

    def create(self, content: str) -> bool:
        """A new staging (an old one of the name dropped) for rows of `content`; False where the target does not
        let this role create a schema."""
        with self.store.connection() as conn:
            try:
                with conn.transaction():
                    self.drop(conn)
                    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
                    self._tables(conn, content)
            except psycopg.errors.InsufficientPrivilege:
                return False
        return True

    def _tables(self, conn: psycopg.Connection, content: str) -> None:
        conn.execute(
            sql.SQL(
                "CREATE UNLOGGED TABLE {} (ordinal integer PRIMARY KEY, id uuid NOT NULL, "
                "knowledge text NOT NULL, original_filename text NOT NULL, path text, sha256 text NOT NULL, "
                "content bytea NOT NULL, "
                "size_bytes bigint NOT NULL, page_count integer NOT NULL, chunk_count integer NOT NULL, "
                "chunk_settings jsonb NOT NULL, ingested_at timestamptz NOT NULL)"
            ).format(self.table("documents"))
        )
        # The columns rag.store.copy_rows writes; `ordinal` numbered by the COPY's order.
        conn.execute(
            sql.SQL(
                "CREATE UNLOGGED TABLE {} (ordinal bigserial PRIMARY KEY, id uuid NOT NULL, content text, "
                "metadata jsonb, embedding vector, document_id uuid, search_text text, cjk_terms tsvector)"
            ).format(self.table("vector_store"))
        )
        conn.execute(
            sql.SQL(
                "CREATE UNLOGGED TABLE {} (knowledge text NOT NULL, content text NOT NULL, "
                "documents integer NOT NULL, chunks bigint NOT NULL, updated_at timestamptz NOT NULL)"
            ).format(self.table("state"))
        )
        conn.execute(
            sql.SQL("INSERT INTO {} VALUES (%s, %s, 0, 0, now())").format(self.table("state")),
            (self.target, content),
        )

    @contextmanager
    def batch(self) -> Iterator[psycopg.Connection]:
        """One batch's transaction, with `vector_store` the staging's (rag.store.copy_rows writes it by that
        name): checked, so that no staged row can reach the app's table."""
        with self.store.connection() as conn, conn.transaction():
            row = conn.execute("SELECT current_setting('search_path')").fetchone()
            conn.execute(
                "SELECT set_config('search_path', %s, true)", (f"{self.schema}, {row[0] if row else 'public'}",)
            )
            found = conn.execute(
                "SELECT to_regclass('vector_store')::oid = to_regclass(%s)::oid", (f"{self.schema}.vector_store",)
            ).fetchone()
            if not (found and found[0]):
                raise StoreError(
                    Text("the staging table of {name} is missing; run the copy again", name=repr(self.target))
                )
            yield conn


class NameTakenError(RagError):
    """A knowledge base of the name asked for exists already (and `replace` was not asked); said the CLI's way.
    A UI says it in its own words from `name` (rag.portable.jobs)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            Text(
                "a knowledge base named {name} exists already: import with --replace to replace it, or --as NAME "
                "to import under another name",
                name=repr(name),
            )
        )


class OtherEmbedderError(EmbedderMismatchError):
    """A file built with another embedder than the one the knowledge base would be searched with (and
    `reembed` was not asked); said the CLI's way. A UI says it in its own words from the fields."""

    def __init__(self, file: str, built_with: str, name: str, current: str) -> None:
        self.file, self.built_with, self.name, self.current = file, built_with, name, current
        super().__init__(
            Text(
                "{file} was built with {built_with}, and knowledge base {name} would be searched with "
                "{current}: set RAG_EMBEDDER={built_with}, or import with --reembed to embed its chunks "
                "again with {current}",
                file=file,
                built_with=built_with,
                name=repr(name),
                current=current,
            )
        )


def _file_blocks(file: IO[bytes], dimension: int, rows: int = 4_096) -> Iterator[np.ndarray]:
    while data := file.read(rows * dimension * 4):
        yield np.frombuffer(data, dtype="<f4").reshape(-1, dimension).astype(np.float32)


def _one_by_one(blocks: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    for block in blocks:
        yield from block


class _Import:
    """One import's passes over the file: verify, embed (with `reembed`), write."""

    def __init__(self, store: Store, archive: Archive, target: str, progress: Progress) -> None:
        self.store = store
        self.archive = archive
        self.manifest: Manifest = archive.manifest
        self.target = target
        self.progress = progress

    def _refuse(self, reason: Text) -> PortableFileError:
        return PortableFileError(self.archive.file, reason)

    def verify(self) -> bool:
        """Read every part once, checking what the reader checks and how the parts fit together; True when
        none of the file's ids is taken by a row outside the knowledge base being replaced."""
        m = self.manifest
        total = m.documents * (2 if m.sources else 1) + 2 * m.chunks + m.questions + m.question_runs
        done = 0
        self.progress("verify", 0, total)
        declared: dict[uuid.UUID, int] = {}
        for doc in self.archive.records(DOCUMENTS):
            if doc["id"] in declared:
                raise self._refuse(Text("document {id} appears twice", id=str(doc["id"])))
            declared[doc["id"]] = doc["chunk_count"]
            done += 1
        self.progress("verify", done, total)
        for document_id in declared if m.sources else ():
            self.archive.source(document_id)
            done += 1
            self.progress("verify", done, total)
        found = dict.fromkeys(declared, 0)
        taken = self._taken("documents", list(declared))
        batch: list[uuid.UUID] = []
        for chunk in self.archive.records(CHUNKS):
            document_id = chunk["document_id"]
            if document_id is not None:
                if document_id not in found:
                    raise self._refuse(
                        Text(
                            "chunk {id} names document {document}, which the file does not hold",
                            id=str(chunk["id"]),
                            document=str(document_id),
                        )
                    )
                found[document_id] += 1
            batch.append(chunk["id"])
            if len(batch) == ID_LOOKUP:
                taken += self._taken("vector_store", batch)
                done += len(batch)
                self.progress("verify", done, total)
                batch = []
        taken += self._taken("vector_store", batch)
        done += len(batch)
        for document_id, count in declared.items():
            if found[document_id] != count:
                raise self._refuse(
                    Text(
                        "document {id} declares {declared} chunks, the file holds {found}",
                        id=str(document_id),
                        declared=count,
                        found=found[document_id],
                    )
                )
        for block in self.archive.vector_blocks():
            done += len(block)
            self.progress("verify", done, total)
        for part in (QUESTIONS, QUESTION_RUNS):
            for _ in self.archive.records(part):
                done += 1
        self.progress("verify", done, total)
        return taken == 0

    def _taken(self, table: str, ids: Sequence[uuid.UUID]) -> int:
        """How many of `ids` rows of `table` outside the knowledge base being replaced hold already."""
        if not ids:
            return 0
        query = (
            "SELECT count(*) FROM documents WHERE id = ANY(%s) AND knowledge <> %s"
            if table == "documents"
            else "SELECT count(*) FROM vector_store WHERE id = ANY(%s) AND metadata->>'knowledge' IS DISTINCT FROM %s"
        )
        taken = 0
        with self.store.connection() as conn:
            for start in range(0, len(ids), ID_LOOKUP):
                row = conn.execute(query, (list(ids[start : start + ID_LOOKUP]), self.target)).fetchone()
                taken += int(row[0]) if row else 0
        return taken

    def embed(self, embedder: Embedder, out: IO[bytes]) -> None:
        """The chunk texts embedded again with `embedder`, as little-endian float32 rows into `out`."""
        total = self.manifest.chunks
        done = 0
        self.progress("embed", 0, total)
        records = self.archive.records(CHUNKS)
        while texts := [chunk["content"] for chunk in islice(records, EMBED_BATCH)]:
            vectors = np.asarray(embedder.embed(texts), dtype="<f4")
            if vectors.shape != (len(texts), embedder.dimension):
                raise RagError(
                    Text(
                        "{embedder} returned {got} vectors for {texts} texts",
                        embedder=embedder.name,
                        got=str(vectors.shape),
                        texts=len(texts),
                    )
                )
            out.write(vectors.tobytes())
            done += len(texts)
            self.progress("embed", done, total)

    def write(self, embedder: str, dimension: int, keep_ids: bool, replace: bool, blocks: Iterator[np.ndarray]) -> None:
        """Everything in one transaction: the old knowledge base (if replaced) goes as the new one comes."""
        m = self.manifest
        total = m.documents + m.chunks + m.questions + m.question_runs
        self.progress("write", 0, total)
        with self.store.connection() as conn, conn.transaction():
            self._make_room(conn, embedder, dimension, replace)
            done = 0
            ids = self._write_documents(conn, keep_ids)
            done += m.documents
            self.progress("write", done, total)
            rows = self._chunk_rows(ids, keep_ids, _one_by_one(blocks))
            while batch := list(islice(rows, COPY_ROWS)):
                copy_rows(conn, batch)
                done += len(batch)
                self.progress("write", done, total)
            done += self._write_questions(conn)
            self.progress("write", done, total)
        self._after_commit(dimension)

    def stage(self, staging: _Staging, keep_ids: bool, documents: int, chunks: int) -> None:
        """The rows into `staging`, after the first `documents` documents and `chunks` chunks of the file (staged
        by a run before), in batches of whole documents (STAGE_CHUNKS, STAGE_BYTES), each committed with the
        counts in `state`; then the rows of no document, STAGE_CHUNKS a batch."""
        m = self.manifest
        records = self.archive.records(DOCUMENTS)
        rows = self.archive.records(CHUNKS)
        vectors = _one_by_one(self.archive.vector_blocks())
        for _ in islice(records, documents):
            pass
        for _ in zip(range(chunks), rows, vectors, strict=False):  # range first: it stops before a row too many
            pass
        self.progress("stage", chunks, m.chunks)
        batch: list[dict[str, Any]] = []
        size = count = 0
        for doc in records:
            batch.append(doc)
            count += doc["chunk_count"]
            size += doc["size_bytes"]
            if count >= STAGE_CHUNKS or size >= STAGE_BYTES:
                documents, chunks = self._stage_batch(staging, keep_ids, batch, documents, chunks, rows, vectors)
                batch, size, count = [], 0, 0
        if batch:
            documents, chunks = self._stage_batch(staging, keep_ids, batch, documents, chunks, rows, vectors)
        while chunks < m.chunks:
            documents, chunks = self._stage_batch(staging, keep_ids, [], documents, chunks, rows, vectors)
        if next(rows, None) is not None or next(vectors, None) is not None:  # to the end: the digests are checked
            raise self._refuse(Text("the file changed while it was imported"))

    def _stage_batch(
        self,
        staging: _Staging,
        keep_ids: bool,
        batch: list[dict[str, Any]],
        documents: int,
        chunks: int,
        rows: Iterator[dict[str, Any]],
        vectors: Iterator[np.ndarray],
    ) -> tuple[int, int]:
        """One batch: the documents of `batch` with their chunks (the file holds each document's together, in
        the documents' order), or, with none, up to STAGE_CHUNKS rows of no document. The new counts."""
        written = 0

        def chunk_rows() -> Iterator[tuple[Any, ...]]:
            nonlocal written
            wanted = [(doc["id"], new_ids[doc["id"]], doc["chunk_count"]) for doc in batch] or [
                (None, None, min(STAGE_CHUNKS, self.manifest.chunks - chunks))
            ]
            for file_id, new_id, count in wanted:
                for _ in range(count):
                    chunk, vector = next(rows, None), next(vectors, None)
                    if chunk is None or vector is None:  # the counts were checked: only a file changed since
                        raise self._refuse(Text("the file changed while it was imported"))
                    if chunk["document_id"] != file_id:  # not as rag.portable.writer writes it
                        raise self._refuse(
                            Text(
                                "chunk {id} is not with the chunks of its document; import it with 'rag kb import'",
                                id=str(chunk["id"]),
                            )
                        )
                    metadata = {**chunk["metadata"], "knowledge": self.target}
                    if new_id is not None:
                        metadata["document_id"] = str(new_id)
                    written += 1
                    yield (chunk["id"] if keep_ids else uuid.uuid4(), chunk["content"], metadata, vector, new_id)

        new_ids = {doc["id"]: doc["id"] if keep_ids else uuid.uuid4() for doc in batch}
        with staging.batch() as conn:
            for ordinal, doc in enumerate(batch, start=documents):
                conn.execute(
                    sql.SQL(f"INSERT INTO {{}} (ordinal, {DOCUMENT_COLUMNS}) VALUES (%s, {DOCUMENT_VALUES})").format(
                        staging.table("documents")
                    ),
                    (ordinal, *self._document_row(doc, new_ids[doc["id"]])),
                )
            generated = chunk_rows()
            while slice_ := list(islice(generated, COPY_ROWS)):
                copy_rows(conn, slice_)
            documents, chunks = documents + len(batch), chunks + written
            conn.execute(
                sql.SQL("UPDATE {} SET documents = %s, chunks = %s, updated_at = now()").format(staging.table("state")),
                (documents, chunks),
            )
        self.progress("stage", chunks, self.manifest.chunks)
        return documents, chunks

    def finish(self, staging: _Staging, embedder: str, dimension: int, replace: bool) -> None:
        """The staged rows into the knowledge base, and the staging dropped, in one transaction (`write`'s, but
        with the rows moved inside the server rather than sent)."""
        m = self.manifest
        total = m.documents + m.chunks + m.questions + m.question_runs
        self.progress("write", 0, total)
        with self.store.connection() as conn, conn.transaction():
            self._make_room(conn, embedder, dimension, replace)
            columns = sql.SQL(
                "id, knowledge, original_filename, path, sha256, content, size_bytes, page_count, chunk_count, "
                "chunk_settings, ingested_at"
            )
            moved = conn.execute(
                sql.SQL("INSERT INTO documents ({}) SELECT {} FROM {} ORDER BY ordinal").format(
                    columns, columns, staging.table("documents")
                )
            ).rowcount
            done = moved
            self.progress("write", done, total)
            last, chunks = 0, 0
            while True:
                row = conn.execute(
                    sql.SQL(
                        "SELECT max(ordinal) FROM "
                        "(SELECT ordinal FROM {} WHERE ordinal > %s ORDER BY ordinal LIMIT %s) s"
                    ).format(staging.table("vector_store")),
                    (last, COPY_ROWS),
                ).fetchone()
                if row is None or row[0] is None:
                    break
                # COPY_ROWS rows a statement, as the import's COPYs: each one's BM25 trigger holds its rows' terms.
                written = conn.execute(
                    sql.SQL(
                        "INSERT INTO vector_store (id, content, metadata, embedding, document_id, search_text, "
                        "cjk_terms) SELECT id, content, metadata, embedding, document_id, search_text, cjk_terms "
                        "FROM {} "
                        "WHERE ordinal > %s AND ordinal <= %s ORDER BY ordinal"
                    ).format(staging.table("vector_store")),
                    (last, row[0]),
                ).rowcount
                last = row[0]
                chunks += written
                done += written
                self.progress("write", done, total)
            if (moved, chunks) != (m.documents, m.chunks):  # the counts in `state` were checked: only a bug
                raise StoreError(
                    Text(
                        "the staged copy of {name} is not whole; nothing was written: run the copy again with "
                        "--restart",
                        name=repr(self.target),
                    )
                )
            done += self._write_questions(conn)
            self.progress("write", done, total)
            staging.drop(conn)
        self._after_commit(dimension)

    def _make_room(self, conn: psycopg.Connection, embedder: str, dimension: int, replace: bool) -> None:
        """In the writing transaction, before any chunk: the old knowledge base deleted (`replace`; else a name
        taken since is refused), the new one's row."""
        m = self.manifest
        if conn.execute("SELECT 1 FROM knowledge_bases WHERE name = %s FOR UPDATE", (self.target,)).fetchone():
            if not replace:  # made since it was looked for
                raise NameTakenError(self.target)
            # As Store.delete_knowledge_base: chunks of documents cascade, rows of no document go too.
            conn.execute("DELETE FROM vector_store WHERE metadata->>'knowledge' = %s", (self.target,))
            conn.execute("DELETE FROM knowledge_bases WHERE name = %s", (self.target,))
        conn.execute(
            "INSERT INTO knowledge_bases (name, embedder, dimension, chunk_settings, created_at, source_folder) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (
                self.target,
                embedder,
                dimension,
                Jsonb(m.chunk_settings),
                datetime.fromisoformat(m.created_at),
                m.source_folder,
            ),
        )

    def _after_commit(self, dimension: int) -> None:
        """What follows the commit of the knowledge base's rows, as after an ingest. Its BM25 statistics merged in the
        background: until then every keyword search reads the rows its writes listed (~10 microseconds a chunk,
        rag.store.bm25_stats), and no import merged them. Its HNSW index built in bulk (one graph build instead of
        an insert into it per row: 100k 384-d chunks imported in 672 s with the index first, against pg_restore's
        439 s, which builds it last), where it is large enough to have one (rag.store.graphs)."""
        self.store.merge_bm25_later()
        chunks = self.manifest.chunks
        if chunks < graphs.graph_rows(dimension):
            return
        self.progress("index", 0, chunks)
        self.store.build_graphs([self.target])
        self.progress("index", chunks, chunks)

    def _write_documents(self, conn: psycopg.Connection, keep_ids: bool) -> dict[uuid.UUID, uuid.UUID]:
        ids: dict[uuid.UUID, uuid.UUID] = {}
        for doc in self.archive.records(DOCUMENTS):
            ids[doc["id"]] = doc["id"] if keep_ids else uuid.uuid4()
            conn.execute(
                f"INSERT INTO documents ({DOCUMENT_COLUMNS}) VALUES ({DOCUMENT_VALUES})",
                self._document_row(doc, ids[doc["id"]]),
            )
        return ids

    def _document_row(self, doc: dict[str, Any], new_id: uuid.UUID) -> tuple[Any, ...]:
        """The values of DOCUMENT_COLUMNS for document record `doc` of the file, stored as `new_id`."""
        return (
            new_id,
            self.target,
            doc["original_filename"],
            doc["path"],
            doc["sha256"],
            self.archive.source(doc["id"]),
            doc["size_bytes"],
            doc["page_count"],
            doc["chunk_count"],
            Jsonb(doc["chunk_settings"]),
            doc["ingested_at"],
        )

    def _chunk_rows(
        self, ids: dict[uuid.UUID, uuid.UUID], keep_ids: bool, vectors: Iterator[np.ndarray]
    ) -> Iterator[tuple[Any, ...]]:
        for chunk in self.archive.records(CHUNKS):
            metadata = {**chunk["metadata"], "knowledge": self.target}
            document_id = chunk["document_id"]
            if document_id is not None:
                document_id = ids[document_id]
                metadata["document_id"] = str(document_id)
            vector = next(vectors, None)
            if vector is None:  # the sizes were checked: only a file changed since gets here
                raise self._refuse(Text("the file changed while it was imported"))
            yield (chunk["id"] if keep_ids else uuid.uuid4(), chunk["content"], metadata, vector, document_id)
        if next(vectors, None) is not None:  # reading to the end checks the vectors' digest too
            raise self._refuse(Text("the file changed while it was imported"))

    def _write_questions(self, conn: psycopg.Connection) -> int:
        written = 0
        with conn.cursor() as cur:
            questions = self.archive.records(QUESTIONS)
            while batch := list(islice(questions, COPY_ROWS)):
                cur.executemany(
                    "INSERT INTO kb_questions (knowledge, document, position, question, answer, answer_start, "
                    "answer_end, language, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [
                        (
                            self.target,
                            q["document"],
                            q["position"],
                            q["question"],
                            q["answer"],
                            q["answer_start"],
                            q["answer_end"],
                            q["language"],
                            q["created_at"],
                        )
                        for q in batch
                    ],
                )
                written += len(batch)
            runs = self.archive.records(QUESTION_RUNS)
            while batch := list(islice(runs, COPY_ROWS)):
                cur.executemany(
                    "INSERT INTO kb_question_runs (knowledge, ran_at, embedder, chunk_settings, mode, questions, "
                    "fingerprint, hit_at_1, hit_at_3, hit_at_5, mrr) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [
                        (
                            self.target,
                            r["ran_at"],
                            r["embedder"],
                            Jsonb(r["chunk_settings"]),
                            r["mode"],
                            r["questions"],
                            r["fingerprint"],
                            r["hit_at_1"],
                            r["hit_at_3"],
                            r["hit_at_5"],
                            r["mrr"],
                        )
                        for r in batch
                    ],
                )
                written += len(batch)
        return written
