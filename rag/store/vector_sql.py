"""Nearest chunks by cosine similarity: the HNSW query, its candidate-list size, and its plan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from rag.query.filters import SqlFilter
from rag.store.records import Hit
from rag.store.schema import dimension_sql


def ef_search_for(top_k: int, share: float, filtered: bool, rows: int = 0) -> int:
    """HNSW candidate list size: a filter that keeps a share s of rows needs about k/s candidates
    for the iterative scan to find the true neighbours rather than merely k matching rows."""
    share = max(share, 1e-3) * (0.5 if filtered else 1.0)
    # pgvector's default of 40 gave recall@10 between 0.90 and 0.997 on 100,000 clustered
    # 768-d vectors from one index build to the next; 100 keeps it above 0.95 for a few ms. At a
    # million 768-d rows (bench --only scale, the graph of schema.HNSW_OPTIONS) 100 gave 0.845, 3
    # of 20 queries finding none of their neighbours, and 200 0.995 (p50 19 -> 63 ms, loaded); 400
    # no more.
    floor = 100 if rows <= 250_000 else 200
    return int(min(1000, max(floor, 2 * top_k, 2 * top_k / share)))


EXACT_ROWS = 20_000
EXACT_SHARE = 0.05
"""Knowledge bases holding at most EXACT_SHARE of a dimension's chunks, and at most EXACT_ROWS of them,
are searched exactly, their rows read through their documents (the document_id index). HNSW with a
filter that keeps 1 % of the rows walks much of the graph for a few matches: at 100,000 384-d rows
p50 82 ms and recall@10 0.907, slower than scanning every row; reading those 1,000 rows took 17 ms,
exact (bench --only scale, both on a loaded machine). At a million 768-d rows the bench's worst case,
every knowledge base's rows spread over the whole 10 GB table, HNSW took 706 ms for recall 0.680 and
these 10,000 rows 0.8-1.3 s exact (one heap page each, from disk); an ingest writes a document's
chunks together, so real rows sit on far fewer pages."""


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


def scans_exactly(wanted: int, total: int) -> bool:
    """True where reading the searched knowledge bases' rows beats walking the HNSW graph (see EXACT_ROWS)."""
    return 0 < wanted <= EXACT_ROWS and wanted <= EXACT_SHARE * total


def vector_search(
    conn: psycopg.Connection,
    vector: np.ndarray,
    knowledge_bases: Sequence[str],
    top_k: int,
    sql_filter: SqlFilter | None,
    exact: bool,
) -> list[Hit]:
    """The `top_k` nearest rows of `vector`'s dimension; `exact` compares with every row of the searched
    knowledge bases (the recall yardstick), which is also how a small share of the rows is searched."""
    with conn.transaction():
        how = "scan" if exact else "hnsw"
        if not exact:
            wanted, total = rows_of(conn, knowledge_bases, int(vector.shape[0]))
            how = "rows" if scans_exactly(wanted, total) else "hnsw"
        if how == "hnsw":
            share = wanted / total if total and wanted else 1.0
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true)",
                (str(ef_search_for(top_k, share, sql_filter is not None, total)),),
            )
        query, params = _search_query(vector, knowledge_bases, top_k, sql_filter, how)
        rows = conn.execute(query, params).fetchall()
    return [Hit(id=r[0], content=r[1], metadata=r[2], score=float(r[3]), vector_score=float(r[3])) for r in rows]


def _search_query(
    vector: np.ndarray, knowledge_bases: Sequence[str], top_k: int, sql_filter: SqlFilter | None, how: str
) -> tuple[sql.Composed, list[Any]]:
    """The search by the HNSW index (`hnsw`), through the knowledge bases' documents (`rows`), or over
    every row (`scan`)."""
    dim = dimension_sql(int(vector.shape[0]))
    where = [sql.SQL("vector_dims(embedding) = {}").format(dim), sql.SQL("metadata->>'knowledge' = ANY(%s)")]
    where_params: list[Any] = [list(knowledge_bases)]
    if how == "rows":
        where.append(sql.SQL("document_id IN (SELECT id FROM documents WHERE knowledge = ANY(%s))"))
        where_params.append(list(knowledge_bases))
    if sql_filter is not None:
        where.append(sql.SQL(sql_filter.sql))
        where_params.extend(sql_filter.params)
    # The exact scan orders by an expression the index does not cover. (A GUC such as
    # enable_indexscan would not do: psycopg prepares repeated queries and keeps their plans.)
    distance = (
        sql.SQL("embedding <=> %s") if how != "hnsw" else sql.SQL("(embedding::vector({dim})) <=> %s").format(dim=dim)
    )
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
    return query, [vector, *where_params, vector, top_k]


def explain_vector_search(conn: psycopg.Connection, dimension: int, knowledge_base: str, top_k: int) -> str:
    """The plan of a search of one knowledge base as `vector_search` would run it: by the HNSW index, or
    for a small share of the rows through its documents."""
    probe = np.zeros(dimension, dtype=np.float32)
    probe[0] = 1.0
    with conn.transaction():
        how = "rows" if scans_exactly(*rows_of(conn, [knowledge_base], dimension)) else "hnsw"
        if how == "hnsw":
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        query, params = _search_query(probe, [knowledge_base], top_k, None, how)
        rows = conn.execute(sql.SQL("EXPLAIN ") + query, params).fetchall()
    return "\n".join(r[0] for r in rows)
