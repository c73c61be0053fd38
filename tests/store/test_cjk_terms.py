"""CJK bigrams sent as a ready tsvector (rag.store.cjk_terms): the same terms, as often, as PostgreSQL's parser
makes of the bigram text, on the real server; and `fts` kept by the table's trigger for every writer."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from rag.evaluation.sets import eval_set
from rag.query.keywords import search_text
from rag.store import Store
from rag.store.cjk_terms import LAST_POSITION, MAX_POSITIONS, split_terms
from tests.store.test_bm25 import CHINESE, assert_exact, write

ODD_TEXTS = [
    "",
    "plain English, nothing to make here",
    "中",  # one character: the character itself
    "罗伯特·阿夸弗雷斯卡（意大利语：），2007年 -10 分",  # a middle dot (not CJK) between two runs
    "ア・イ コーヒー ゝゞ ヿ",  # kana punctuation and marks inside runs: those runs are the server's
    "한국어 텍스트와 中文 混合 text ＡＢＣ ｱｲｳ",  # hangul, full-width Latin and half-width kana
    "豈更車 﨎﨏 丂丄",  # compatibility ideographs, Extension A
    "中\u3099文 〆〇",  # a combining mark inside a run; CJK symbols outside the class
    "哈" * (MAX_POSITIONS + 40),  # one bigram more often than a tsvector keeps
    "x" * LAST_POSITION + "中文",  # longer than the positions: left to the server
    "\U00020000\U0002a6d6 emoji 🙂 中文",  # beyond the Basic Multilingual Plane
    "文K文~0K{1'K\t<K文文>2 中文",  # a tag across CJK runs (random text found it): the parser's whole
    "naïve café — “quoted” ‘text’ №5",  # past ASCII, but no CJK character: the text as it is
]


def _terms(conn: psycopg.Connection, vector_sql: str, *args: object) -> list[str]:
    row = conn.execute(
        f"SELECT coalesce(array_agg(lexeme || ':' || cardinality(positions) ORDER BY lexeme), '{{}}') "
        f"FROM unnest({vector_sql})",
        args,
    ).fetchone()
    assert row is not None
    return list(row[0])


@pytest.fixture(scope="module")
def texts() -> list[str]:
    passages = [p.text for p in eval_set("zh_cmrc_trial").passages[:150]] + [
        p.text for p in eval_set("zh_c3").passages[:150]
    ]
    return ODD_TEXTS + passages + [p.text for p in eval_set("en_race").passages[:20]]


def test_the_terms_equal_the_parsers_on_real_and_odd_text(store: Store, pg_uri: str, texts: list[str]) -> None:
    made = split_terms(texts)
    assert sum(vector is not None for _, vector in made) >= 300  # the Chinese passages went this way
    assert made[1] == (None, None) and made[9][1] is None  # English; too long for positions
    assert made[11][1] is None  # a "<": all of it left to the server
    assert made[12] == (None, None)  # past ASCII, no CJK: the text as it is
    with psycopg.connect(pg_uri) as conn:
        conn.execute("CREATE TEMP TABLE made (i int, parsed text, cjk tsvector)")
        with conn.cursor().copy("COPY made (i, parsed, cjk) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "text", "bytea"])  # bytea's binary form is the bytes: read as a tsvector
            for i, (text, (parsed, vector)) in enumerate(zip(texts, made, strict=True)):
                copy.write_row((i, text if parsed is None else parsed, vector))
        for i, text in enumerate(texts):
            expected = _terms(conn, "to_tsvector('english', %s)", search_text(text))
            got = _terms(conn, "(SELECT to_tsvector('english', parsed) || coalesce(cjk, '') FROM made WHERE i = %s)", i)
            assert got == expected, text[:60]
    assert "哈哈:255" in expected_of(pg_uri, ODD_TEXTS[8])


def test_texts_are_encoded_in_groups_with_the_same_result(texts: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A large document's chunks are encoded a group at a time (memory), each text as if alone."""
    from rag.store import cjk_terms

    whole = split_terms(texts)
    monkeypatch.setattr(cjk_terms, "GROUP_CHARS", 700)
    assert len(cjk_terms._groups(list(range(len(texts))), texts)) > 100
    assert split_terms(texts) == whole
    assert [split_terms([t])[0] for t in texts[:40]] == whole[:40]


def expected_of(uri: str, text: str) -> list[str]:
    with psycopg.connect(uri) as conn:
        return _terms(conn, "to_tsvector('english', %s)", search_text(text))


def test_every_writer_gets_its_terms_and_updates_follow_the_content(store: Store, pg_uri: str) -> None:
    write(store, "docs", "zh.txt", CHINESE)
    with psycopg.connect(pg_uri) as conn:
        # Spring AI's own insert (no search_text, no bigrams): the content's English terms, as before.
        conn.execute(
            "INSERT INTO vector_store (content, metadata, embedding) VALUES (%s, %s, '[1,0,0,0]')",
            ("harbour pilot", Jsonb({"knowledge": "docs"})),
        )
        # An explicit fts is not trusted: the trigger derives it.
        conn.execute(
            "INSERT INTO vector_store (content, metadata, embedding, fts) VALUES (%s, %s, '[1,0,0,0]', 'bogus')",
            ("storm ledger", Jsonb({"knowledge": "docs"})),
        )
        conn.execute("UPDATE vector_store SET embedding = '[0,1,0,0]' WHERE content = %s", (CHINESE[0],))
        kept = _terms(conn, "(SELECT fts FROM vector_store WHERE content = %s)", CHINESE[0])
        # Spring AI's upsert: new content, the old search_text not rewritten: the terms are the new content's.
        conn.execute("UPDATE vector_store SET content = 'lighthouse keeper' WHERE content = %s", (CHINESE[1],))
        rows = conn.execute(
            "SELECT content, fts::text, search_text, cjk_terms FROM vector_store ORDER BY content"
        ).fetchall()
    assert kept == expected_of(pg_uri, CHINESE[0])
    fts = {content: (vector, parsed, cjk) for content, vector, parsed, cjk in rows}
    assert fts["harbour pilot"] == ("'harbour':1 'pilot':2", None, None)
    assert fts["storm ledger"] == ("'ledger':2 'storm':1", None, None)
    assert fts["lighthouse keeper"] == ("'keeper':2 'lighthous':1", None, None)
    assert all(cjk is None for _, _, cjk in fts.values())
    assert set(assert_exact(pg_uri)) == {"docs"}
    assert [h.content for h in store.keyword_search("检索质量", ["docs"], top_k=1)] == [CHINESE[2]]


def test_a_database_whose_terms_were_a_generated_column_keeps_them(store: Store, pg_uri: str) -> None:
    """A database made before the trigger (fts generated from search_text) opens: the expression is dropped,
    the values kept, and new rows get their terms from the trigger."""
    with psycopg.connect(pg_uri) as conn:
        conn.execute("DROP TRIGGER vector_store_fts ON vector_store")
        conn.execute("ALTER TABLE vector_store DROP COLUMN fts, DROP COLUMN cjk_terms")
        conn.execute(
            "ALTER TABLE vector_store ADD COLUMN fts tsvector "
            "GENERATED ALWAYS AS (to_tsvector('english', coalesce(search_text, content, ''))) STORED"
        )
        conn.execute("CREATE INDEX vector_store_fts_idx ON vector_store USING gin (fts)")
        conn.execute(
            "INSERT INTO vector_store (content, metadata, embedding, search_text) VALUES (%s, %s, '[1,0,0,0]', %s)",
            (CHINESE[0], Jsonb({"knowledge": "old"}), search_text(CHINESE[0])),
        )
    Store(pg_uri).close()  # the migration
    with psycopg.connect(pg_uri) as conn:
        generated = conn.execute(
            "SELECT attgenerated FROM pg_attribute WHERE attrelid = 'vector_store'::regclass AND attname = 'fts'"
        ).fetchone()
        old = _terms(conn, "(SELECT fts FROM vector_store WHERE metadata->>'knowledge' = 'old')")
    assert generated == ("",)
    assert old == expected_of(pg_uri, CHINESE[0])
    write(store, "new", "zh.txt", CHINESE)
    assert [h.content for h in store.keyword_search("加班工资", ["old", "new"], top_k=2)] == [CHINESE[0]] * 2
