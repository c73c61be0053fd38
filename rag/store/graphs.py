"""One HNSW graph per large knowledge base, built in bulk once it has `GRAPH_ROWS` chunks.

A knowledge base below that size is searched exactly (every one of its rows compared, `vector_sql`), which
needs no index at all. Above it, its own partial HNSW index (`graph_sql`) serves its searches: unfiltered by
knowledge base, so no share of the graph is walked for rows of other bases (with one graph per dimension, a
base holding 1 % of 100,000 rows got recall@10 0.907 at 82 ms).

Why not one graph per dimension, kept up to date row by row as before: inserting each row into the graph was
the largest single part of an ingest's database time. On the peers bench's 200 PDFs (11,074 chunks) the server
spent 15.4-18.6 CPU s with the graph and 9.3-10.1 without it (the ingest 16.8-20.2 s against 14.2-14.7 s, two
alternating runs each), while the same graph built in bulk after the rows takes ~1.1 s. So an ingest writes
no graph; when it ends, each base that has outgrown exact search and has no graph gets one, built in the
background while its rows are searched exactly (`build_graphs`: CREATE INDEX CONCURRENTLY, so writers of other
bases go on), and rows written after that go into it as they come. That ingest, old and new one after the
other: 20.5 / 20.7 s against 19.1 / 16.7 s with the build, the server's CPU 20.1 / 19.7 s against 15.9 / 13.0 s.

The index's predicate names its base by `hashtext(name)`, an integer the server computes, so no user text
is written into SQL; a search of the base repeats the predicate as a literal, which is how PostgreSQL knows
the index covers it. Two names with one hash share a graph: a search still filters by the name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql

from rag.store.schema import HNSW_OPTIONS, SCHEMA_LOCK, dimension_sql, graph_megabytes

log = logging.getLogger(__name__)

GRAPH_ROWS = 5_000
"""Chunks from which a knowledge base gets a graph of its own. Below it an exact search reads all its rows:
the peers bench's knowledge base of 11,074 256-d chunks took 12 ms so (p50 of 20 queries, its rows read through
its documents) against ~1 ms by its graph; 768-d rows are read ~2x slower. Kept at 5,000, a base stays well
within a chat turn's budget (`bench --only search`: hybrid + prompt p95 < 50 ms); the graph costs an ingest
~0.1 ms a chunk built in bulk, ~0.5 ms of server CPU row by row once it exists."""

MAX_GRAPH_MEGABYTES = 1024
"""maintenance_work_mem for a build, at most: the whole graph of ~400k 384-d chunks; a bigger one is built
partly on disk (slower) rather than take more of a shared server's memory."""

BUILD_LOCK = SCHEMA_LOCK % 2**31 + 1
"""The first key of the advisory lock a build of one graph holds (the second: the base's hash): a second
build of it waits, and a graph left invalid by a build that was killed is told from one being built."""


@dataclass(frozen=True)
class Base:
    """A knowledge base as a vector search sees it: its rows and whether its own graph is ready."""

    name: str
    rows: int
    key: int
    """hashtext(name): what its graph's predicate names it by."""
    graphed: bool

    @property
    def large(self) -> bool:
        """Whether it has outgrown exact search (`GRAPH_ROWS`): it has, or is to have, a graph."""
        return self.rows >= GRAPH_ROWS


def graph_name(dimension: int, key: int) -> str:
    return f"vector_store_hnsw_{dimension}_{_hex(key)}"


def _hex(key: int) -> str:
    """A base's hash as its graphs' names end (hashtext is a signed 32-bit integer)."""
    return f"{key & 0xFFFFFFFF:08x}"


def large_bases(
    conn: psycopg.Connection, names: Sequence[str] | None = None, dimension: int | None = None
) -> list[tuple[str, int, int, int]]:
    """(name, dimension, hash, chunks) of each knowledge base with `GRAPH_ROWS` chunks or more, of `names` (None:
    all) and of `dimension` (None: any)."""
    rows = conn.execute(
        "SELECT k.name, k.dimension, hashtext(k.name), sum(d.chunk_count) FROM knowledge_bases k "
        "JOIN documents d ON d.knowledge = k.name "
        "WHERE (%(names)s::text[] IS NULL OR k.name = ANY(%(names)s)) "
        "AND (%(dimension)s::int IS NULL OR k.dimension = %(dimension)s) "
        "GROUP BY k.name HAVING sum(d.chunk_count) >= %(rows)s ORDER BY k.name",
        {"names": None if names is None else list(names), "dimension": dimension, "rows": GRAPH_ROWS},
    ).fetchall()
    return [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows]


def unbuilt(conn: psycopg.Connection, names: Sequence[str]) -> list[tuple[str, int]]:
    """(name, chunks) of each knowledge base of `names` that has outgrown exact search and has no graph ready."""
    large = large_bases(conn, names)
    ready = _valid(conn, [graph_name(dimension, key) for _, dimension, key, _ in large])
    return [(name, rows) for name, dimension, key, rows in large if graph_name(dimension, key) not in ready]


def legacy_name(dimension: int) -> str:
    """The one graph per dimension of versions before: searched until each large base has its own graph."""
    return f"vector_store_hnsw_{dimension}"


def base_predicate(dimension: int, key: int) -> sql.Composed:
    """The rows of a graph: `key`'s knowledge base, `dimension`'s vectors (the SQL of the index's predicate and
    of a search by it: the two must read alike for the planner to match them)."""
    return sql.SQL("vector_dims(embedding) = {} AND hashtext(metadata->>'knowledge') = {}").format(
        dimension_sql(dimension), sql.Literal(int(key))
    )


def graph_sql(dimension: int, key: int, concurrently: bool = True) -> sql.Composed:
    """The graph of `key`'s knowledge base; `concurrently` false only where nobody else writes (benchmarks)."""
    dim = dimension_sql(dimension)
    return sql.SQL(
        "CREATE INDEX {} IF NOT EXISTS {} ON vector_store USING hnsw "
        "((embedding::vector({})) vector_cosine_ops) WITH ({}) WHERE {}"
    ).format(
        sql.SQL("CONCURRENTLY" if concurrently else ""),
        sql.Identifier(graph_name(dimension, key)),
        dim,
        sql.SQL(HNSW_OPTIONS),
        base_predicate(dimension, key),
    )


def graph_indexes(conn: psycopg.Connection, dimension: int) -> list[str]:
    """The graphs of `dimension`'s knowledge bases (not the old one of the whole dimension)."""
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'vector_store' AND indexname LIKE %s ORDER BY 1",
        (f"vector_store_hnsw_{dimension}_%",),
    ).fetchall()
    return [r[0] for r in rows]


def bases(conn: psycopg.Connection, names: Sequence[str], dimension: int) -> tuple[list[Base], list[str]]:
    """The searched knowledge bases of `dimension` (their chunks, hash and whether their graph is ready), and
    the searched names that are no knowledge base (rows written by Spring AI alone)."""
    rows = conn.execute(
        "SELECT k.name, k.dimension, coalesce(sum(d.chunk_count), 0), hashtext(k.name) FROM knowledge_bases k "
        "LEFT JOIN documents d ON d.knowledge = k.name WHERE k.name = ANY(%s) GROUP BY k.name ORDER BY k.name",
        (list(names),),
    ).fetchall()
    ready = _valid(conn, [graph_name(dimension, int(r[3])) for r in rows if r[1] == dimension])
    found = [
        Base(r[0], int(r[2]), int(r[3]), graph_name(dimension, int(r[3])) in ready) for r in rows if r[1] == dimension
    ]
    listed = {r[0] for r in rows}
    return found, [n for n in names if n not in listed]


def legacy_exists(conn: psycopg.Connection, dimension: int) -> bool:
    return bool(_valid(conn, [legacy_name(dimension)]))


def legacy_graphs(conn: psycopg.Connection) -> list[int]:
    """The dimensions that still have their old graph."""
    rows = conn.execute(
        "SELECT substring(indexname from '^vector_store_hnsw_([0-9]+)$')::int FROM pg_indexes "
        "WHERE tablename = 'vector_store' AND indexname ~ '^vector_store_hnsw_[0-9]+$' ORDER BY 1"
    ).fetchall()
    return [int(r[0]) for r in rows]


def _valid(conn: psycopg.Connection, names: Sequence[str]) -> set[str]:
    """Which of the indexes `names` exist and are valid (a concurrent build shows its index invalid until done)."""
    if not names:
        return set()
    return {
        r[0]
        for r in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
            "WHERE c.relname = ANY(%s) AND i.indisvalid",
            (list(names),),
        )
    }


def build_graphs(
    conninfo: str, names: Sequence[str] | None = None, on_build: Callable[[str, int], None] | None = None
) -> list[str]:
    """A graph for each knowledge base of `names` (None: all) that has `GRAPH_ROWS` chunks and none ready; its
    names. Then the old graph of a dimension whose large bases all have theirs is dropped (writes stop paying
    for it). Each build is CREATE INDEX CONCURRENTLY on a connection of its own: writers of other bases go on
    meanwhile, searches of this one read its rows exactly until the graph is valid."""
    built: list[str] = []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for name, dimension, key, rows in large_bases(conn, names):
            if _build(conn, name, dimension, key, rows, on_build):
                built.append(name)
        for dimension in legacy_graphs(conn):
            _drop_legacy(conn, dimension)
    return built


def drop_graphs(conninfo: str, name: str) -> None:
    """The graphs of knowledge base `name` (one per dimension it had), once it is deleted; kept where another
    knowledge base of the same hash still has rows in them. DROP INDEX CONCURRENTLY: searches go on meanwhile."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        key = conn.execute("SELECT hashtext(%s)", (name,)).fetchone()
        assert key is not None, "a SELECT without FROM returns one row"
        if conn.execute("SELECT 1 FROM knowledge_bases WHERE hashtext(name) = %s", (key[0],)).fetchone():
            return
        for (index,) in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'vector_store' AND indexname ~ %s",
            (f"^vector_store_hnsw_[0-9]+_{_hex(int(key[0]))}$",),
        ).fetchall():
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(index)))


def _build(
    conn: psycopg.Connection,
    name: str,
    dimension: int,
    key: int,
    rows: int,
    on_build: Callable[[str, int], None] | None,
) -> bool:
    index = graph_name(dimension, key)
    if _valid(conn, [index]):
        return False
    conn.execute("SELECT pg_advisory_lock(%s, %s)", (BUILD_LOCK, key))
    try:
        if _valid(conn, [index]):  # built while this waited
            return False
        # Holding the lock, an index still invalid is a build that was cut off: made anew.
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(index)))
        megabytes = min(graph_megabytes(rows, dimension), MAX_GRAPH_MEGABYTES)
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(f"{megabytes}MB")))
        log.info("building the vector index of a knowledge base of %d chunks (%s)", rows, index)
        if on_build is not None:
            on_build(name, rows)
        conn.execute(graph_sql(dimension, key))
        conn.execute("RESET maintenance_work_mem")
        return True
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s, %s)", (BUILD_LOCK, key))


def _drop_legacy(conn: psycopg.Connection, dimension: int) -> None:
    """The dimension's old graph, once every base of it with `GRAPH_ROWS` chunks has its own."""
    if not legacy_exists(conn, dimension):
        return
    large = [name for name, *_ in large_bases(conn, dimension=dimension)]
    if all(b.graphed for b in bases(conn, large, dimension)[0]):
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(legacy_name(dimension))))
