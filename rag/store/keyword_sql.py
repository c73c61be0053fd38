"""Full-text hits ranked by cover density, with the words most chunks contain left out of the query.

Words found in more than `COMMON_TERM_SHARE` of all chunks, or in more than `COMMON_TERM_ROWS`
chunks (PostgreSQL's own statistics of the fts column), are left out of the query, as a search
engine's IDF would weigh them near zero: ranking the many chunks they match is what makes an OR
query slow. A query of common words only is kept whole. At most `KEYWORD_CANDIDATES` matching
chunks are ranked.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from rag.retrieve import keywords
from rag.retrieve.filters import SqlFilter
from rag.store.records import Hit

COMMON_TERM_SHARE = 0.2
COMMON_TERM_ROWS = 1000
KEYWORD_CANDIDATES = 1000
"""Keyword search: words in more than this share of chunks, or in more than this many chunks,
are left out of the query; at most this many matching chunks are ranked (see keyword_search)."""

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


def keyword_search(
    conn: psycopg.Connection,
    query: str,
    terms: str,
    knowledge_bases: Sequence[str],
    top_k: int,
    filter: SqlFilter | None,
) -> list[Hit]:
    """Hits scored by `ts_rank_cd` (scaled to 0..1); any shared word or CJK bigram matches.
    `terms` is `keywords.query_text(query)`, not empty (the caller needs no connection without it)."""
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
