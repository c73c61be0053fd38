"""Keyword hits ranked by BM25, from the statistics `bm25_stats` keeps beside the chunks.

    score(chunk) = sum over query terms t of  idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))
    idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))      (Lucene's, never negative)

N, avglen and df are summed over the knowledge bases searched; tf is the number of positions of
the term in the chunk's `fts` tsvector and len the chunk's number of distinct terms
(`length(fts)`, see `bm25_stats`). The query's terms are its distinct lexemes under the same
'english' configuration (CJK as bigrams).

Candidates come from the rarest query terms through the GIN index: terms are taken rarest first
while the chunks containing them (across all knowledge bases: the index does not tell them
apart) stay within `KEYWORD_CANDIDATES`; each candidate is then scored with every query term.
A chunk containing none of the rare terms would need the common terms alone to outscore one
that does, which their low idf rarely allows. When even the rarest term is in more chunks than
that, the candidates are the chunks containing all of the rarest few terms, as many as it
takes to expect no more than `KEYWORD_CANDIDATES` of them. `exact=True` scores every chunk
containing any query term: the yardstick (`python -m rag bench --only search` compares them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from rag.query import keywords
from rag.query.filters import SqlFilter
from rag.store.records import Hit

# Measured at 100,000 bench chunks, top-8 of 60 questions against the exact ranking (load ~5 on 2
# cores): 500 candidates agreed on 0.90 of the hits, 1000 on 0.95, 2000 on 0.98, at p50 31, 22 and
# 51 ms; the exact ranking took 2.7 s. Most of the time is reading the candidates' heap pages.
KEYWORD_CANDIDATES = 1000
"""At most about this many chunks are scored per keyword search (see the module docstring)."""


@dataclass(frozen=True)
class Bm25:
    """BM25's parameters: `k1` (how fast repeats of a term stop counting) and `b` (how much a
    long chunk is discounted), with Lucene's and Elasticsearch's defaults."""

    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        if not (math.isfinite(self.k1) and self.k1 >= 0):
            raise ValueError(f"BM25 k1 must be a number >= 0, got {self.k1!r}")
        if not (math.isfinite(self.b) and 0 <= self.b <= 1):
            raise ValueError(f"BM25 b must be between 0 and 1, got {self.b!r}")


DEFAULT_BM25 = Bm25()

# The query's terms with their document frequency in the searched knowledge bases and in all
# of them, and the searched knowledge bases' chunk count and total length: what bm25_terms and
# bm25_knowledge hold plus what is still pending (see bm25_stats).
_TERMS_SQL = """
WITH q AS (SELECT DISTINCT lexeme FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS lexeme),
df AS (
    SELECT t.term, t.knowledge, t.chunks FROM bm25_terms t WHERE t.term IN (SELECT lexeme FROM q)
    UNION ALL
    SELECT u.term, u.knowledge, u.n
    FROM (SELECT p.knowledge, unnest(p.terms) AS term, unnest(p.counts) AS n FROM bm25_pending p) u
    WHERE u.term IN (SELECT lexeme FROM q)
    UNION ALL
    -- The chunks listed but not counted yet: the query's terms found in their rows (setweight marks them, ts_filter
    -- keeps only those, as in the scoring below).
    SELECT x.lexeme, v.metadata->>'knowledge', 1
    FROM bm25_pending p CROSS JOIN LATERAL unnest(p.chunk_ids) AS c(id)
    JOIN vector_store v ON v.id = c.id
    CROSS JOIN LATERAL unnest(ts_filter(setweight(v.fts, 'A', (SELECT array_agg(lexeme) FROM q)), '{a}')) x
    WHERE p.chunk_ids IS NOT NULL AND v.metadata->>'knowledge' IS NOT NULL
), kb AS (
    SELECT knowledge, chunks, total_length FROM bm25_knowledge
    UNION ALL
    SELECT knowledge, chunks, total_length FROM bm25_pending
)
SELECT q.lexeme,
       coalesce(sum(df.chunks) FILTER (WHERE df.knowledge = ANY(%s)), 0)::float8,
       coalesce(sum(df.chunks), 0)::float8,
       (SELECT coalesce(sum(chunks), 0)::float8 FROM kb WHERE knowledge = ANY(%s)),
       (SELECT coalesce(sum(total_length), 0)::float8 FROM kb WHERE knowledge = ANY(%s)),
       (SELECT coalesce(sum(chunks), 0)::float8 FROM kb)
FROM q LEFT JOIN df ON df.term = q.lexeme
GROUP BY q.lexeme ORDER BY 3, 1
"""

# Each candidate's tf of every query term: setweight marks the query's lexemes 'A' (to_tsvector
# leaves all at 'D'), ts_filter keeps only those, so only a few positions lists are unnested. The score is rounded
# to 9 decimals: summed in the order the plan brings a chunk's terms, two chunks of equal score (a passage in two
# files) differed in the last bit, and which came first changed from one search to the next (32 of 40 questions'
# top 5 on the peers bench's 200 PDFs, asked twice); equal, they are in file order.
_SCORE_SQL = """
WITH scored AS (
    SELECT c.id, round(sum(w.idf * x.tf * %s / (x.tf + %s * (%s + %s * c.length / %s)))::numeric, 9)::float8 AS score
    FROM (SELECT id, fts, length(fts) AS length FROM vector_store WHERE {where}) c
    CROSS JOIN LATERAL (SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
                        FROM unnest(ts_filter(setweight(c.fts, 'A', %s), '{{a}}')) u) x
    JOIN unnest(%s::text[], %s::float8[]) AS w(term, idf) ON w.term = x.lexeme
    GROUP BY c.id
), top AS (
    SELECT score FROM scored ORDER BY score DESC LIMIT %s
)
SELECT v.id, v.content, v.metadata, s.score
FROM scored s JOIN vector_store v ON v.id = s.id
WHERE s.score >= (SELECT min(score) FROM top)
ORDER BY s.score DESC, v.metadata->>'original_filename', v.metadata->'chunk_index', v.id
LIMIT %s
"""


def tsquery_literal(terms: Sequence[str], operator: str) -> str:
    """A tsquery of the lexemes as they are (quoted, so no word is parsed as an operator)."""
    quoted = ("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)
    return f" {operator} ".join(quoted)


def candidate_query(terms: Sequence[tuple[str, float]], chunks: float, limit: int) -> str:
    """The tsquery that picks the chunks to score, from (term, chunks containing it) rarest first;
    `chunks` is how many chunks there are in all."""
    chosen: list[str] = []
    total = 0.0
    for term, df in terms:
        if total + df > limit:
            break
        chosen.append(term)
        total += df
    if chosen:
        return tsquery_literal(chosen, "|")
    # Even the rarest term is common: the chunks holding all of the rarest terms, adding terms
    # until they are expected within the limit (estimated as if terms occurred independently).
    estimate = terms[0][1]
    chosen = [terms[0][0]]
    for term, df in terms[1:]:
        if estimate <= limit:
            break
        chosen.append(term)
        estimate *= df / max(chunks, 1.0)
    return tsquery_literal(chosen, "&")


def keyword_search(
    conn: psycopg.Connection,
    query: str,
    knowledge_bases: Sequence[str],
    top_k: int,
    sql_filter: SqlFilter | None,
    bm25: Bm25 = DEFAULT_BM25,
    exact: bool = False,
) -> list[Hit]:
    """The `top_k` chunks by BM25 score (`Hit.score`, also `keyword_score`); ties in file order."""
    kbs = list(knowledge_bases)
    rows = conn.execute(_TERMS_SQL, (keywords.query_text(query), kbs, kbs, kbs), prepare=False).fetchall()
    present = [(term, df, global_df) for term, df, global_df, *_ in rows if df > 0]
    if not present:
        return []  # stop words only, or no chunk holds any of the words
    n, total_length = rows[0][3], rows[0][4]
    avglen = max(total_length / n, 1e-9)
    terms = [t for t, _, _ in present]
    idfs = [math.log(1 + (n - df + 0.5) / (df + 0.5)) for _, df, _ in present]
    if exact:
        tsquery = tsquery_literal(terms, "|")
    else:
        tsquery = candidate_query([(t, g) for t, _, g in present], rows[0][5], KEYWORD_CANDIDATES)
    where = [sql.SQL("fts @@ %s::tsquery"), sql.SQL("metadata->>'knowledge' = ANY(%s)")]
    where_params: list[Any] = [tsquery, kbs]
    if sql_filter is not None:
        where.append(sql.SQL(sql_filter.sql))
        where_params.extend(sql_filter.params)
    statement = sql.SQL(_SCORE_SQL).format(where=sql.SQL(" AND ").join(where))
    params = [bm25.k1 + 1, bm25.k1, 1 - bm25.b, bm25.b, avglen, *where_params, terms, terms, idfs, top_k, top_k]
    # Not prepared: a generic plan would not see how many chunks the query's terms match.
    found = conn.execute(statement, params, prepare=False).fetchall()
    return [Hit(id=r[0], content=r[1], metadata=r[2], score=r[3], keyword_score=r[3]) for r in found]
