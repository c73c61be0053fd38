"""Nearest chunks by cosine similarity: the HNSW query, its candidate-list size, and its plan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from rag.query.filters import SqlFilter
from rag.store import graphs
from rag.store.graphs import ef_search_for
from rag.store.records import Hit
from rag.store.schema import dimension_sql


def vector_search(
    conn: psycopg.Connection,
    vector: np.ndarray,
    knowledge_bases: Sequence[str],
    top_k: int,
    sql_filter: SqlFilter | None,
    exact: bool,
) -> tuple[list[Hit], list[str]]:
    """The `top_k` nearest rows of `vector`'s dimension, and the searched knowledge bases that have outgrown
    exact search but have no graph of their own yet (for the caller to build: `graphs.build_graphs`).

    Each knowledge base with its own graph is searched by it; the others are read row by row through their
    documents (`graphs.graph_rows`); the nearest of all are kept. `exact` compares with every row of the
    searched knowledge bases: the recall yardstick."""
    with conn.transaction():
        query, params, ef_search, waiting = _plan(conn, vector, knowledge_bases, top_k, sql_filter, exact)
        if ef_search:
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
        rows = conn.execute(query, params).fetchall()
    hits = [Hit(id=r[0], content=r[1], metadata=r[2], score=float(r[3]), vector_score=float(r[3])) for r in rows]
    return hits, waiting


def _plan(
    conn: psycopg.Connection,
    vector: np.ndarray,
    knowledge_bases: Sequence[str],
    top_k: int,
    sql_filter: SqlFilter | None,
    exact: bool,
) -> tuple[sql.Composed, list[Any], int, list[str]]:
    """The search's SQL and parameters: one part per knowledge base with a graph, one for the old graph of the
    dimension (versions before, until the large bases have theirs), one reading the other bases' rows, one
    scanning for names that are no knowledge base (rows written by Spring AI alone); the hnsw.ef_search it
    wants (0: no graph used) and the large bases without a graph."""
    dimension = int(vector.shape[0])
    dim = dimension_sql(dimension)
    names = list(dict.fromkeys(knowledge_bases))
    known, unknown = graphs.bases(conn, names, dimension)
    filtered = sql_filter is not None
    parts: list[tuple[sql.Composable, list[Any]]] = []
    ef_search = 0
    waiting: list[str] = []
    read: list[str] = []
    legacy: list[graphs.Base] = []
    if exact:
        scanned = [*(b.name for b in known), *unknown]
    else:
        scanned = unknown
        large = [b for b in known if not b.graphed and b.large and not b.exact]
        waiting = [b.name for b in large]
        legacy = large if large and graphs.legacy_exists(conn, dimension) else []
        for b in known:
            if b.graphed:
                where = sql.SQL("{} AND metadata->>'knowledge' = %s").format(graphs.base_predicate(dimension, b.key))
                parts.append(_part(where, [b.name], vector, top_k, sql_filter, dim))
                ef_search = max(ef_search, ef_search_for(top_k, 1.0, filtered, b.rows), b.ef_search)
            elif b not in legacy:
                read.append(b.name)
    if legacy:
        wanted, total = rows_of(conn, [b.name for b in legacy], dimension)
        where = sql.SQL("vector_dims(embedding) = {} AND metadata->>'knowledge' = ANY(%s)").format(dim)
        parts.append(_part(where, [[b.name for b in legacy]], vector, top_k, sql_filter, dim))
        share = wanted / total if total and wanted else 1.0
        ef_search = max(ef_search, ef_search_for(top_k, share, filtered, total))
    if read:
        where = sql.SQL(
            "vector_dims(embedding) = {} AND metadata->>'knowledge' = ANY(%s) "
            "AND document_id = ANY(ARRAY(SELECT id FROM documents WHERE knowledge = ANY(%s)))"
        ).format(dim)
        parts.append(_part(where, [read, read], vector, top_k, sql_filter, None))
        # Their rows of no document (written by Spring AI alone), found by the same index (IS NULL), as a graph
        # finds them among its base's rows.
        where = sql.SQL(
            "vector_dims(embedding) = {} AND metadata->>'knowledge' = ANY(%s) AND document_id IS NULL"
        ).format(dim)
        parts.append(_part(where, [read], vector, top_k, sql_filter, None))
    if scanned:
        where = sql.SQL("vector_dims(embedding) = {} AND metadata->>'knowledge' = ANY(%s)").format(dim)
        parts.append(_part(where, [scanned], vector, top_k, sql_filter, None))
    if not parts:  # nothing to search: a query that returns no row
        parts.append((sql.SQL("SELECT NULL::uuid, NULL::text, NULL::jsonb, NULL::float8 WHERE false"), []))
    union = sql.SQL(" UNION ALL ").join(sql.SQL("({})").format(p) for p, _ in parts)
    outer = sql.SQL("SELECT id, content, metadata, 1 - distance AS score FROM ({}) c ORDER BY distance LIMIT %s")
    query = outer.format(union)
    params = [v for _, ps in parts for v in ps] + [top_k]
    return query, params, ef_search, waiting


def _part(
    where: sql.Composable,
    where_params: list[Any],
    vector: np.ndarray,
    top_k: int,
    sql_filter: SqlFilter | None,
    graph_dim: sql.Composable | None,
) -> tuple[sql.Composable, list[Any]]:
    """The `top_k` nearest rows that `where` keeps: by a graph of `graph_dim` (its expression, for the index to
    give the order), else by comparing each row."""
    clauses = [where]
    params = list(where_params)
    if sql_filter is not None:
        clauses.append(sql.SQL(sql_filter.sql))
        params.extend(sql_filter.params)
    distance = (
        sql.SQL("embedding <=> %s")
        if graph_dim is None
        else sql.SQL("(embedding::vector({dim})) <=> %s").format(dim=graph_dim)
    )
    part = sql.SQL(
        "SELECT id, content, metadata, {distance} AS distance FROM vector_store WHERE {where} "
        "ORDER BY {distance} LIMIT %s"
    ).format(distance=distance, where=sql.SQL(" AND ").join(clauses))
    return part, [vector, *params, vector, top_k]


def rows_of(conn: psycopg.Connection, knowledge_bases: Sequence[str], dimension: int) -> tuple[int, int]:
    """How many of this dimension's chunks the searched knowledge bases hold, and how many there are."""
    row = conn.execute(
        "SELECT coalesce(sum(d.chunk_count) FILTER (WHERE d.knowledge = ANY(%s)), 0), "
        "coalesce(sum(d.chunk_count), 0) FROM documents d "
        "JOIN knowledge_bases k ON k.name = d.knowledge WHERE k.dimension = %s",
        (list(knowledge_bases), dimension),
    ).fetchone()
    assert row is not None, "an aggregate returns one row"
    return int(row[0]), int(row[1])


def explain_vector_search(conn: psycopg.Connection, dimension: int, knowledge_base: str, top_k: int) -> str:
    """The plan of a search of one knowledge base as `vector_search` would run it: by its graph, or through
    its documents while it is small."""
    probe = np.zeros(dimension, dtype=np.float32)
    probe[0] = 1.0
    with conn.transaction():
        query, params, ef_search, _ = _plan(conn, probe, [knowledge_base], top_k, None, False)
        if ef_search:
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        rows = conn.execute(sql.SQL("EXPLAIN ") + query, params).fetchall()
    return "\n".join(r[0] for r in rows)
