"""`Store`: one connection pool over the schema; knowledge bases, documents and their chunks.

Every document is written in one transaction (all of it or nothing), with the BM25 statistics
its chunks change (triggers, see `bm25_stats`); searches delegate their SQL to `vector_sql`
and `keyword_sql`. Writers lock a knowledge base's row before they change any chunk, so that
they queue there rather than deadlock on the statistics.
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from rag.errors import EmbedderError, EmbedderMismatchError, StoreBusyError, StoreError, one_line
from rag.query.filters import SqlFilter
from rag.settings import Settings
from rag.store import graphs, keyword_sql, vector_sql
from rag.store.binary_copy import copy_rows
from rag.store.bm25_stats import MERGE_TERMS
from rag.store.conversations import Conversations
from rag.store.embedded import embedded_server_uri, revive_embedded_server
from rag.store.graphs import build_graphs, drop_graphs, legacy_graphs, unbuilt
from rag.store.keyword_sql import DEFAULT_BM25, Bm25
from rag.store.records import (
    Hit,
    KnowledgeBase,
    ServerInfo,
    StoredDocument,
    WriteResult,
    chunk_metadata,
    mismatch_message,
)
from rag.store.schema import CLEAN_WORK_MEM, FTS_INDEX, SCHEMA, WRITE_WORK_MEM
from rag.store.vector_cache import VectorCache
from rag.text import Text

if TYPE_CHECKING:
    from rag.chunking import Chunk
    from rag.store.question_sets import QuestionSets


log = logging.getLogger(__name__)

_ANALYZE_DUE = """
SELECT c.reltuples < 0 OR coalesce(s.n_mod_since_analyze, 0) > current_setting('autovacuum_analyze_threshold')::float8
       + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)
FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.oid = 'vector_store'::regclass"""
"""Whether `vector_store` is due an ANALYZE by autovacuum's rule (`Store.analyze_if_due`); the changes counted are
those the writers' server processes have reported (within a second or so of their last commit)."""

T = TypeVar("T")


def _pending_terms(conn: psycopg.Connection) -> int:
    """The BM25 counts pending (`bm25_stats`), as this transaction sees them: read where it writes them, not in
    a round trip of its own after each write."""
    row = conn.execute("SELECT coalesce(sum(entries), 0) FROM bm25_pending").fetchone()
    return int(row[0]) if row else 0


def _configure(conn: psycopg.Connection) -> None:
    register_vector(conn)
    conn.commit()  # leave the pooled connection idle, not inside a transaction


def _once_more_if_busy(method: Callable[..., T]) -> Callable[..., T]:
    """Run a write once more when PostgreSQL rolled it back for a deadlock or a serialization failure
    (the transaction left nothing behind, so the second run starts clean)."""

    @functools.wraps(method)
    def run(self: Store, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except StoreBusyError:
            log.info("%s lost a deadlock; running it once more", method.__name__)
            return method(self, *args, **kwargs)

    return run


class Store:
    """One connection pool; every public method is safe to call from several threads."""

    def __init__(
        self,
        conninfo: str,
        *,
        embedded: bool = False,
        max_size: int = 6,
        bm25: Bm25 = DEFAULT_BM25,
        pgdata: Path | None = None,
    ) -> None:
        self.conninfo = conninfo
        self.embedded = embedded
        self.pgdata = pgdata
        """The embedded server's data folder: a dead server there is started again (revive_embedded_server)."""
        self.bm25 = bm25
        try:
            with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
                conn.execute(SCHEMA)
                migrate = bool(legacy_graphs(conn))
        except psycopg.OperationalError as exc:
            raise StoreError(
                Text(
                    "cannot connect to PostgreSQL ({error}): check DATABASE_URL, or unset it "
                    "to use the embedded database",
                    error=one_line(exc, None),
                )
            ) from exc
        except psycopg.errors.FeatureNotSupported as exc:  # pragma: no cover - server-specific
            raise StoreError(Text("PostgreSQL lacks pgvector: {error}", error=one_line(exc, None))) from exc
        except psycopg.ProgrammingError as exc:  # a malformed connection string: psycopg quotes it whole
            raise StoreError(
                Text(
                    "DATABASE_URL is not a valid PostgreSQL connection string ({error}): write it as "
                    "postgresql://user:password@host:5432/dbname, or unset it to use the embedded database",
                    error=one_line(exc, None),
                )
            ) from None
        # max_size: an ingest's two writers (rag.ingest.pipeline.WRITERS) and its background BM25 merge, the
        # ingest's own reads, and the other pages' searches at once.
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max_size,
            configure=_configure,
            open=True,
            kwargs={"connect_timeout": 10},
            # A local server gives a connection at once: waiting 30 s for one only delays the message.
            timeout=5 if pgdata is not None else 30,
        )
        self._merging: threading.Thread | None = None
        self._merging_lock = threading.Lock()
        self._graphs_lock = threading.Lock()
        """Guards what the background graph build is asked for (`_graph_soon`)."""
        self._graphing: threading.Thread | None = None
        """The last background build's thread (a test joins it)."""
        self._graphs_asked = False
        self._graphs_awaited = False
        """Whether `close` waits for the background build: one an ingest asked for (`build_graphs_later`)."""
        self._graphing_names: set[str] | None = set()
        """What the next background build is for (None: every knowledge base)."""
        if migrate:  # a database of versions before: one graph a dimension, until each large base has its own
            self._graph_soon(None)

    @classmethod
    def open(cls, settings: Settings) -> Store:
        bm25 = Bm25(settings.bm25_k1, settings.bm25_b)
        if settings.database_url:
            return cls(settings.database_url, embedded=False, bm25=bm25)
        return cls(embedded_server_uri(settings.pgdata), embedded=True, bm25=bm25, pgdata=settings.pgdata)

    def close(self) -> None:
        merging = self._merging
        if merging is not None:
            merging.join()  # a merge is one transaction: finished, not cut off
        # A graph a search asked for is not waited for (minutes for a large base, after a CLI search): the server
        # finishes the statement on its own connection, and one left invalid is built anew. One an ingest asked for
        # is: it is part of that ingest's work (and the embedded server, stopped at exit, would cut it off).
        with self._graphs_lock:
            awaited = self._graphs_awaited
        if awaited:
            self.wait_for_graphs()
        self._pool.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection]:
        try:
            with self._pool.connection() as conn:
                yield conn
        except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure) as exc:
            raise StoreBusyError(
                Text(
                    "another write to the same rows got in the way ({error}); nothing was written: try again",
                    error=type(exc).__name__,
                )
            ) from exc
        except psycopg.errors.DiskFull as exc:
            raise StoreError(
                Text(
                    "the database's disk is full: free some space; nothing was written, and what "
                    "was stored before is intact"
                )
            ) from exc
        except psycopg.errors.StatementTooComplex as exc:
            raise StoreError(
                Text("the query is too complex for PostgreSQL (stack depth): use a shorter filter")
            ) from exc
        except psycopg.errors.OutOfMemory as exc:
            raise StoreError(
                Text("the database ran out of memory: try a smaller request, or give PostgreSQL more memory")
            ) from exc
        except psycopg.errors.ProgramLimitExceeded as exc:
            # An OperationalError by its class (54), but the data's fault, not the connection's.
            raise StoreError(
                Text("the data is too large for PostgreSQL ({error}); nothing was written", error=one_line(exc, None))
            ) from exc
        except psycopg.OperationalError as exc:
            if self.pgdata is not None and revive_embedded_server(self.pgdata):
                self._pool.check()  # drop the connections to the dead server; new ones go to the new one
                raise StoreError(
                    Text(
                        "the embedded database had stopped (its server process was killed) and "
                        "has been started again: try once more"
                    )
                ) from exc
            raise StoreError(Text("database connection failed: {error}", error=one_line(exc, None))) from exc
        except psycopg.Error as exc:
            # Whatever the statement, the transaction was rolled back: nothing half-written.
            raise StoreError(Text("the database refused the operation: {error}", error=one_line(exc, None))) from exc

    def connection(self) -> AbstractContextManager[psycopg.Connection]:
        """A pooled connection with the store's errors (one line each, StoreError), for code outside this
        package that runs its own statements in its own transaction (rag.portable: export and import)."""
        return self._conn()

    @property
    def conversations(self) -> Conversations:
        """The stored conversations (rag.store.conversations), in this store's database."""
        return Conversations(self._conn)

    @property
    def vector_cache(self) -> VectorCache:
        """The vectors of ingests that did not finish (rag.store.vector_cache), in this store's database."""
        return VectorCache(self._conn)

    @property
    def question_sets(self) -> QuestionSets:
        """The knowledge bases' saved question sets and their check runs (rag.store.question_sets)."""
        from rag.store.question_sets import QuestionSets

        return QuestionSets(self._conn)

    def stored_vectors(self, embedder: str, dimension: int, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors the knowledge bases built with `embedder` at `dimension` hold for `texts`, by exact
        chunk text (rag.store.stored_vectors): what the Chunk Lab need not embed again."""
        from rag.store.stored_vectors import stored_vectors

        return stored_vectors(self._conn, embedder, dimension, texts)

    def server_info(self) -> ServerInfo:
        with self._conn() as conn:
            pg_row = conn.execute("SHOW server_version").fetchone()
            vec_row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            assert pg_row is not None and vec_row is not None, "SHOW returns a row; the schema made the extension"
            pg, vec = pg_row[0], vec_row[0]
        location = (
            "embedded"
            if self.embedded
            else psycopg.conninfo.conninfo_to_dict(self.conninfo).get("host", "local socket")
        )
        return ServerInfo(self.embedded, str(location), pg, vec)

    # -- knowledge bases -------------------------------------------------------------

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        return self._knowledge_bases(None)

    def get_knowledge_base(self, name: str) -> KnowledgeBase | None:
        return next(iter(self._knowledge_bases(name)), None)

    def _knowledge_bases(self, name: str | None) -> list[KnowledgeBase]:
        """All knowledge bases, or the one named (its documents counted alone: an ingest asks for it at every
        file, and counting every base's documents made that grow with the database)."""
        where = sql.SQL("WHERE k.name = %s") if name is not None else sql.SQL("")
        with self._conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(
                sql.SQL(
                    """
                SELECT k.name, k.embedder, k.dimension, k.chunk_settings, k.created_at,
                       count(d.id)::int AS documents, coalesce(sum(d.chunk_count), 0)::int AS chunks,
                       k.source_folder
                FROM knowledge_bases k LEFT JOIN documents d ON d.knowledge = k.name {}
                GROUP BY k.name ORDER BY k.name
                """
                ).format(where),
                (name,) if name is not None else (),
            )
            return [KnowledgeBase(**row) for row in cur.fetchall()]

    def set_source_folder(self, name: str, folder: str | None) -> None:
        """Remember the folder `rag sync` keeps knowledge base `name` in step with."""
        with self._conn() as conn:
            conn.execute("UPDATE knowledge_bases SET source_folder = %s WHERE name = %s", (folder, name))

    def delete_knowledge_base(self, name: str) -> bool:
        with self._conn() as conn, conn.transaction():
            conn.execute("SELECT 1 FROM knowledge_bases WHERE name = %s FOR UPDATE", (name,))
            # Chunks of documents cascade; rows written by other tools (no document) go too. Their
            # BM25 statistics go with them (the triggers delete what falls to zero).
            conn.execute("DELETE FROM vector_store WHERE metadata->>'knowledge' = %s", (name,))
            cur = conn.execute("DELETE FROM knowledge_bases WHERE name = %s", (name,))
            deleted, pending = cur.rowcount > 0, _pending_terms(conn)
        self._merge_soon(pending)
        if deleted:
            try:  # its graph, empty now (after the commit: DROP INDEX would hold every search of the table)
                drop_graphs(self.conninfo, name)
            except psycopg.Error as exc:
                log.warning("the deleted knowledge base's vector index stays: %s", one_line(exc, None))
        return deleted

    def check_embedder(self, knowledge: str, embedder: str) -> None:
        with self._conn() as conn:
            row = conn.execute("SELECT embedder FROM knowledge_bases WHERE name = %s", (knowledge,)).fetchone()
        if row is not None and row[0] != embedder:
            raise EmbedderMismatchError(mismatch_message(knowledge, row[0], embedder))

    # -- documents ------------------------------------------------------------------

    def list_documents(self, knowledge: str | None = None) -> list[StoredDocument]:
        return self._documents(knowledge, None)

    def find_document(self, knowledge: str, filename: str) -> StoredDocument | None:
        return next(iter(self._documents(knowledge, [filename])), None)

    def find_documents(self, knowledge: str, filenames: Sequence[str]) -> dict[str, StoredDocument]:
        """The documents of these names in the knowledge base, by name (one query for an ingest's next files)."""
        return {d.original_filename: d for d in self._documents(knowledge, list(filenames))} if filenames else {}

    def _documents(self, knowledge: str | None, filenames: list[str] | None) -> list[StoredDocument]:
        """The documents of every knowledge base, of one, or those of these names in it (by the unique index:
        an ingest looks at every file whether it is stored, which listing them all made grow with the base)."""
        conditions: list[sql.Composable] = []
        params: list[object] = []
        if knowledge is not None:
            conditions.append(sql.SQL("knowledge = %s"))
            params.append(knowledge)
        if filenames is not None:
            conditions.append(sql.SQL("original_filename = ANY(%s)"))
            params.append(filenames)
        where = sql.SQL("WHERE ") + sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("")
        query = sql.SQL(
            "SELECT id, knowledge, original_filename, path, sha256, size_bytes, page_count, "
            "chunk_count, chunk_settings, ingested_at FROM documents {} "
            "ORDER BY knowledge, original_filename"
        ).format(where)
        with self._conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(query, params)
            return [StoredDocument(**row) for row in cur.fetchall()]

    def documents_with_content(self, sha256s: Sequence[str]) -> list[StoredDocument]:
        """The documents, in any knowledge base, whose content has one of these SHA-256 digests."""
        if not sha256s:
            return []
        with self._conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(
                "SELECT id, knowledge, original_filename, path, sha256, size_bytes, page_count, "
                "chunk_count, chunk_settings, ingested_at FROM documents WHERE sha256 = ANY(%s) "
                "ORDER BY knowledge, original_filename",
                (list(sha256s),),
            )
            return [StoredDocument(**row) for row in cur.fetchall()]

    def document_bytes(self, document_id: uuid.UUID) -> bytes | None:
        with self._conn() as conn:
            row = conn.execute("SELECT content FROM documents WHERE id = %s", (document_id,)).fetchone()
            return bytes(row[0]) if row else None

    @_once_more_if_busy
    def delete_document(self, knowledge: str, filename: str) -> bool:
        with self._conn() as conn, conn.transaction():
            conn.execute("SELECT 1 FROM knowledge_bases WHERE name = %s FOR UPDATE", (knowledge,))
            cur = conn.execute(
                "DELETE FROM documents WHERE knowledge = %s AND original_filename = %s",
                (knowledge, filename),
            )
            return cur.rowcount > 0

    @_once_more_if_busy
    def write_document(
        self,
        *,
        knowledge: str,
        embedder: str,
        dimension: int,
        chunk_settings: dict[str, Any],
        filename: str,
        path: str | None,
        data: bytes,
        sha256: str,
        page_count: int,
        chunks: Sequence[Chunk],
        embeddings: np.ndarray,
        extras: Sequence[dict[str, Any]] | None = None,
    ) -> WriteResult:
        """Store one document and its chunks in one transaction: all of it or nothing. `extras`:
        more metadata per chunk (where it is: 'location'; read by OCR: 'ocr'). A transaction that lost a
        deadlock (rolled back whole) is run once more (`_once_more_if_busy`)."""
        if extras is not None and len(extras) != len(chunks):
            raise StoreError(
                Text(
                    "{filename}: {chunks} chunks but {extras} metadata extras",
                    filename=filename,
                    chunks=len(chunks),
                    extras=len(extras),
                )
            )
        if len(chunks) != len(embeddings):
            raise StoreError(
                Text(
                    "{filename}: {chunks} chunks but {embeddings} embeddings",
                    filename=filename,
                    chunks=len(chunks),
                    embeddings=len(embeddings),
                )
            )
        if len(chunks) and embeddings.shape[1] != dimension:
            raise StoreError(
                Text(
                    "{filename}: embeddings are {got}-d, the knowledge base is {dimension}-d",
                    filename=filename,
                    got=embeddings.shape[1],
                    dimension=dimension,
                )
            )
        with self._conn() as conn, conn.transaction():
            kb = self._lock_knowledge_base(conn, knowledge, embedder, dimension, chunk_settings, filename)
            if kb["embedder"] != embedder:
                raise EmbedderMismatchError(mismatch_message(knowledge, kb["embedder"], embedder))
            old = conn.execute(
                "SELECT id, sha256, chunk_settings FROM documents WHERE knowledge = %s AND original_filename = %s",
                (knowledge, filename),
            ).fetchone()
            if old is not None and old[1] == sha256 and old[2] == chunk_settings:
                return WriteResult("unchanged", old[0], 0)
            if old is not None:
                conn.execute("DELETE FROM documents WHERE id = %s", (old[0],))
            document_id = uuid.uuid4()
            conn.execute(
                "INSERT INTO documents (id, knowledge, original_filename, path, sha256, content, "
                "size_bytes, page_count, chunk_count, chunk_settings) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    document_id,
                    knowledge,
                    filename,
                    path,
                    sha256,
                    data,
                    len(data),
                    page_count,
                    len(chunks),
                    Jsonb(chunk_settings),
                ),
            )
            rows = (
                (
                    uuid.uuid4(),
                    chunk.text,
                    chunk_metadata(knowledge, filename, path, document_id, chunk) | (extras[i] if extras else {}),
                    vector,
                    document_id,
                )
                for i, (chunk, vector) in enumerate(zip(chunks, embeddings))
            )
            conn.execute("SELECT set_config('work_mem', %s, true)", (WRITE_WORK_MEM,))
            copy_rows(conn, rows)
            pending = _pending_terms(conn)
        self._merge_soon(pending)
        return WriteResult("replaced" if old is not None else "stored", document_id, len(chunks))

    def merge_bm25(self, wait: bool = True) -> int:
        """The pending BM25 counts (`bm25_stats`) merged into the statistics tables; how many pending rows were
        merged. `wait`: after a merge another connection runs (else none is done then). Searches read the
        counts either way: merging keeps what they read small. A merge that fails leaves them pending, exact:
        it is logged, never raised (the writes before it are committed)."""
        try:
            with self._conn() as conn:
                merged = conn.execute("SELECT bm25_merge(%s)", (wait,)).fetchone()
                return int(merged[0]) if merged else 0
        except StoreError as exc:
            log.warning("the pending BM25 statistics stay pending: %s", one_line(exc, None))
            return 0

    def clean_keyword_index(self) -> int:
        """The keyword index's pending list (`schema.GIN_PENDING_KB`) merged into the index; how many of its pages
        were. A failure is logged, never raised: the list stays, read by searches, until a writer fills it."""
        try:
            with self._conn() as conn, conn.transaction():
                conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (CLEAN_WORK_MEM,))
                # Only its owner (or a superuser) may: a role that is neither leaves the list to the writers.
                cleaned = conn.execute(
                    "SELECT gin_clean_pending_list(c.oid) FROM pg_class c "
                    "WHERE c.oid = %s::regclass AND pg_has_role(c.relowner, 'USAGE')",
                    (FTS_INDEX,),
                ).fetchone()
                return int(cleaned[0]) if cleaned else 0
        except StoreError as exc:
            log.warning("the keyword index's pending list stays pending: %s", one_line(exc, None))
            return 0

    def analyze_if_due(self) -> bool:
        """`vector_store` analyzed where autovacuum's own rule says it is due (more rows changed since it last was
        than the server's autovacuum_analyze_threshold and its scale factor of the table's rows), or where it never
        was: the writes' end does what `schema.AUTOVACUUM_ROWS` keeps autovacuum from doing in their middle. Whether
        it was due. SKIP_LOCKED: a graph being built (CREATE INDEX CONCURRENTLY holds the lock ANALYZE takes, and
        waits for older transactions to end) is not waited for; its build's end asks again. A failure is logged,
        never raised: the planner's figures are older, nothing is wrong."""
        try:
            with self._conn() as conn:
                due = conn.execute(_ANALYZE_DUE).fetchone()
                if not due or not due[0]:
                    return False
                conn.execute("ANALYZE (SKIP_LOCKED) vector_store")
                return True
        except StoreError as exc:
            log.warning("the knowledge bases' table was not analyzed: %s", one_line(exc, None))
            return False

    def merge_bm25_later(self) -> None:
        """Merge what is pending in a thread of its own, after the merge running now if one is, and clean the
        keyword index's pending list (an ingest's end: its knowledge base is searchable, and exact, before its
        counts are folded in and its terms sorted into the index; `close` waits for it); the table is analyzed
        there too where it is due (`analyze_if_due`)."""
        with self._merging_lock:
            before = self._merging

            def merge() -> None:
                # The index's pending list and the counts are apart (the index's pages; the statistics tables): two
                # server processes merge them at once. After the peers bench's 200 PDFs, one after the other took
                # 4.6-7.5 s (the counts ~2 s, the list ~3 s), at once 3.0-3.9 s (searches are fast again sooner).
                cleaning = threading.Thread(target=self.clean_keyword_index, name="rag-gin-clean", daemon=True)
                cleaning.start()
                if before is not None:
                    before.join()
                self.merge_bm25()
                # Beside the list's merge, the longer of the two: close() after that bench's ingest 4.6-5.2 s
                # against 5.9-6.5 with the analysis after both.
                self.analyze_if_due()
                cleaning.join()

            self._merging = threading.Thread(target=merge, name="rag-bm25-merge", daemon=True)
            self._merging.start()

    def _merge_soon(self, pending: int) -> None:
        """Merge the pending BM25 counts in a thread of its own once they hold more than `MERGE_TERMS` terms
        (`pending`, as the write that just committed counted them): the write does not wait for it (their rows
        are apart), and an ingest goes on writing meanwhile."""
        if pending <= MERGE_TERMS:
            return
        with self._merging_lock:
            if self._merging is not None and self._merging.is_alive():
                return
            self._merging = threading.Thread(target=self._merge_if_pending, name="rag-bm25-merge", daemon=True)
            self._merging.start()

    def _merge_if_pending(self) -> None:
        """A background merge, if more than `MERGE_TERMS` counts are still pending once it starts. The write that
        asked for it may have counted the rows a merge was folding in as it committed: on the peers bench's 200 PDFs
        a third merge started as the second ended, for the 10 documents written meanwhile (0.4 s of the server's
        time, every merge upserting most of the vocabulary again)."""
        try:
            with self._conn() as conn:
                pending = _pending_terms(conn)
        except StoreError as exc:
            log.warning("the pending BM25 statistics stay pending: %s", one_line(exc, None))
            return
        if pending > MERGE_TERMS:
            self.merge_bm25(wait=False)

    def build_graphs(
        self, knowledge_bases: Sequence[str] | None = None, on_build: Callable[[str, int], None] | None = None
    ) -> list[str]:
        """The HNSW graph of each of `knowledge_bases` (None: all) that has outgrown exact search and has none
        (`graphs.build_graphs`; `on_build(name, chunks)` before each); the names of those built. A failure is
        logged, not raised: searches read the rows exactly until a later build succeeds."""
        try:
            return build_graphs(self.conninfo, knowledge_bases, on_build)
        except psycopg.Error as exc:
            log.warning("the vector index was not built; searches read every row meanwhile: %s", one_line(exc, None))
            return []

    def build_graphs_later(
        self,
        knowledge_bases: Sequence[str],
        probes: tuple[str, Callable[[Sequence[str]], np.ndarray]] | None = None,
    ) -> list[tuple[str, int]]:
        """`build_graphs` of `knowledge_bases` in the background, where one has outgrown exact search and has no
        graph; (name, chunks) of each to be built (an ingest's end: its rows are searchable, read exactly, while
        the graph is built; `close` waits for it). `probes`: (embedder name, its embed_queries) of the bases, which
        embeds the questions their graphs are checked with once (`graphs.PROBE_QUESTIONS`), before a build. A
        failure to look is logged: a search asks again."""
        try:
            with self._conn() as conn:
                due = unbuilt(conn, knowledge_bases)
                embed = due and probes is not None and not graphs.has_probes(conn, probes[0])
        except StoreError as exc:
            log.warning("the vector index was not built; searches read every row meanwhile: %s", one_line(exc, None))
            return []
        if embed and probes is not None:  # embedded with no connection held (e5: ~1 s for the 32 questions)
            self._keep_probes(*probes)
        if due:
            self._graph_soon([name for name, _ in due], awaited=True)
        return due

    def _keep_probes(self, embedder: str, embed_queries: Callable[[Sequence[str]], np.ndarray]) -> None:
        try:
            vectors = embed_queries(graphs.PROBE_QUESTIONS)
        except EmbedderError as exc:  # the check probes between rows instead
            log.warning("the questions a vector index is checked with were not embedded: %s", one_line(exc, None))
            return
        try:
            with self._conn() as conn:
                graphs.keep_probes(conn, embedder, [list(map(float, v)) for v in vectors])
        except (StoreError, psycopg.Error) as exc:  # never the ingest's failure: the check probes between rows
            log.warning("the questions a vector index is checked with were not kept: %s", one_line(exc, None))

    def wait_for_graphs(self) -> None:
        """Wait for the graphs being built in the background (`build_graphs_later`, or asked for by a search)."""
        while True:
            with self._graphs_lock:
                graphing = self._graphing
            if graphing is None or not graphing.is_alive():
                return
            graphing.join()

    def _graph_soon(self, knowledge_bases: Sequence[str] | None, awaited: bool = False) -> None:
        """`build_graphs` in a thread of its own (one at a time; what is asked meanwhile is built next); `awaited`:
        an ingest asked, so `close` waits for the thread (until it has built all it was asked)."""
        with self._graphs_lock:
            self._graphs_awaited = self._graphs_awaited or awaited
            if self._graphing_names is not None:
                self._graphing_names = None if knowledge_bases is None else self._graphing_names | set(knowledge_bases)
            if self._graphs_asked:
                return  # the running thread builds them next
            self._graphs_asked = True
            self._graphing = threading.Thread(target=self._build_asked, name="rag-graphs", daemon=True)
            self._graphing.start()

    def _build_asked(self) -> None:
        while True:
            with self._graphs_lock:
                names, self._graphing_names = self._graphing_names, set()
                if names is not None and not names:
                    self._graphs_asked = False  # decided under the lock: what is asked after starts a thread
                    self._graphs_awaited = False  # and is awaited only if an ingest asks again
                    return
            self.build_graphs(None if names is None else sorted(names))
            if not self._pool.closed:  # a build a search asked for may end after `close`
                self.analyze_if_due()  # skipped while the build held the table (`analyze_if_due`)

    def _lock_knowledge_base(
        self,
        conn: psycopg.Connection,
        name: str,
        embedder: str,
        dimension: int,
        chunk_settings: dict[str, Any],
        filename: str,
    ) -> dict[str, Any]:
        """The knowledge base's row, made if missing and held against a delete (FOR SHARE: writers of other
        files of it go on at once; a document's delete or the base's waits for them, and they for it), and
        the file's advisory lock, which two writes of one file (two tabs) take turns on."""
        conn.execute(
            "INSERT INTO knowledge_bases (name, embedder, dimension, chunk_settings) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
            (name, embedder, dimension, Jsonb(chunk_settings)),
        )
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute(
                "SELECT name, embedder, dimension FROM knowledge_bases WHERE name = %s FOR SHARE",
                (name,),
            )
            row = cur.fetchone()
        assert row is not None, "the INSERT above made the knowledge base if it was missing"
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s), hashtext(%s))", (name, filename))
        # Only when they changed: the update locks the row, which two writers holding it FOR SHARE would
        # deadlock on (the loser is run once more, `_once_more_if_busy`).
        conn.execute(
            "UPDATE knowledge_bases SET chunk_settings = %s WHERE name = %s AND chunk_settings IS DISTINCT FROM %s",
            (Jsonb(chunk_settings), name, Jsonb(chunk_settings)),
        )
        return row

    # -- chunks ---------------------------------------------------------------------

    def search(
        self,
        query_embedding: np.ndarray,
        knowledge_bases: Sequence[str],
        *,
        top_k: int = 5,
        min_score: float | None = None,
        sql_filter: SqlFilter | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """Nearest chunks by cosine similarity within the given knowledge bases.

        `exact` scans every row instead of using HNSW: the yardstick for recall.
        """
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        vector = np.asarray(query_embedding, dtype=np.float32)
        with self._conn() as conn:
            hits, waiting = vector_sql.vector_search(conn, vector, knowledge_bases, top_k, sql_filter, exact)
        if waiting:  # read row by row meanwhile: an ingest stopped before its end, or an import
            self._graph_soon(waiting)
        if min_score is not None:
            hits = [h for h in hits if h.score >= min_score]
        return hits

    def keyword_search(
        self,
        query: str,
        knowledge_bases: Sequence[str],
        *,
        top_k: int = 5,
        sql_filter: SqlFilter | None = None,
        bm25: Bm25 | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """Chunks sharing words (or CJK bigrams) with the query, ranked by BM25 (see `keyword_sql`);
        `Hit.score` is the BM25 score: 0 and up, higher is better, not bounded by 1.

        `bm25` overrides the store's k1 and b; `exact` scores every matching chunk, the yardstick
        of the bounded candidate set.
        """
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        if not query.strip() or not knowledge_bases:
            return []
        with self._conn() as conn:
            return keyword_sql.keyword_search(conn, query, knowledge_bases, top_k, sql_filter, bm25 or self.bm25, exact)

    def explain_search(self, dimension: int, knowledge_base: str, top_k: int = 10) -> str:
        """The plan of a KB-filtered search, to check that the HNSW index is used."""
        with self._conn() as conn:
            return vector_sql.explain_vector_search(conn, dimension, knowledge_base, top_k)

    def get_chunk(self, chunk_id: uuid.UUID | str) -> Hit | None:
        try:
            key = uuid.UUID(str(chunk_id))
        except ValueError:
            return None
        with self._conn() as conn:
            row = conn.execute("SELECT id, content, metadata FROM vector_store WHERE id = %s", (key,)).fetchone()
        return Hit(id=row[0], content=row[1], metadata=row[2], score=1.0) if row else None

    def iter_chunks(self, knowledge: str) -> Iterator[Hit]:
        with self._conn() as conn, conn.cursor(name="export") as cur:
            cur.execute(
                "SELECT id, content, metadata FROM vector_store WHERE metadata->>'knowledge' = %s "
                "ORDER BY metadata->>'original_filename', (metadata->>'chunk_index')::int",
                (knowledge,),
            )
            for row in cur:
                yield Hit(id=row[0], content=row[1], metadata=row[2], score=1.0)
