"""`copy_knowledge_base`: a knowledge base from one PostgreSQL database into another, vectors and all, without
embedding anything again (`rag kb copy NAME --to URL`, `--from URL`; issue #31).

It is an export (rag.portable.writer) into a file in the data folder (the carrier) and an import of that file into
the target (rag.portable.importer.import_staged): the same streamed reads (one snapshot, server-side cursors), the
same checks (checksums, names, hostile files), rows sent by binary COPY (rag.store.copy_rows). Resumable, and the
target's knowledge base whole or absent at every moment:
- The carrier is named by the source knowledge base (`carrier_stem`: its name and server) and a fingerprint of
  its content (`source_fingerprint`: one indexed read of its settings, documents, BM25 totals and saved
  questions), and kept while the copy has not finished: a run after a killed one, of an unchanged source, uses it
  rather than exporting again (verified whole by the import, as any file; a damaged one is exported again); a
  changed source makes a new one, and the old is deleted; a finished copy deletes it. A source that changed while
  it was exported leaves a carrier of neither state: it is not kept.
- The import stages the rows in the target in batches of documents, each committed, in a schema of its own
  (`kb_staging_<digest of the name>`, which nothing in the app reads), then moves them into the knowledge base in
  one transaction (the old one deleted there with `replace`: it is searched until the commit), with the BM25
  statistics counted by the triggers, the knowledge base's HNSW index built after the commit where it is large
  enough to have one (rag.store.graphs) and the GIN index of the keyword search by the target's schema; both are
  checked once the rows are in. A run after a killed one resumes after the last committed batch when the carrier's
  content is the same ("resuming" in the progress; the result line says how many chunks were there already); a
  staging of other content is dropped by the next copy of the name, and `restart` drops the staging and the
  carrier first.
A staging schema rather than a staging knowledge base in `vector_store`: the rows of a base being replaced hold
the same ids (primary keys) as the new one's, and every chunk row carries its knowledge base's name in its
metadata (the searches' filter, the BM25 statistics' key), so renaming a staged base would rewrite every row and
its index entries, as slow as writing them.
Measured: 20,000 chunks of 384-d (40 documents) copied between two databases of the embedded server in 185 s
(108 chunks/s, a 32 MB carrier file) with a peak RSS of 120 MB, on 2 cores loaded by a benchmark, with the
index filled row by row (the import of 5,000 chunks with the index built after them: 17.4 s -> 4.8 s); that was
before staging (one transaction): see docs/scaling.md for a copy resumed against one made in one go.

The target's pgvector is checked before anything is read or written there: absent, or older than
MIN_PGVECTOR, the copy is refused in one line naming the server (host, port, database: never the password).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from rag.errors import RagError, StoreError, one_line
from rag.portable.importer import ImportResult, NameTakenError, import_staged
from rag.portable.manifest import PortableFileError
from rag.portable.writer import Progress, contents, export_knowledge_base
from rag.store import Store, graphs
from rag.store.schema import FTS_INDEX
from rag.text import Text

if TYPE_CHECKING:
    from rag.settings import Settings

MIN_PGVECTOR = (0, 5, 0)
"""The oldest pgvector the copy writes to: HNSW indexes, which a large knowledge base is searched by, came in 0.5.0
(pgvector/pgvector images and the embedded server ship 0.8)."""
GIN_INDEX = FTS_INDEX
"""The keyword search's index (rag.store.schema)."""


def server_name(conninfo: str) -> str:
    """A connection string as `host:port/database` (user, password and options left out), for messages."""
    try:
        parts = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "a PostgreSQL server (its URL is malformed)"
    host = str(parts.get("host") or "local socket")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"{host}{port}/{parts.get('dbname') or parts.get('user') or ''}"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in text.split("-")[0].split("."))


def check_pgvector(conninfo: str) -> str:
    """The version of pgvector in the database at `conninfo`, installed or installable there (the store's
    schema creates it); a StoreError in one line when the server cannot be reached, lacks it, or has one older
    than MIN_PGVECTOR."""
    where = server_name(conninfo)
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute(
                "SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
                "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector'))"
            ).fetchone()
    except psycopg.Error as exc:  # one_line masks a password that a driver's message quotes
        raise StoreError(
            Text("cannot connect to {server} ({error})", server=where, error=one_line(exc, None))
        ) from None
    version = row[0] if row else None
    if version is None:
        raise StoreError(
            Text(
                "{server} has no pgvector extension: install it on that server (e.g. the pgvector/pgvector image, "
                "or the postgresql-NN-pgvector package)",
                server=where,
            )
        )
    if _version(version) < MIN_PGVECTOR:
        raise StoreError(
            Text(
                "{server} has pgvector {version}; the copy needs {needed} or newer (HNSW indexes): update it "
                "with ALTER EXTENSION vector UPDATE",
                server=where,
                version=version,
                needed=".".join(map(str, MIN_PGVECTOR)),
            )
        )
    return str(version)


@dataclass(frozen=True)
class CopyResult:
    name: str
    """The knowledge base's name in the target."""
    source: str
    target: str
    """The two servers as `host:port/database` (server_name)."""
    documents: int
    chunks: int
    questions: int
    pgvector: str
    """The target's pgvector version."""
    indexes: tuple[str, ...]
    """The target's indexes that the knowledge base's searches use (its HNSW index where it has one, GIN)."""
    replaced: bool
    ids_kept: bool
    size_bytes: int
    """The size of the export that carried it."""
    export_kept: bool = False
    """Whether the export was the one a copy before this one (that did not finish) kept."""
    resumed: int = 0
    """Chunks a copy before this one had staged in the target, not written again."""

    def line(self) -> Text:
        return Text(
            "copied {name} from {source} to {target}: {contents} (pgvector {pgvector}; indexes {indexes}{notes})",
            name=repr(self.name),
            source=self.source,
            target=self.target,
            contents=contents(self.documents, self.chunks, self.questions),
            pgvector=self.pgvector,
            indexes=", ".join(self.indexes),
            notes="".join(
                note
                for note, applies in (
                    ("; replaced the one before", self.replaced),
                    ("; given new ids, as the file's are in use here", not self.ids_kept),
                    ("; the export kept by the copy before was used", self.export_kept),
                    (f"; resumed, {self.resumed:,} chunks were there already", self.resumed > 0),
                )
                if applies
            ),
        )


def copy_knowledge_base(
    source: Store,
    target: Store,
    name: str,
    *,
    work_dir: Path,
    as_name: str | None = None,
    replace: bool = False,
    restart: bool = False,
    settings: Settings,
    progress: Progress | None = None,
) -> CopyResult:
    """Copy knowledge base `name` from `source` into `target` (as `as_name`; a name there is refused unless
    `replace`), carried by an export in `work_dir` and imported by `import_staged`: resumable (see the module's
    docstring). `restart`: the kept export and the staged rows of a copy before are dropped first. Check the
    target's pgvector (check_pgvector) first."""
    pgvector = check_pgvector(target.conninfo)
    fingerprint = source_fingerprint(source, name)
    if fingerprint is None:
        raise RagError(
            Text("no knowledge base named {name} in {server}", name=repr(name), server=server_name(source.conninfo))
        )
    from rag.ingest import validate_kb_name  # here, as the importer has it: rag.ingest imports the embedders

    if not replace and target.get_knowledge_base(validate_kb_name(as_name or name)) is not None:
        raise NameTakenError(validate_kb_name(as_name or name))  # before reading anything (the import checks it again)
    work_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    stem = carrier_stem(source, name)
    carrier = work_dir / f"{stem}-{fingerprint[:16]}.zip"
    for old in work_dir.glob(f"{stem}-*.zip"):  # of the source as it was: it changed since
        if old != carrier or restart:
            old.unlink(missing_ok=True)
    keep = True
    """Whether the carrier stays if the copy does not finish: it is of the source as `fingerprint` says."""
    reused = carrier.exists()
    try:
        if reused:
            os.utime(carrier)  # not swept as stale (rag.portable.jobs.folder) while it is used
            size = carrier.stat().st_size
            try:
                imported = _import(target, carrier, as_name, replace, restart, progress)
            except PortableFileError:  # damaged since it was kept: the import refused it before writing
                carrier.unlink(missing_ok=True)
                reused = False
        if not reused:
            keep = _export(source, name, carrier, fingerprint, progress)
            size = carrier.stat().st_size
            imported = _import(target, carrier, as_name, replace, restart, progress)
    except BaseException:
        if not keep:
            carrier.unlink(missing_ok=True)
        raise
    carrier.unlink(missing_ok=True)
    return CopyResult(
        name=imported.name,
        source=server_name(source.conninfo),
        target=server_name(target.conninfo),
        documents=imported.documents,
        chunks=imported.chunks,
        questions=imported.questions,
        pgvector=pgvector,
        indexes=_search_indexes(target, imported.name, imported.dimension),
        replaced=imported.replaced,
        ids_kept=imported.ids_kept,
        size_bytes=size,
        export_kept=reused,
        resumed=imported.resumed,
    )


def _export(source: Store, name: str, carrier: Path, fingerprint: str, progress: Progress | None) -> bool:
    """`name` exported into `carrier` (written under a name of its own, then renamed: two copies of one source
    at once each write their own); whether it is of the source as `fingerprint` says (it did not change
    while it was exported), and so may be kept for a run after this one."""
    part = carrier.with_name(f"{carrier.stem}.{uuid.uuid4().hex}.tmp")
    try:
        export_knowledge_base(source, name, part, progress=progress)
        os.replace(part, carrier)
    finally:
        part.unlink(missing_ok=True)
    return source_fingerprint(source, name) == fingerprint


def _import(
    target: Store, carrier: Path, as_name: str | None, replace: bool, restart: bool, progress: Progress | None
) -> ImportResult:
    return import_staged(target, carrier, name=as_name, replace=replace, restart=restart, progress=progress)


def carrier_stem(source: Store, name: str) -> str:
    """`copy-<name, in file name characters>-<digest of the source server and the name>`: the start of the
    name of every export that carries `name` from `source`, one per content (`source_fingerprint`)."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:40].strip("._") or "kb"
    key = hashlib.sha256(f"{server_name(source.conninfo)}\0{name}".encode()).hexdigest()[:10]
    return f"copy-{readable}-{key}"


def source_fingerprint(store: Store, name: str) -> str | None:
    """A digest that changes when knowledge base `name` does (None: there is none), from what one indexed read
    tells: its settings, its documents' ids, checksums, chunk counts and times, its BM25 totals (chunks and their
    length, kept by triggers on every write of a chunk, rows of no document too: merged and pending alike, so that
    a merge alone changes nothing), its saved questions and runs."""
    with store.connection() as conn:
        row = conn.execute(
            "SELECT k.embedder, k.dimension, k.chunk_settings::text, k.source_folder, k.created_at::text, "
            "(SELECT md5(string_agg(d.id::text || ' ' || d.sha256 || ' ' || d.chunk_count || ' ' || d.ingested_at, "
            "',' ORDER BY d.ingested_at, d.id)) FROM documents d WHERE d.knowledge = k.name), "
            "(SELECT sum(t.chunks)::text || ' ' || sum(t.total_length)::text FROM (SELECT b.chunks, b.total_length "
            "FROM bm25_knowledge b WHERE b.knowledge = k.name UNION ALL SELECT p.chunks, p.total_length "
            "FROM bm25_pending p WHERE p.knowledge = k.name) t), "
            "(SELECT count(*)::text || ' ' || coalesce(max(q.created_at)::text, '') FROM kb_questions q "
            "WHERE q.knowledge = k.name), "
            "(SELECT count(*)::text || ' ' || coalesce(max(r.id)::text, '') FROM kb_question_runs r "
            "WHERE r.knowledge = k.name) "
            "FROM knowledge_bases k WHERE k.name = %s",
            (name,),
        ).fetchone()
    if row is None:
        return None
    return hashlib.sha256(json.dumps([name, *row], default=str).encode("utf-8")).hexdigest()


def _search_indexes(target: Store, name: str, dimension: int) -> tuple[str, ...]:
    """The knowledge base's HNSW index (where it is large enough to have one: rag.store.graphs) and the GIN
    index, as the target has them; a StoreError when one is missing (the import builds the first, the target's
    schema the second: only a server that dropped one, or a build that failed, gets here)."""
    with target.connection() as conn:
        base, _ = graphs.bases(conn, [name], dimension)
        graph = [graphs.graph_name(dimension, b.key) for b in base if b.large and not b.exact]
        wanted = (*graph, GIN_INDEX)
        found = {
            row[0]
            for row in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'vector_store' AND indexname = ANY(%s)",
                (list(wanted),),
            )
        }
    missing = [index for index in wanted if index not in found]
    if missing:
        raise StoreError(
            Text(
                "the copy is in, but {server} lacks the index {index}",
                server=server_name(target.conninfo),
                index=", ".join(missing),
            )
        )
    return wanted
