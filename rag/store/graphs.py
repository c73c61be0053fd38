"""One HNSW graph per large knowledge base, built in bulk once an exact search of it would be slow (`graph_rows`).

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

A graph misses what an exact scan finds, and for questions more than for anything else: on the peers bench's
knowledge base (11,630 WordLlama chunks; its corpus cycles passages through 200 PDFs, so most have near copies)
the graph (m 16, ef_construction 128) found 0.84 of the 8 nearest chunks of 80 questions and missed the
nearest of 15 at ef_search 100, still 0.87 / 11 at 800, and built denser (m 48, ef_construction 200) 0.90 / 9
at 400 (the index forced: the planner scans a small table exactly at high ef_search, which had made earlier
measures look perfect). So a base is searched exactly as long as that costs a chat turn little (`GRAPH_CELLS`),
and a graph, once built, is checked against an exact scan (`_check`) for questions its base's embedder embedded
(`PROBE_QUESTIONS`): searched with the smallest candidate list that finds `GRAPH_RECALL` of their neighbours, or
not at all (`vector_graphs` records each check). The peers bench's graph fails it (0.82 at ef_search 800) and
that base is searched exactly; e5's graph of 3,000 of its passages passes at 100.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql

from rag.store.schema import HNSW_OPTIONS, SCHEMA_LOCK, dimension_sql, graph_megabytes

log = logging.getLogger(__name__)


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


GRAPH_CELLS = 8_000_000
"""Chunks times dimensions from which a knowledge base gets a graph of its own (`graph_rows`): below it an exact
search reads all its rows, which costs ~2.8 ms per million (a base's rows read through its documents, p50 of 30
queries: 384-d 10,000 / 20,000 / 40,000 rows 11 / 21 / 37 ms, 768-d 26 / 42 / 74 ms). So a base stays within
~25 ms of a chat turn exact: 31,250 chunks at 256-d, 20,834 at 384-d (e5), 10,417 at 768-d. It was 5,000 chunks
at any dimension, where graphs that missed a question's nearest chunk took over (see above)."""


def graph_rows(dimension: int) -> int:
    """Chunks of `dimension` from which a knowledge base gets a graph of its own (`GRAPH_CELLS`)."""
    return max(1, -(-GRAPH_CELLS // max(1, dimension)))


MAX_GRAPH_MEGABYTES = 1024
"""maintenance_work_mem for a build, at most: the whole graph of ~400k 384-d chunks; a bigger one is built
partly on disk (slower) rather than take more of a shared server's memory."""

GRAPH_RECALL = 0.99
"""The share of an exact scan's `PROBE_K` nearest rows a graph must find for its probes (their mean) to be
searched with a candidate list: e5's graph of 3,000 passages found all of them for the questions at ef_search
100-200; the wordllama graph of the peers bench never more than 0.95 for its own questions."""
PROBE_QUESTIONS = (
    "What is the main idea of the text?",
    "Who wrote the report?",
    "When did the project start?",
    "How much does it cost?",
    "Why did the company change its policy?",
    "Where is the head office?",
    "What risks are mentioned?",
    "How many people took part?",
    "Which method is recommended and why?",
    "What happened after the meeting?",
    "How long does the process take?",
    "What are the requirements for an application?",
    "Who is responsible for safety checks?",
    "What was the result of the test?",
    "How does the system handle errors?",
    "What did the author learn from the experience?",
    "这篇文章的主要内容是什么？",
    "报告是谁写的？",
    "项目是什么时候开始的？",
    "费用是多少？",
    "公司为什么改变了政策？",
    "总部在哪里？",
    "文中提到了哪些风险？",
    "有多少人参加了？",
    "推荐哪种方法，为什么？",
    "会议之后发生了什么？",
    "这个过程需要多长时间？",
    "申请需要满足哪些条件？",
    "谁负责安全检查？",
    "测试的结果是什么？",
    "系统如何处理错误？",
    "作者从这段经历中学到了什么？",
)
"""Questions a new graph is checked with, embedded by its knowledge base's embedder (`Store.keep_probes`): about
nothing in particular, they test what matters, whether the graph leads a question to its nearest rows. The peers
bench's wordllama base: its own 80 questions found 0.71 / 0.77 of their 8 nearest at ef_search 100 / 200, eight of
these English ones 0.67 / 0.75, probes between its rows 0.95 / 0.99 (so they passed it). 3,000 e5 passages of it:
its questions and these 1.0 at 100, the probes between rows 0.81-0.87 (so they would have failed it)."""
PROBES = 48
"""Probe vectors a check searches where the base's embedder has left no questions (a graph built after an
import, or on a Store opened without an ingest): each halfway between two random rows of the base (unit
length). A row's own vector finds itself even in a graph that misses questions; a probe between rows lies off
them, as a question does, but tells questions' fate only roughly (see `PROBE_QUESTIONS`)."""
PROBE_K = 8
"""Nearest rows compared per probe: the chat's top_k."""
EF_SEARCH_STEPS = (200, 400, 800)
"""Candidate lists a check tries after the search's own (`ef_search_for`), each ~1.5-2x slower a search (peers
bench base: 0.7 / 0.9 / 1.4 / 2.8 ms at 100 / 200 / 400 / 800)."""

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
    """Whether its graph is ready and searched (it is large, and its check, if any, did not fail)."""
    large: bool
    """Whether it has outgrown exact search (`graph_rows`): it has, or is to have, a graph."""
    ef_search: int = 0
    """The candidate list its graph's check chose (0: the search's own, `ef_search_for`)."""
    exact: bool = False
    """Whether its graph failed its check: it is searched exactly (`searched_exactly`)."""


@dataclass(frozen=True)
class Check:
    """How a base's graph did against an exact scan (a row of `vector_graphs`)."""

    index: str
    rows: int
    options: str
    ef_search: int
    recall: float
    exact: bool


def checks(conn: psycopg.Connection, indexes: Sequence[str]) -> dict[str, Check]:
    """The last check of each of the graphs `indexes` that has one."""
    if not indexes:
        return {}
    rows = conn.execute(
        "SELECT index_name, rows, options, ef_search, recall, exact FROM vector_graphs WHERE index_name = ANY(%s)",
        (list(indexes),),
    ).fetchall()
    return {r[0]: Check(r[0], int(r[1]), r[2], int(r[3]), float(r[4]), bool(r[5])) for r in rows}


def searched_exactly(check: Check | None, rows: int) -> bool:
    """Whether a base of `rows` chunks stays searched exactly after `check`: until it has doubled, when its graph
    is tried again (what it holds has changed)."""
    return check is not None and check.exact and rows < 2 * check.rows


def graph_name(dimension: int, key: int) -> str:
    return f"vector_store_hnsw_{dimension}_{_hex(key)}"


def _hex(key: int) -> str:
    """A base's hash as its graphs' names end (hashtext is a signed 32-bit integer)."""
    return f"{key & 0xFFFFFFFF:08x}"


def large_bases(
    conn: psycopg.Connection, names: Sequence[str] | None = None, dimension: int | None = None
) -> list[tuple[str, int, int, int]]:
    """(name, dimension, hash, chunks) of each knowledge base of `graph_rows` chunks or more, of `names` (None:
    all) and of `dimension` (None: any), but those searched exactly after their graph's check failed."""
    rows = conn.execute(
        "SELECT k.name, k.dimension, hashtext(k.name), sum(d.chunk_count) FROM knowledge_bases k "
        "JOIN documents d ON d.knowledge = k.name "
        "WHERE (%(names)s::text[] IS NULL OR k.name = ANY(%(names)s)) "
        "AND (%(dimension)s::int IS NULL OR k.dimension = %(dimension)s) "
        "GROUP BY k.name ORDER BY k.name",
        {"names": None if names is None else list(names), "dimension": dimension},
    ).fetchall()
    found = [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows if int(r[3]) >= graph_rows(int(r[1]))]
    checked = checks(conn, [graph_name(d, key) for _, d, key, _ in found])
    return [b for b in found if not searched_exactly(checked.get(graph_name(b[1], b[2])), b[3])]


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
    names_of = [graph_name(dimension, int(r[3])) for r in rows if r[1] == dimension]
    ready = _valid(conn, names_of)
    checked = checks(conn, names_of)
    found = []
    for r in rows:
        if r[1] != dimension:
            continue
        index, chunks = graph_name(dimension, int(r[3])), int(r[2])
        check = checked.get(index)
        large = chunks >= graph_rows(dimension)
        exact = large and searched_exactly(check, chunks)
        # A graph of a base below graph_rows (built when the threshold was lower) is not searched: exact is
        # cheap there and finds what the graph misses. One built before the checks is searched as before.
        graphed = large and index in ready and not exact
        ef = check.ef_search if check is not None and graphed else 0
        found.append(Base(r[0], chunks, int(r[3]), graphed, large, ef, exact))
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
    """A graph for each knowledge base of `names` (None: all) that has `graph_rows` chunks and none ready; its
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
        pattern = f"^vector_store_hnsw_[0-9]+_{_hex(int(key[0]))}$"
        for (index,) in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'vector_store' AND indexname ~ %s", (pattern,)
        ).fetchall():
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(index)))
        conn.execute("DELETE FROM vector_graphs WHERE index_name ~ %s", (pattern,))


def _build(
    conn: psycopg.Connection,
    name: str,
    dimension: int,
    key: int,
    rows: int,
    on_build: Callable[[str, int], None] | None,
) -> bool:
    """The base's graph, built unless it has a valid one, and checked (`_check`); whether one was built and kept."""
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
        return _check(conn, name, dimension, key, rows)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s, %s)", (BUILD_LOCK, key))


def _check(conn: psycopg.Connection, name: str, dimension: int, key: int, rows: int) -> bool:
    """Check the base's new graph against an exact scan (`_recall`) for its embedder's vectors of
    `PROBE_QUESTIONS` (else probes between its rows), with the search's own candidate list, then
    larger ones (`EF_SEARCH_STEPS`): the first that finds `GRAPH_RECALL` is recorded for its searches; where none
    does, the graph is dropped and the base searched exactly (until it doubles: `searched_exactly`). Whether the
    graph is kept."""
    index = graph_name(dimension, key)
    probes = _question_probes(conn, name, dimension) or _probes(conn, dimension, key)
    own = ef_search_for(PROBE_K, 1.0, False, rows)
    ef_search, recall = own, 1.0
    for ef_search in (own, *(step for step in EF_SEARCH_STEPS if step > own)):
        recall = _recall(conn, name, dimension, key, ef_search, probes)
        if recall >= GRAPH_RECALL:
            break
    exact = recall < GRAPH_RECALL
    if exact:
        log.warning(
            "the vector index of a knowledge base of %d chunks found %.3f of the nearest chunks at ef_search %d "
            "(%s): the knowledge base is searched exactly",
            rows,
            recall,
            ef_search,
            index,
        )
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(index)))
    else:
        log.info("the vector index %s found %.3f of the nearest chunks at ef_search %d", index, recall, ef_search)
    conn.execute(
        "INSERT INTO vector_graphs (index_name, rows, options, ef_search, recall, exact) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (index_name) DO UPDATE SET rows = EXCLUDED.rows, "
        "options = EXCLUDED.options, ef_search = EXCLUDED.ef_search, recall = EXCLUDED.recall, "
        "exact = EXCLUDED.exact, checked_at = now()",
        (index, rows, HNSW_OPTIONS, ef_search, recall, exact),
    )
    return not exact


def probes_version() -> str:
    """What the kept probe vectors were embedded from (`PROBE_QUESTIONS`): a new list is embedded again."""
    return hashlib.sha256("\n".join(PROBE_QUESTIONS).encode("utf-8")).hexdigest()[:16]


def has_probes(conn: psycopg.Connection, embedder: str) -> bool:
    """Whether `embedder`'s vectors of `PROBE_QUESTIONS` are kept (`keep_probes`)."""
    return (
        conn.execute(
            "SELECT 1 FROM graph_probes WHERE embedder = %s AND version = %s LIMIT 1", (embedder, probes_version())
        ).fetchone()
        is not None
    )


def keep_probes(conn: psycopg.Connection, embedder: str, vectors: Sequence[Sequence[float]]) -> None:
    """`embedder`'s vectors of `PROBE_QUESTIONS` (in their order), kept for the checks of its bases' graphs."""
    version = probes_version()
    # Upserted, not deleted first: two ingests ending at once with one embedder write the same rows.
    with conn.transaction():
        for ordinal, vector in enumerate(vectors):
            conn.execute(
                "INSERT INTO graph_probes (embedder, version, ordinal, embedding) VALUES (%s, %s, %s, %s::vector) "
                "ON CONFLICT (embedder, ordinal) DO UPDATE "
                "SET version = EXCLUDED.version, embedding = EXCLUDED.embedding",
                (embedder, version, ordinal, "[" + ",".join(repr(float(x)) for x in vector) + "]"),
            )
        conn.execute("DELETE FROM graph_probes WHERE embedder = %s AND ordinal >= %s", (embedder, len(vectors)))


def _question_probes(conn: psycopg.Connection, name: str, dimension: int) -> list[str]:
    """The kept vectors of `PROBE_QUESTIONS` by the embedder of knowledge base `name`, as pgvector's text."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT p.embedding::text FROM graph_probes p JOIN knowledge_bases k ON k.embedder = p.embedder "
            "WHERE k.name = %s AND p.version = %s AND vector_dims(p.embedding) = %s ORDER BY p.ordinal",
            (name, probes_version(), dimension),
        )
    ]


def _probes(conn: psycopg.Connection, dimension: int, key: int) -> list[str]:
    """`PROBES` vectors halfway between random pairs of the base's rows (unit length; the same ones for the same
    rows: a set seed), as pgvector's text."""
    conn.execute("SELECT setseed(0.25)")
    return [
        r[0]
        for r in conn.execute(
            sql.SQL(
                "WITH s AS (SELECT l2_normalize(embedding::vector({dim})) AS e, row_number() OVER () AS i "
                "FROM (SELECT embedding FROM vector_store WHERE {base} ORDER BY random() LIMIT %s) r) "
                "SELECT (a.e + b.e)::text FROM s a JOIN s b ON b.i = a.i + %s WHERE vector_norm(a.e + b.e) > 0.01"
            ).format(dim=dimension_sql(dimension), base=base_predicate(dimension, key)),
            (2 * PROBES, PROBES),
        )
    ]


def _recall(
    conn: psycopg.Connection, name: str, dimension: int, key: int, ef_search: int, probes: Sequence[str]
) -> float:
    """The mean share of an exact scan's `PROBE_K` nearest rows that the base's graph finds for `probes`,
    searched as a chat searches it (`ef_search`, iterative scan); 1.0 without probes."""
    dim = dimension_sql(dimension)
    # Exact: the base's rows read through its documents (the graph's predicate is not in the WHERE, so the
    # planner cannot use the graph). By the graph: the search's own form (vector_sql._part), with a plain scan
    # ruled out (the planner prefers one for a small base at a large ef_search, which is not what is checked).
    exact_sql = sql.SQL(
        "SELECT (embedding::vector({dim})) <=> %s::vector({dim}) FROM vector_store "
        "WHERE document_id = ANY(ARRAY(SELECT id FROM documents WHERE knowledge = %s)) "
        "AND vector_dims(embedding) = {dim} AND metadata->>'knowledge' = %s ORDER BY 1 LIMIT %s"
    ).format(dim=dim)
    by_graph = sql.SQL(
        "SELECT (embedding::vector({dim})) <=> %s::vector({dim}) FROM vector_store "
        "WHERE {base} AND metadata->>'knowledge' = %s ORDER BY (embedding::vector({dim})) <=> %s::vector({dim}) "
        "LIMIT %s"
    ).format(dim=dim, base=base_predicate(dimension, key))
    shares: list[float] = []
    for probe in probes:
        exact = [float(r[0]) for r in conn.execute(exact_sql, (probe, name, name, PROBE_K))]
        if not exact:
            continue
        with conn.transaction():
            for setting, value in (
                ("hnsw.iterative_scan", "relaxed_order"),
                ("hnsw.ef_search", str(ef_search)),
                ("enable_seqscan", "off"),
                ("enable_bitmapscan", "off"),
                ("enable_sort", "off"),
            ):
                conn.execute("SELECT set_config(%s, %s, true)", (setting, value))
            found = [float(r[0]) for r in conn.execute(by_graph, (probe, name, probe, PROBE_K))]
        # By distance, not by row: rows of one distance (copies of a passage) are as near as each other.
        shares.append(sum(d <= exact[-1] + 1e-6 for d in found) / len(exact))
    return sum(shares) / len(shares) if shares else 1.0


def _drop_legacy(conn: psycopg.Connection, dimension: int) -> None:
    """The dimension's old graph, once every base of it with `graph_rows` chunks has its own."""
    if not legacy_exists(conn, dimension):
        return
    large = [name for name, *_ in large_bases(conn, dimension=dimension)]
    if all(b.graphed for b in bases(conn, large, dimension)[0]):
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(legacy_name(dimension))))
