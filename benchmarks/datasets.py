"""The search benchmarks' chunks: clustered vectors with Zipf-worded texts, spread over knowledge bases
that hold 50 %, 10 % and 1 % of the rows, in a scratch database or in one kept between runs.

A million 768-d rows take tens of minutes to load and index on 2 cores, so `kept` builds them once in a
database of their own (`rag_bench_<rows>_<dim>` on the configured server), records how long that took,
and later runs search them as they are. A kept database is rebuilt only when its `VERSION` changes.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import uuid
from collections.abc import Callable, Sequence

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from benchmarks.corpus import clustered, sentences
from rag.cores import usable_cores
from rag.store import Hit, Store, copy_rows, graphs
from rag.store.schema import HNSW_OPTIONS, graph_megabytes

VERSION = 4
"""Bump when what `fill` writes changes: kept databases of another version are rebuilt."""
BATCH = 10_000


def knowledge_of(i: int) -> str:
    """Row i's knowledge base: half the rows in `half`, a tenth in `tenth`, a hundredth in `hundredth`,
    the rest in 39 knowledge bases of 1 % each (so that "no filter" still names knowledge bases)."""
    slot = i % 100
    if slot < 50:
        return "half"
    if slot < 60:
        return "tenth"
    return "hundredth" if slot == 60 else f"rest{slot}"


NAMES: tuple[str, ...] = ("half", "tenth", "hundredth", *(f"rest{slot}" for slot in range(61, 100)))
CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("no filter", NAMES),
    ("KB filter, 50% of rows", ("half",)),
    ("KB filter, 10% of rows", ("tenth",)),
    ("KB filter, 1% of rows", ("hundredth",)),
)
"""What each search case names, and what a knowledge-base filter keeps."""


@dataclasses.dataclass(frozen=True)
class Dataset:
    uri: str
    rows: int
    dim: int
    load_seconds: float
    index_seconds: float
    settings: str
    """The PostgreSQL settings the HNSW index was built with."""
    reused: bool
    """True when a kept database from an earlier run was searched as it was."""

    def sizes(self) -> tuple[float, float]:
        """MB of the knowledge bases' HNSW indexes and of the table (with its TOAST and other indexes)."""
        with psycopg.connect(self.uri) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(pg_relation_size(indexname::regclass)), 0), "
                "pg_total_relation_size('vector_store') FROM pg_indexes "
                "WHERE tablename = 'vector_store' AND indexname = ANY(%s)",
                (graphs.graph_indexes(conn, self.dim),),
            ).fetchone()
        return row[0] / 1e6, row[1] / 1e6


def centers(n: int, dim: int) -> np.ndarray:
    """The topic centres the rows cluster around (one per 100 rows, at least 50)."""
    return np.random.default_rng(11).normal(size=(max(50, n // 100), dim)).astype(np.float32)


def queries(n: int, dim: int, count: int) -> np.ndarray:
    """Query vectors near the same centres, the same for every run on the same data."""
    return clustered(count, dim, np.random.default_rng(23), centers(n, dim))


def _progress(label: str, done: int, total: int, started: float) -> None:
    if total >= 200_000:  # a kept build runs for minutes: say where it is (stderr: the report stays clean)
        rate = done / max(1e-9, time.perf_counter() - started)
        print(
            f"\r{label}: {done:,}/{total:,} rows ({rate:,.0f}/s)",
            end="" if done < total else "\n",
            file=sys.stderr,
            flush=True,
        )


def _hnsw_settings(conn: psycopg.Connection, rows: int, dim: int) -> str:
    """Room for the whole graph in maintenance_work_mem, and one parallel worker per spare core: a graph
    that outgrows it is built on disk, several times slower (pgvector says so in a NOTICE)."""
    megabytes = graph_megabytes(rows, dim)
    workers = usable_cores() - 1
    conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(f"{megabytes}MB")))
    conn.execute(sql.SQL("SET max_parallel_maintenance_workers = {}").format(sql.Literal(workers)))
    return f"{HNSW_OPTIONS}, maintenance_work_mem={megabytes}MB, max_parallel_maintenance_workers={workers}"


def build_graphs_now(conn: psycopg.Connection, dim: int) -> None:
    """The graph of every knowledge base past `graphs.GRAPH_ROWS`, as an ingest leaves them, built one after the
    other in this transaction (nobody else writes a bench database; the app builds them concurrently)."""
    for _name, _dimension, key, _rows in graphs.large_bases(conn, dimension=dim):
        conn.execute(graphs.graph_sql(dim, key, concurrently=False))


def fill(uri: str, rows: int, dim: int, *, bulk: bool) -> tuple[float, float, str]:
    """Write `rows` chunks of `dim` and their bookkeeping, then the HNSW index: (load s, index s, settings).

    `bulk` loads as a restore would: without the BM25 statistics triggers and the full-text index, which
    the schema then rebuilds from the rows in one statement each (the same statistics the triggers keep;
    per-row upkeep made a million rows cost ~50 minutes). Without it, rows go in as an ingest writes them.
    """
    Store(uri).close()  # the schema
    rng = np.random.default_rng(11)
    topic = rng.normal(size=(max(50, rows // 100), dim)).astype(np.float32)  # = centers(rows, dim)
    started = time.perf_counter()
    with psycopg.connect(uri) as conn:
        register_vector(conn)
        counts: dict[str, int] = {}
        for i in range(100):
            counts[knowledge_of(i)] = counts.get(knowledge_of(i), 0) + rows // 100 + (1 if i < rows % 100 else 0)
        documents: dict[str, uuid.UUID] = {}
        for name, count in counts.items():
            # The bookkeeping a real ingest writes (one document per knowledge base, holding its rows):
            # search sizes ef_search from it and reads a small knowledge base's rows through it.
            documents[name] = uuid.uuid4()
            conn.execute(
                "INSERT INTO knowledge_bases (name, embedder, dimension, chunk_settings) "
                "VALUES (%s, 'bench', %s, '{}')",
                (name, dim),
            )
            conn.execute(
                "INSERT INTO documents (id, knowledge, original_filename, sha256, content, size_bytes, "
                "page_count, chunk_count, chunk_settings) VALUES (%s, %s, 'bench', '', '', 0, 1, %s, '{}')",
                (documents[name], name, count),
            )
        if bulk:
            conn.execute("DROP TRIGGER bm25_track_insert ON vector_store")
            conn.execute("DROP INDEX vector_store_fts_idx")
        conn.commit()
        for start in range(0, rows, BATCH):
            vectors = clustered(min(BATCH, rows - start), dim, rng, topic)
            texts = sentences(len(vectors), seed=start)
            copy_rows(
                conn,
                (
                    (
                        uuid.uuid4(),
                        texts[i],
                        {
                            "knowledge": knowledge_of(start + i),
                            "chunk_index": start + i,
                            "original_filename": f"doc{(start + i) // 50}.pdf",
                            "pages": [1 + i % 30],
                        },
                        v,
                        documents[knowledge_of(start + i)],
                    )
                    for i, v in enumerate(vectors)
                ),
            )
            conn.commit()
            _progress(f"loading {dim}-d", start + len(vectors), rows, started)
    if not bulk:
        # What an ingest does at its end (and in the background beyond MERGE_TERMS): the BM25 counts the rows left
        # pending folded into the tables. Left pending, every keyword search read all ~6 million of them: the chat
        # turn's keyword search took 161 ms p50 at 100,000 rows, a state no ingest leaves.
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("SELECT bm25_merge()")
    if bulk:
        # The schema finds the statistics' trigger missing: it rebuilds them from the rows (and the index).
        rebuilt = time.perf_counter()
        Store(uri).close()
        if rows >= 200_000:
            print(
                f"BM25 statistics and full-text index rebuilt in {time.perf_counter() - rebuilt:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    loaded = time.perf_counter() - started
    with psycopg.connect(uri) as conn:
        settings = _hnsw_settings(conn, rows, dim)
        t0 = time.perf_counter()
        build_graphs_now(conn, dim)
        indexed = time.perf_counter() - t0
        conn.execute("ANALYZE vector_store")
        conn.commit()
    return loaded, indexed, settings


def kept(base_uri: str, rows: int, dim: int) -> Dataset:
    """The database `rag_bench_<rows>_<dim>` on `base_uri`'s server, built by the first run that asks."""
    name = f"rag_bench_{rows}_{dim}"
    info = psycopg.conninfo.conninfo_to_dict(base_uri)
    info["dbname"] = name
    uri = psycopg.conninfo.make_conninfo(**info)
    with psycopg.connect(base_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
    if exists:
        with psycopg.connect(uri) as conn:
            meta = (
                conn.execute("SELECT to_regclass('bench_dataset') IS NOT NULL").fetchone()[0]
                and conn.execute(
                    "SELECT load_seconds, index_seconds, settings FROM bench_dataset WHERE version = %s AND rows = %s",
                    (VERSION, rows),
                ).fetchone()
            )
        if meta:
            return Dataset(uri, rows, dim, meta[0], meta[1], meta[2], reused=True)
    with psycopg.connect(base_uri, autocommit=True) as conn:  # absent, unfinished or of another version
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        # For the statistics' one-statement rebuild (60M term rows grouped) and the GIN build.
        conn.execute(sql.SQL("ALTER DATABASE {} SET work_mem = '256MB'").format(sql.Identifier(name)))
        conn.execute(sql.SQL("ALTER DATABASE {} SET maintenance_work_mem = '1GB'").format(sql.Identifier(name)))
    loaded, indexed, settings = fill(uri, rows, dim, bulk=True)
    with psycopg.connect(uri) as conn:  # last: a build killed half-way is not taken for a finished one
        conn.execute(
            "CREATE TABLE bench_dataset (version int, rows bigint, load_seconds float8, "
            "index_seconds float8, settings text)"
        )
        conn.execute(
            "INSERT INTO bench_dataset VALUES (%s, %s, %s, %s, %s)", (VERSION, rows, loaded, indexed, settings)
        )
    return Dataset(uri, rows, dim, loaded, indexed, settings, reused=False)


def exact_truth(
    uri: str,
    dim: int,
    label: str,
    vectors: np.ndarray,
    names: Sequence[str],
    k: int,
    search: Callable[..., list[Hit]],
) -> tuple[list[set], list[float]]:
    """The exact top-k ids of each query (and the exact scan's seconds), kept in `bench_truth` so that
    a million-row scan per query is paid once per kept database."""
    with psycopg.connect(uri) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_truth (label text, query int, k int, ids uuid[], "
            "seconds float8, PRIMARY KEY (label, query, k))"
        )
        known = {
            r[0]: (set(r[1]), r[2])
            for r in conn.execute(
                "SELECT query, ids, seconds FROM bench_truth WHERE label = %s AND k = %s", (f"{dim}:{label}", k)
            )
        }
        conn.commit()
        ids, seconds = [], []
        for i, q in enumerate(vectors):
            if i not in known:
                t = time.perf_counter()
                hits = search(q, list(names), top_k=k, exact=True)
                known[i] = ({h.id for h in hits}, time.perf_counter() - t)
                conn.execute(
                    "INSERT INTO bench_truth VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (f"{dim}:{label}", i, k, list(known[i][0]), known[i][1]),
                )
                conn.commit()
            ids.append(known[i][0])
            seconds.append(known[i][1])
    return ids, seconds
