"""BM25 keyword search on the real PostgreSQL: statistics kept exact by every write, scores equal to
a reference computed in Python from the same tokens, and the migration of an existing database."""

from __future__ import annotations

import math
import threading
import uuid

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from rag.chunking import Chunk
from rag.evaluation.sets import eval_set
from rag.query.filters import to_sql
from rag.query.keywords import search_text
from rag.settings import Settings
from rag.store import Bm25, Store
from rag.store.bm25_stats import LISTED_CHUNK_ENTRIES, TERMS_FILLFACTOR
from rag.store.keyword_sql import candidate_query
from tests.store.killed import DIE_AT_CHUNK_50, killed_write

ENGLISH = [
    "The lighthouse keeper logged every storm in the harbour ledger.",
    "Storm surges flooded the harbour twice; the keeper moved the ledger upstairs.",
    "Dividends were paid to shareholders after a record quarter.",
    "The quarter's revenue grew, and the board raised the dividend again, dividend after dividend.",
    "A short note.",
]
CHINESE = [
    "节假日加班工资按照三倍计算，加班需要提前申请。",
    "年假天数根据工龄确定，工龄越长年假越多。",
    "检索质量取决于分词：中文按字的二元组建立索引。",
]


def chunks_of(texts: list[str]) -> list[Chunk]:
    return [Chunk(i, t, 5, 0, len(t), (1,)) for i, t in enumerate(texts)]


def write(store: Store, kb: str, filename: str, texts: list[str], version: str = "v1"):
    return store.write_document(
        knowledge=kb,
        embedder="local:test",
        dimension=4,
        chunk_settings={},
        filename=filename,
        path=None,
        data=version.encode(),
        sha256=version,
        page_count=1,
        chunks=chunks_of(texts),
        embeddings=np.ones((len(texts), 4), dtype=np.float32),
    )


def stored(uri: str, merged: bool = False) -> dict[str, tuple[int, int, dict[str, int]]]:
    """The statistics as the store keeps them, per knowledge base: its tables plus what is still pending (what a
    search reads); `merged`: the pending counts merged first (bm25_merge), then the tables alone."""
    with psycopg.connect(uri) as conn:
        if merged:
            conn.execute("SELECT bm25_merge()")
            conn.commit()
            assert conn.execute("SELECT count(*) FROM bm25_pending").fetchone()[0] == 0
        kbs = conn.execute(
            "SELECT knowledge, sum(chunks), sum(total_length) FROM (SELECT knowledge, chunks, total_length "
            "FROM bm25_knowledge UNION ALL SELECT knowledge, chunks, total_length FROM bm25_pending) k "
            "GROUP BY knowledge HAVING sum(chunks) <> 0"
        ).fetchall()
        terms = conn.execute(
            "SELECT knowledge, term, sum(chunks) FROM (SELECT knowledge, term, chunks FROM bm25_terms UNION ALL "
            "SELECT p.knowledge, u.term, u.n FROM bm25_pending p, unnest(p.terms, p.counts) u(term, n) UNION ALL "
            # the listed chunks, whose terms no merge has counted yet: read from their rows
            "SELECT v.metadata->>'knowledge', unnest(tsvector_to_array(v.fts)), 1 "
            "FROM bm25_pending p, unnest(p.chunk_ids) c(id) JOIN vector_store v ON v.id = c.id "
            "WHERE v.metadata->>'knowledge' IS NOT NULL) t "
            "GROUP BY knowledge, term HAVING sum(chunks) <> 0"
        ).fetchall()
        # A chunk is listed once at most, and only while it exists (a deleted one leaves its list).
        listed, distinct, alive = conn.execute(
            "SELECT count(*), count(DISTINCT c.id), count(v.id) FROM bm25_pending p, unnest(p.chunk_ids) c(id) "
            "LEFT JOIN vector_store v ON v.id = c.id"
        ).fetchone()
        assert listed == distinct == alive
        if merged:  # nothing left at zero in the tables either
            assert conn.execute("SELECT count(*) FROM bm25_terms WHERE chunks <= 0").fetchone()[0] == 0
            assert conn.execute("SELECT count(*) FROM bm25_knowledge WHERE chunks <= 0").fetchone()[0] == 0
    out = {k: (int(n), int(total), {}) for k, n, total in kbs}
    for k, term, df in terms:
        out.setdefault(k, (0, 0, {}))[2][term] = int(df)
    return out


def recomputed(uri: str) -> dict[str, tuple[int, int, dict[str, int]]]:
    """The same statistics counted afresh from the chunk rows, in Python."""
    out: dict[str, tuple[int, int, dict[str, int]]] = {}
    with psycopg.connect(uri) as conn:
        rows = conn.execute(
            "SELECT metadata->>'knowledge', tsvector_to_array(fts) FROM vector_store "
            "WHERE metadata->>'knowledge' IS NOT NULL"
        ).fetchall()
    for kb, lexemes in rows:
        n, total, df = out.get(kb, (0, 0, {}))
        for lexeme in lexemes:
            df[lexeme] = df.get(lexeme, 0) + 1
        out[kb] = (n + 1, total + len(lexemes), df)
    return out


def assert_exact(uri: str) -> dict[str, tuple[int, int, dict[str, int]]]:
    expected = recomputed(uri)
    assert stored(uri) == expected
    assert stored(uri, merged=True) == expected
    return expected


def test_statistics_stay_exact_through_ingest_replace_delete_and_kb_delete(store: Store, pg_uri: str) -> None:
    write(store, "docs", "en.txt", ENGLISH)
    write(store, "docs", "zh.txt", CHINESE)
    write(store, "other", "en.txt", ENGLISH[:2])
    stats = assert_exact(pg_uri)
    assert stats["docs"][0] == len(ENGLISH) + len(CHINESE) and stats["other"][0] == 2
    assert stats["docs"][2]["dividend"] == 2 and stats["docs"][2]["加班"] == 1  # stems; CJK bigrams
    assert write(store, "docs", "en.txt", ENGLISH[2:4], version="v2").status == "replaced"
    stats = assert_exact(pg_uri)
    assert stats["docs"][0] == 2 + len(CHINESE) and "lighthous" not in stats["docs"][2]
    assert store.delete_document("docs", "zh.txt")
    stats = assert_exact(pg_uri)
    assert "加班" not in stats["docs"][2]
    assert store.delete_knowledge_base("docs")
    assert set(assert_exact(pg_uri)) == {"other"}
    assert store.delete_knowledge_base("other")
    assert stored(pg_uri) == {}


def test_chunks_deleted_or_changed_before_any_merge_leave_the_statistics_exact(store: Store, pg_uri: str) -> None:
    """A write lists its chunks for their terms to be counted later (`bm25_track_insert`): replacing, deleting and
    updating them while still listed takes back their number and length and takes them off the list, never
    terms nobody counted. Checked without a merge after each step, then merged."""
    store.merge_bm25()

    def unmerged() -> dict[str, tuple[int, int, dict[str, int]]]:
        expected = recomputed(pg_uri)
        assert stored(pg_uri) == expected
        return expected

    write(store, "docs", "en.txt", ENGLISH)
    write(store, "docs", "zh.txt", CHINESE)
    write(store, "other", "en.txt", ENGLISH[:2])
    assert unmerged()["docs"][2]["harbour"] == 2
    write(store, "docs", "en.txt", ENGLISH[2:4], version="v2")  # its listed chunks deleted, the new ones listed
    assert "harbour" not in unmerged()["docs"][2]
    with psycopg.connect(pg_uri) as conn:
        conn.execute(  # Spring AI rewrites a listed chunk, and moves one to another knowledge base
            "UPDATE vector_store SET content = 'harbour pilot' WHERE metadata->>'knowledge' = 'docs' "
            "AND metadata->>'original_filename' = 'en.txt' AND metadata->>'chunk_index' = '0'"
        )
        conn.execute(
            "UPDATE vector_store SET metadata = jsonb_set(metadata, '{knowledge}', '\"moved\"') "
            "WHERE metadata->>'original_filename' = 'zh.txt' AND metadata->>'chunk_index' = '1'"
        )
    stats = unmerged()
    assert stats["docs"][2]["pilot"] == 1 and stats["moved"][0] == 1
    assert store.delete_document("docs", "zh.txt")
    assert store.delete_knowledge_base("other")
    assert set(unmerged()) == {"docs"}  # the moved chunk was zh.txt's: gone with it
    assert set(assert_exact(pg_uri)) == {"docs"}


@pytest.mark.parametrize("first", ["the delete", "the merge"])
def test_a_delete_and_a_merge_at_once_count_the_deleted_chunks_once_or_not_at_all(
    store: Store, pg_uri: str, first: str
) -> None:
    """A merge reads the listed chunks' terms from their rows while another transaction deletes some of them: the
    one that locks the pending rows first goes on, the other waits for its commit; the statistics stay exact."""
    store.merge_bm25()
    write(store, "docs", "a.txt", ENGLISH)
    write(store, "docs", "b.txt", CHINESE)
    holder = psycopg.connect(pg_uri)
    try:
        if first == "the delete":
            holder.execute("DELETE FROM documents WHERE original_filename = 'a.txt'")
        else:
            holder.execute("SELECT bm25_merge()")
        done: list[object] = []

        def other() -> None:
            if first == "the delete":
                done.append(store.merge_bm25())
            else:
                done.append(store.delete_document("docs", "a.txt"))

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(1.5)
        assert thread.is_alive() and not done  # it waits for the holder's pending rows
        holder.commit()
        thread.join(30)
        assert done and done[0]
    finally:
        holder.close()
    stats = assert_exact(pg_uri)
    assert stats["docs"][0] == len(CHINESE) and "harbour" not in stats["docs"][2]


def test_updates_and_truncate_by_other_tools_keep_statistics_exact(store: Store, pg_uri: str) -> None:
    write(store, "docs", "en.txt", ENGLISH)
    with psycopg.connect(pg_uri) as conn:
        # Spring AI's upsert rewrites content and metadata; a new embedding alone changes nothing.
        conn.execute(
            "UPDATE vector_store SET content = 'harbour harbour pilot', search_text = NULL "
            "WHERE metadata->>'chunk_index' = '0'"
        )
        conn.execute(
            "UPDATE vector_store SET metadata = jsonb_set(metadata, '{knowledge}', '\"moved\"') "
            "WHERE metadata->>'chunk_index' = '1'"
        )
        conn.execute("UPDATE vector_store SET embedding = '[0,0,0,1]'")
        conn.execute(
            "INSERT INTO vector_store (content, metadata, embedding) VALUES "
            "('Spring AI wrote this harbour row', '{\"knowledge\": \"docs\"}', '[1,0,0,0]'), "
            "('no knowledge key', '{}', '[1,0,0,0]'), "
            "('another base''s harbour row, in the same statement', '{\"knowledge\": \"other\"}', '[1,0,0,0]')"
        )
    stats = assert_exact(pg_uri)
    assert stats["moved"][0] == 1 and stats["docs"][2]["pilot"] == 1 and stats["docs"][2]["harbour"] == 2
    assert stats["other"][0] == 1 and stats["other"][2]["harbour"] == 1
    with psycopg.connect(pg_uri) as conn:
        conn.execute("TRUNCATE vector_store CASCADE")
    assert stored(pg_uri) == {}


@pytest.mark.parametrize("when", ["during the copy", "after the statistics were updated"])
def test_a_killed_ingest_leaves_the_statistics_exact(store: Store, pg_uri: str, when: str) -> None:
    """SIGKILL while a new version of a document is being written: the old one and its statistics stay."""
    write(store, "killed", "k.txt", ENGLISH)
    before = assert_exact(pg_uri)
    patch = (
        DIE_AT_CHUNK_50
        if when == "during the copy"
        else """
        real = s.copy_rows
        def dying(*args, **kwargs):
            real(*args, **kwargs)  # the triggers have run: the statistics include the new rows
            os.kill(os.getpid(), signal.SIGKILL)
        s.copy_rows = dying
        """
    )
    proc = killed_write(pg_uri, patch, text="killed storm number{0} 中文{0}", dimension=4, filename="k.txt", data=b"v2")
    assert proc.returncode == -9, proc.stderr.decode()
    assert assert_exact(pg_uri) == before
    assert [h.original_filename for h in store.keyword_search("storm", ["killed"], top_k=3)] == ["k.txt"] * 2


def test_concurrent_ingests_never_deadlock_and_stay_exact(
    store: Store, pg_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rag.store.store as store_module

    monkeypatch.setattr(store_module, "MERGE_TERMS", 50)  # merges in the background between the writes
    errors: list[BaseException] = []

    def ingest(worker: int) -> None:
        try:
            for i in range(6):
                # Two writers per knowledge base; the same words in different orders across files.
                texts = ENGLISH[i % 5 :] + ENGLISH[: i % 5] + CHINESE
                write(store, f"kb{worker % 2}", f"w{worker}-{i % 3}.txt", texts, version=f"{worker}-{i}")
                if i % 2:
                    store.delete_document(f"kb{worker % 2}", f"w{worker}-{(i + 1) % 3}.txt")
                if i == 2:  # one file both writers of a knowledge base replace: they take turns
                    write(store, f"kb{worker % 2}", "shared.txt", texts[::-1], version=f"shared-{worker}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ingest, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    if store._merging is not None:
        store._merging.join()
    assert set(assert_exact(pg_uri)) == {"kb0", "kb1"}
    shared = [d for d in store.list_documents() if d.original_filename == "shared.txt"]
    assert sorted(d.knowledge for d in shared) == ["kb0", "kb1"]  # one each, the last writer's


def reference_scores(uri: str, query: str, kbs: list[str], bm25: Bm25) -> dict[uuid.UUID, float]:
    """BM25 in Python over the chunks' own lexemes and positions (Lucene's idf, distinct-term length)."""
    with psycopg.connect(uri) as conn:
        rows = conn.execute(
            "SELECT id, (SELECT array_agg(u.lexeme) FROM unnest(fts) u), "
            "(SELECT array_agg(array_length(u.positions, 1)) FROM unnest(fts) u) "
            "FROM vector_store WHERE metadata->>'knowledge' = ANY(%s)",
            (kbs,),
        ).fetchall()
        terms = conn.execute("SELECT tsvector_to_array(to_tsvector('english', %s))", (search_text(query),)).fetchone()[
            0
        ]
    docs = {row_id: dict(zip(lexemes or [], tfs or [])) for row_id, lexemes, tfs in rows}
    n = len(docs)
    avglen = sum(len(d) for d in docs.values()) / n
    scores: dict[uuid.UUID, float] = {}
    for row_id, tf in docs.items():
        score = 0.0
        for term in terms:
            if term in tf:
                df = sum(term in d for d in docs.values())
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += (
                    idf * tf[term] * (bm25.k1 + 1) / (tf[term] + bm25.k1 * (1 - bm25.b + bm25.b * len(tf) / avglen))
                )
        if score > 0:
            scores[row_id] = score
    return scores


@pytest.mark.parametrize("bm25", [Bm25(), Bm25(k1=2.0, b=0.3)])
@pytest.mark.parametrize(
    "query, kbs",
    [
        ("storm harbour keeper", ["docs"]),
        ("dividend dividend for the shareholders' quarter", ["docs", "more"]),
        ("加班工资怎么计算", ["docs", "more"]),
    ],
)
def test_scores_match_a_reference_computed_in_python(
    store: Store, pg_uri: str, bm25: Bm25, query: str, kbs: list[str]
) -> None:
    write(store, "docs", "en.txt", ENGLISH)
    write(store, "docs", "zh.txt", CHINESE)
    write(store, "more", "m.txt", ENGLISH[1:4] + CHINESE[:1])
    write(store, "elsewhere", "e.txt", ["dividend storm 加班 " * 5])  # not searched: not counted
    expected = reference_scores(pg_uri, query, kbs, bm25)
    assert len(expected) >= 2
    for exact in (True, False):
        hits = store.keyword_search(query, kbs, top_k=20, bm25=bm25, exact=exact)
        assert {h.id: round(h.score, 9) for h in hits} == {k: round(v, 9) for k, v in expected.items()}
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(h.keyword_score == h.score for h in hits)
        # Rounded in the server: chunks of one score tie exactly (and come in file order) whatever order the
        # plan summed their terms in.
        assert all(h.score == round(h.score, 9) for h in hits)
    top = store.keyword_search(query, kbs, top_k=2, bm25=bm25)
    assert [h.id for h in top] == [h.id for h in hits[:2]]  # equal scores: file order
    assert [round(h.score, 9) for h in top] == sorted((round(v, 9) for v in expected.values()), reverse=True)[:2]


def test_the_filter_top_k_and_ties(store: Store) -> None:
    write(store, "docs", "b.txt", ["lighthouse on the rock"] * 3)
    write(store, "docs", "a.txt", ["lighthouse on the rock"] * 3 + ["a lighthouse lighthouse"])
    hits = store.keyword_search("lighthouse", ["docs"], top_k=4)
    assert [(h.original_filename, h.metadata["chunk_index"]) for h in hits] == [
        ("a.txt", 3),
        ("a.txt", 0),
        ("a.txt", 1),
        ("a.txt", 2),
    ]
    assert hits[0].score > hits[1].score == hits[2].score == hits[3].score > 0
    filtered = store.keyword_search("lighthouse", ["docs"], top_k=10, sql_filter=to_sql("original_filename == 'b.txt'"))
    assert [(h.original_filename, h.metadata["chunk_index"]) for h in filtered] == [("b.txt", i) for i in range(3)]
    assert store.keyword_search("the on", ["docs"]) == []  # stop words only
    assert store.keyword_search("zeppelin", ["docs"]) == []
    assert store.keyword_search("lighthouse", ["nothing-here"]) == []


def test_a_search_reads_the_pending_counts_as_it_reads_the_merged_ones(store: Store, pg_uri: str) -> None:
    """A write leaves its counts pending (one row per statement, bm25_stats) until a merge: the scores are the
    same either side of it, and a write deletes nothing from the tables before the merge."""
    store.merge_bm25()
    write(store, "docs", "a.txt", ["the lighthouse keeper", "a storm at sea", "lighthouse lighthouse lamp"])
    write(store, "docs", "b.txt", ["keeper of the lamp", "calm sea"])
    with psycopg.connect(pg_uri) as conn:
        # one row a document, listing its chunks (their terms are counted by the search, then by the merge)
        assert conn.execute("SELECT cardinality(chunk_ids), entries FROM bm25_pending ORDER BY id").fetchall() == [
            (3, 3 * LISTED_CHUNK_ENTRIES),
            (2, 2 * LISTED_CHUNK_ENTRIES),
        ]
    before = [(h.content, round(h.score, 9)) for h in store.keyword_search("lighthouse lamp sea", ["docs"], top_k=5)]
    assert store.merge_bm25() == 2
    with psycopg.connect(pg_uri) as conn:
        assert conn.execute("SELECT count(*) FROM bm25_pending").fetchone()[0] == 0
    after = [(h.content, round(h.score, 9)) for h in store.keyword_search("lighthouse lamp sea", ["docs"], top_k=5)]
    assert before == after and len(after) == 5
    assert store.merge_bm25() == 0  # nothing pending


def test_writes_merge_in_the_background_past_the_threshold(
    store: Store, pg_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rag.store.store as store_module

    monkeypatch.setattr(store_module, "MERGE_TERMS", 3 * LISTED_CHUNK_ENTRIES)
    write(store, "docs", "a.txt", ["the lighthouse keeper", "a storm at sea"])  # 2 chunks listed: no merge
    assert store._merging is None
    write(store, "docs", "b.txt", ["keeper of the lamp", "calm sea"])  # 4: a merge starts
    assert store._merging is not None
    store._merging.join()
    with psycopg.connect(pg_uri) as conn:
        assert conn.execute("SELECT count(*) FROM bm25_pending").fetchone()[0] == 0
    assert_exact(pg_uri)
    assert {h.content for h in store.keyword_search("lamp keeper", ["docs"], top_k=3)} == {
        "keeper of the lamp",
        "the lighthouse keeper",
    }


def test_a_background_merge_asked_for_by_a_stale_count_merges_nothing(
    store: Store, pg_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write counts the pending rows as its transaction sees them, those a merge is folding in too: the merge
    it asks for looks again once it starts, and does nothing while fewer than `MERGE_TERMS` are pending."""
    import rag.store.store as store_module

    monkeypatch.setattr(store_module, "MERGE_TERMS", 3 * LISTED_CHUNK_ENTRIES)
    write(store, "docs", "a.txt", ["the lighthouse keeper", "a storm at sea"])  # 2 chunks listed
    store._merge_soon(4 * LISTED_CHUNK_ENTRIES)  # as a write that still saw rows since merged would
    assert store._merging is not None
    store._merging.join()
    with psycopg.connect(pg_uri) as conn:
        assert conn.execute("SELECT count(*) FROM bm25_pending").fetchone()[0] == 1
    assert_exact(pg_uri)


def test_a_rare_word_outranks_one_most_chunks_contain(store: Store) -> None:
    texts = [f"zorblat report number {i} about topic{i}" for i in range(40)]
    texts[7] += " with quixotic findings"
    write(store, "common", "c.txt", texts)
    hits = store.keyword_search("zorblat quixotic", ["common"], top_k=10)
    assert hits[0].content == texts[7]
    # 'zorblat' is in every chunk: its idf, ln(1 + 0.5/40.5) = 0.012, leaves the others near zero.
    assert hits[0].score > 100 * hits[1].score > 0


def test_candidates_are_the_rarest_terms_within_the_limit() -> None:
    terms = [("rare", 10.0), ("uncommon", 300.0), ("usual", 900.0), ("everywhere", 5000.0)]
    assert candidate_query(terms, 10_000, 1000) == "'rare' | 'uncommon'"
    assert candidate_query(terms[:1], 10_000, 5) == "'rare'"  # the rarest alone is over: AND below
    common = [("a", 4000.0), ("b", 5000.0), ("c", 6000.0), ("d", 9000.0)]
    # 4000 -> 4000 * 0.5 = 2000 -> 2000 * 0.6 = 1200 -> 1200 * 0.9 = 1080: all four, still estimated over.
    assert candidate_query(common, 10_000, 1000) == "'a' & 'b' & 'c' & 'd'"
    assert candidate_query(common, 10_000, 2500) == "'a' & 'b'"
    assert candidate_query([("it's\\", 1.0)], 10, 5) == "'it''s\\\\'"


def test_the_bounded_search_finds_what_the_exact_one_finds(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import rag.store.keyword_sql as keyword_sql

    rng = np.random.default_rng(3)
    vocabulary = [f"w{i}" for i in range(60)]
    texts = [" ".join(rng.choice(vocabulary, size=12, p=np.arange(60, 0, -1) / 1830)) for _ in range(300)]
    write(store, "zipf", "z.txt", texts)
    queries = [" ".join(text.split()[:4]) for text in texts[:20]]
    exact = [[h.id for h in store.keyword_search(q, ["zipf"], top_k=5, exact=True)] for q in queries]
    monkeypatch.setattr(keyword_sql, "KEYWORD_CANDIDATES", 40)  # of 300 chunks
    bounded = [[h.id for h in store.keyword_search(q, ["zipf"], top_k=5)] for q in queries]
    agreement = sum(len(set(a) & set(e)) for a, e in zip(bounded, exact)) / (5 * len(queries))
    assert 0.75 <= agreement < 1.0  # measured 0.81: close, and really bounded
    monkeypatch.setattr(keyword_sql, "KEYWORD_CANDIDATES", 10_000)
    assert [[h.id for h in store.keyword_search(q, ["zipf"], top_k=5)] for q in queries] == exact


def test_rows_written_before_the_migration_still_search(store: Store, pg_uri: str) -> None:
    write(store, "old", "en.txt", ENGLISH)
    with psycopg.connect(pg_uri) as conn:
        # The database as it was before BM25: no statistics, no triggers; then Spring AI adds a row.
        for name in ("insert", "delete", "update", "truncate"):
            conn.execute(f"DROP TRIGGER bm25_track_{name} ON vector_store")
        conn.execute("DROP TABLE bm25_terms, bm25_knowledge")
        conn.execute(
            "INSERT INTO vector_store (content, metadata, embedding) VALUES (%s, %s, '[1,0,0,0]')",
            ("the harbour pilot's 加班 logbook", Jsonb({"knowledge": "old", "original_filename": "spring"})),
        )
    Store(pg_uri).close()  # the migration
    assert set(assert_exact(pg_uri)) == {"old"}
    hits = store.keyword_search("pilot logbook", ["old"], top_k=3)
    assert [h.original_filename for h in hits] == ["spring"]
    assert store.keyword_search("dividend", ["old"], top_k=3)[0].original_filename == "en.txt"
    write(store, "old", "zh.txt", CHINESE)  # and the triggers are back
    assert assert_exact(pg_uri)["old"][0] == len(ENGLISH) + 1 + len(CHINESE)


def test_k1_and_b_come_from_the_environment() -> None:
    settings = Settings.from_env({"RAG_BM25_K1": "0.9", "RAG_BM25_B": "0.4"})
    assert (settings.bm25_k1, settings.bm25_b) == (0.9, 0.4)
    assert (Settings.from_env({}).bm25_k1, Settings.from_env({}).bm25_b) == (1.2, 0.75)
    with pytest.raises(ValueError, match=r"^RAG_BM25_B='1.5' is not understood: use a number from 0 to 1$"):
        Settings.from_env({"RAG_BM25_B": "1.5"})
    with pytest.raises(ValueError, match="RAG_BM25_K1='fast'"):
        Settings.from_env({"RAG_BM25_K1": "fast"})
    with pytest.raises(ValueError, match="BM25 b must be between 0 and 1"):
        Bm25(b=-0.1)


def test_the_tsvector_stays_in_the_row_and_english_text_is_not_stored_twice(store: Store, pg_uri: str) -> None:
    # ~200 distinct words: a tsvector of a few kilobytes, as an 800-token chunk has.
    long_english = ENGLISH[0] + " " + " ".join(f"keeper{chr(97 + i % 26)}{chr(97 + i // 26)}x" for i in range(200))
    write(store, "mixed", "a.txt", [long_english, CHINESE[0]])
    with psycopg.connect(pg_uri) as conn:
        rows = conn.execute(
            "SELECT search_text, fts = to_tsvector('english', content), pg_column_size(fts), cjk_terms IS NULL, "
            "(SELECT array_agg(lexeme || cardinality(positions) ORDER BY lexeme) FROM unnest(fts)), "
            "(SELECT array_agg(lexeme || cardinality(positions) ORDER BY lexeme) "
            " FROM unnest(to_tsvector('english', %s))) "
            "FROM vector_store WHERE metadata->>'knowledge' = 'mixed' ORDER BY metadata->'chunk_index'",
            (search_text(CHINESE[0]),),
        ).fetchall()
        storage, bigrams_storage = conn.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'vector_store'::regclass "
            "AND attname IN ('fts', 'search_text') ORDER BY attname"
        ).fetchall()
        # PostgreSQL 17 tells whether a value was moved out of the row (to the TOAST table).
        moved = conn.execute(
            "SELECT CASE WHEN current_setting('server_version_num')::int >= 170000 "
            "THEN (SELECT count(pg_column_toast_chunk_id(fts)) FROM vector_store) END"
        ).fetchone()[0]
    (english_text, english_indexed_from_content, english_size, _, _, _), chinese = rows
    assert english_text is None and english_indexed_from_content
    # The Chinese chunk's bigrams came as a tsvector (rag.store.cjk_terms), moved into fts and not kept; the text
    # the server parsed is what is left (its punctuation): the same terms, as often, as the bigrams parsed.
    chinese_text, _, _, cjk_gone, chinese_terms, parsed_terms = chinese
    assert chinese_text == " ， 。" and cjk_gone
    assert chinese_terms == parsed_terms and "加班2" in chinese_terms
    assert storage == ("m",) and english_size > 2000 and moved in (0, None)
    assert bigrams_storage == ("e",)  # written once, never searched: not compressed at each write
    assert [h.metadata["chunk_index"] for h in store.keyword_search("节假日加班", ["mixed"], top_k=2)] == [1]
    assert store.keyword_search("harbour ledger", ["mixed"], top_k=2)[0].metadata["chunk_index"] == 0


def test_real_sized_chunks_keep_statistics_equal_to_a_recount_and_to_a_rebuild(store: Store, pg_uri: str) -> None:
    """Eval passages (hundreds of stems or CJK bigrams a chunk, as an ingest writes) through the triggers'
    set-based statement: the statistics equal a recount in Python, and the same searches rank the same
    chunks with the same scores as over statistics rebuilt from scratch by the migration's own count."""
    english = [p.text for p in eval_set("en_race").passages[:24]]
    chinese = [p.text for p in eval_set("zh_c3").passages[:24]]
    for i in range(3):
        write(store, "real", f"en{i}.txt", english[i * 8 : (i + 1) * 8])
        write(store, "real", f"zh{i}.txt", chinese[i * 8 : (i + 1) * 8])
    write(store, "other", "both.txt", english[:4] + chinese[:4])
    write(store, "real", "en1.txt", english[20:], version="v2")  # replaced: the delete branch too
    assert store.delete_document("real", "zh2.txt")
    stats = assert_exact(pg_uri)
    assert stats["real"][0] == 8 + 8 + 4 + 8 + 8 and len(stats["real"][2]) > 2000
    queries = [english[3][:60], english[21][100:160], chinese[5][:20], chinese[9][10:30], "school teacher 学生"]

    def ranked() -> list[list[tuple[str, int, float]]]:
        return [
            [
                (h.original_filename, h.metadata["chunk_index"], round(h.score, 9))
                for h in store.keyword_search(q, ["real", "other"], top_k=8, exact=exact)
            ]
            for q in queries
            for exact in (True, False)
        ]

    before = ranked()
    assert all(before)
    with psycopg.connect(pg_uri) as conn:  # drop what the triggers kept; the migration counts it again
        for name in ("insert", "delete", "update", "truncate"):
            conn.execute(f"DROP TRIGGER bm25_track_{name} ON vector_store")
        conn.execute("DROP TABLE bm25_terms, bm25_knowledge")
    Store(pg_uri).close()
    assert assert_exact(pg_uri) == stats
    assert ranked() == before


def test_the_terms_table_leaves_room_for_updates_in_place(store: Store, pg_uri: str) -> None:
    option = [f"fillfactor={TERMS_FILLFACTOR}"]
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        assert conn.execute("SELECT reloptions FROM pg_class WHERE relname = 'bm25_terms'").fetchone()[0] == option
        conn.execute("ALTER TABLE bm25_terms RESET (fillfactor)")  # a table made before the fill factor
    Store(pg_uri).close()
    with psycopg.connect(pg_uri) as conn:
        assert conn.execute("SELECT reloptions FROM pg_class WHERE relname = 'bm25_terms'").fetchone()[0] == option


def test_an_ingests_end_merges_the_counts_while_the_keyword_index_merges_its_list(
    store: Store, pg_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`merge_bm25_later` (an ingest's end) folds in the pending counts and cleans the keyword index's pending list
    at once, in two server processes: the counts' merge starts while the list is being cleaned, and both are done
    when the thread `close` waits for ends. One after the other, the counts' merge would wait here for a clean that
    had not begun."""
    cleaning = threading.Event()
    during: list[bool] = []
    cleaned: list[int] = []
    clean, merge = store.clean_keyword_index, store.merge_bm25

    def clean_and_tell() -> int:
        cleaning.set()
        cleaned.append(clean())
        return cleaned[-1]

    def merge_once_cleaning(wait: bool = True) -> int:
        during.append(cleaning.wait(10))
        return merge(wait)

    monkeypatch.setattr(store, "clean_keyword_index", clean_and_tell)
    monkeypatch.setattr(store, "merge_bm25", merge_once_cleaning)
    write(store, "docs", "en.txt", ENGLISH)
    store.merge_bm25_later()
    assert store._merging is not None
    store._merging.join()
    assert during == [True]
    assert len(cleaned) == 1 and cleaned[0] >= 1  # the written chunks' terms were in the list: its pages merged
    with psycopg.connect(pg_uri) as conn:
        assert conn.execute("SELECT count(*) FROM bm25_pending").fetchone()[0] == 0
    assert_exact(pg_uri)


def test_a_chinese_questions_question_words_are_not_searched_by_keyword(store: Store) -> None:
    """A Chromium walk: "美庐别墅是什么时候建的？" found a blog post's chunks about when a model calls a tool (their
    "什么时候") beside the villa's; "它是什么时候建的？", searched with its rewrite, found nothing but them."""
    villa = "美庐别墅位于江西省庐山牯岭东谷河西路180号。美庐别墅始建于1903年，是一座英国卷廊式别墅。"
    calls = [
        "什么时候调用工具，由模型决定：它看工具的描述，判断什么时候需要查天气。",
        "模型什么时候该停下来？工具返回结果以后，它再决定什么时候回答。",
    ]
    write(store, "docs", "villa.txt", [villa])
    write(store, "docs", "agent.txt", calls)
    assert [h.content for h in store.keyword_search("美庐别墅是什么时候建的？", ["docs"], top_k=5)] == [villa]
    assert store.keyword_search("它是什么时候建的？", ["docs"], top_k=5) == []
    # A question word inside what is asked about is taken out too, the rest still found: "谁" of "谁设计的".
    assert [h.content for h in store.keyword_search("美庐别墅是谁建的？", ["docs"], top_k=5)] == [villa]
