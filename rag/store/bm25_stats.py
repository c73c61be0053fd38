"""BM25 statistics per knowledge base, kept exact by triggers on `vector_store`.

Per knowledge base (the `knowledge` key of a chunk's metadata): how many chunks it has and
their total length (`bm25_knowledge`), and in how many of its chunks each term occurs
(`bm25_terms`, the document frequency). The terms are the lexemes of the chunk's `fts`
tsvector (English stems, and Chinese as the character bigrams of `search_text`); a chunk's
length is its number of distinct terms, `length(fts)`, which PostgreSQL reads from the
tsvector's header. (Counting term occurrences instead means unnesting every chunk's tsvector:
keyword p50 went from 30 to 77 ms at 100,000 chunks with 1000 candidates, while hit@5 on the
three shared/eval sets moved by at most 0.002: 0.938/0.976/0.993 against 0.939/0.978/0.993.)

What a write costs: one row of `bm25_terms` inserted or updated per (term, knowledge base) pair a
statement's chunks hold, ~8 µs each whatever the statement's shape (ON CONFLICT 9.2, MERGE 8.4 µs at
500,000 rows), all in one statement per COPY. An 800-token chunk holds ~77 distinct stems in English and
~280 bigrams in Chinese once a 30-chunk document's repeats are merged: ~1.4 ms of the store stage's ~2.5
(server and client CPU), against ~0.8 ms for the same rows copied into a bare table. Within 1.5x of the
bare table needs these statistics kept another way (see issue 32).

Statement-level triggers with transition tables keep them in the transaction that writes the
chunks, whoever writes them (an ingest, a cascade from `documents`, the benchmark's COPY,
Spring AI's own INSERTs), so a killed ingest leaves them exact. Each trigger takes a
transaction-level advisory lock per knowledge base, in key order, just before it updates the
statistics: writers of one knowledge base queue there instead of deadlocking on term rows
updated in different orders. `Store` always locks the `knowledge_bases` row first, then this.

`MIGRATION` (run with the rest of the schema) creates the tables and triggers on a database
that lacks them and fills the statistics from the rows already there, with writes to
`vector_store` held off until it commits. The Spring AI columns of `vector_store` are left
as they are.
"""

from __future__ import annotations

LOCK_NAMESPACE = 1_112_365_109
"""The first key of the per-knowledge-base advisory locks (the second is hashtext(name))."""

TERMS_FILLFACTOR = 50
"""Room left in each page of `bm25_terms`: a document's write updates one row per (term, knowledge base)
it holds, and an update with room on its page stays there (a HOT update: no new index entry). Full pages
(the default, 100) kept 34 % of the updates HOT, 50 kept 99.8 %: the store stage's server CPU went from
2.64 to 2.40 ms a chunk (70: 2.53; 40 documents of 30 eval-passage chunks into a knowledge base of 63,000
term rows). The table is twice the size for it, and its rows are only ever read by key."""

BM25_SCHEMA = f"""
CREATE OR REPLACE FUNCTION bm25_apply(kbs text[], vectors tsvector[], signs integer[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    lock_key integer;
BEGIN
    IF kbs IS NULL THEN
        RETURN;
    END IF;
    FOR lock_key IN SELECT DISTINCT hashtext(k) FROM unnest(kbs) k WHERE k IS NOT NULL ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock({LOCK_NAMESPACE}, lock_key);
    END LOOP;
    INSERT INTO bm25_knowledge AS s (knowledge, chunks, total_length)
    SELECT d.k, sum(d.s), sum(d.s * length(d.v))
    FROM unnest(kbs, vectors, signs) d(k, v, s) WHERE d.k IS NOT NULL
    GROUP BY d.k ORDER BY d.k
    ON CONFLICT (knowledge) DO UPDATE
        SET chunks = s.chunks + excluded.chunks, total_length = s.total_length + excluded.total_length;
    -- The lexemes alone (tsvector_to_array), not unnest(tsvector), which builds every position list
    -- (2 ms of a 30-chunk Chinese document's 83); in hash order, not sorted (8 ms of them): the locks
    -- above already keep every other writer of these rows out.
    INSERT INTO bm25_terms AS s (term, knowledge, chunks)
    SELECT u.lexeme, d.k, sum(d.s)
    FROM unnest(kbs, vectors, signs) d(k, v, s), unnest(tsvector_to_array(d.v)) u(lexeme)
    WHERE d.k IS NOT NULL
    GROUP BY u.lexeme, d.k
    ON CONFLICT (term, knowledge) DO UPDATE SET chunks = s.chunks + excluded.chunks;
    IF -1 = ANY(signs) THEN
        DELETE FROM bm25_terms t
        USING (SELECT DISTINCT u.lexeme, d.k
               FROM unnest(kbs, vectors, signs) d(k, v, s), unnest(tsvector_to_array(d.v)) u(lexeme)
               WHERE d.s < 0 AND d.k IS NOT NULL) z
        WHERE t.term = z.lexeme AND t.knowledge = z.k AND t.chunks <= 0;
        DELETE FROM bm25_knowledge WHERE knowledge = ANY(kbs) AND chunks <= 0;
    END IF;
END
$fn$;

CREATE OR REPLACE FUNCTION bm25_track_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM bm25_apply(array_agg(n.metadata->>'knowledge'), array_agg(n.fts), array_agg(1)) FROM bm25_new n;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION bm25_track_delete() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM bm25_apply(array_agg(o.metadata->>'knowledge'), array_agg(o.fts), array_agg(-1)) FROM bm25_old o;
    RETURN NULL;
END
$fn$;

-- An update counts only where a row's terms or knowledge base changed (not a new embedding).
CREATE OR REPLACE FUNCTION bm25_track_update() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM bm25_apply(array_agg(d.k), array_agg(d.v), array_agg(d.s)) FROM (
        SELECT o.metadata->>'knowledge' AS k, o.fts AS v, -1 AS s
        FROM bm25_old o LEFT JOIN bm25_new n ON n.id = o.id
        WHERE n.id IS NULL OR n.fts IS DISTINCT FROM o.fts
           OR n.metadata->>'knowledge' IS DISTINCT FROM o.metadata->>'knowledge'
        UNION ALL
        SELECT n.metadata->>'knowledge', n.fts, 1
        FROM bm25_new n LEFT JOIN bm25_old o ON o.id = n.id
        WHERE o.id IS NULL OR n.fts IS DISTINCT FROM o.fts
           OR n.metadata->>'knowledge' IS DISTINCT FROM o.metadata->>'knowledge'
    ) d;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION bm25_track_truncate() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    TRUNCATE bm25_terms, bm25_knowledge;
    RETURN NULL;
END
$fn$;

DO $migration$
BEGIN
    IF to_regclass('bm25_knowledge') IS NOT NULL AND to_regclass('bm25_terms') IS NOT NULL
       AND (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'vector_store'::regclass AND tgname IN
            ('bm25_track_insert', 'bm25_track_delete', 'bm25_track_update', 'bm25_track_truncate')) = 4 THEN
        RETURN;
    END IF;
    -- No chunk is written while the statistics are (re)built from the rows already there.
    LOCK TABLE vector_store IN SHARE ROW EXCLUSIVE MODE;
    DROP TABLE IF EXISTS bm25_terms, bm25_knowledge;
    CREATE TABLE bm25_knowledge (
        knowledge text PRIMARY KEY,
        chunks bigint NOT NULL,
        total_length bigint NOT NULL
    );
    CREATE TABLE bm25_terms (
        term text NOT NULL,
        knowledge text NOT NULL,
        chunks bigint NOT NULL,
        PRIMARY KEY (term, knowledge)
    ) WITH (fillfactor = {TERMS_FILLFACTOR});
    DROP TRIGGER IF EXISTS bm25_track_insert ON vector_store;
    DROP TRIGGER IF EXISTS bm25_track_delete ON vector_store;
    DROP TRIGGER IF EXISTS bm25_track_update ON vector_store;
    DROP TRIGGER IF EXISTS bm25_track_truncate ON vector_store;
    CREATE TRIGGER bm25_track_insert AFTER INSERT ON vector_store REFERENCING NEW TABLE AS bm25_new
        FOR EACH STATEMENT EXECUTE FUNCTION bm25_track_insert();
    CREATE TRIGGER bm25_track_delete AFTER DELETE ON vector_store REFERENCING OLD TABLE AS bm25_old
        FOR EACH STATEMENT EXECUTE FUNCTION bm25_track_delete();
    CREATE TRIGGER bm25_track_update AFTER UPDATE ON vector_store
        REFERENCING OLD TABLE AS bm25_old NEW TABLE AS bm25_new
        FOR EACH STATEMENT EXECUTE FUNCTION bm25_track_update();
    CREATE TRIGGER bm25_track_truncate AFTER TRUNCATE ON vector_store
        FOR EACH STATEMENT EXECUTE FUNCTION bm25_track_truncate();
    INSERT INTO bm25_knowledge (knowledge, chunks, total_length)
    SELECT metadata->>'knowledge', count(*), coalesce(sum(length(fts)), 0)
    FROM vector_store WHERE metadata->>'knowledge' IS NOT NULL GROUP BY 1;
    INSERT INTO bm25_terms (term, knowledge, chunks)
    SELECT u.lexeme, v.metadata->>'knowledge', count(*)
    FROM vector_store v, unnest(v.fts) u WHERE v.metadata->>'knowledge' IS NOT NULL GROUP BY 1, 2;
END
$migration$;

-- Tables made before the fill factor get it for the pages written from now on (a catalog change, no
-- rewrite); checked first, as the ALTER would take a lock at every start.
DO $$ BEGIN
    IF NOT coalesce((SELECT reloptions FROM pg_class WHERE oid = 'bm25_terms'::regclass)
                    @> ARRAY['fillfactor={TERMS_FILLFACTOR}'], false) THEN
        ALTER TABLE bm25_terms SET (fillfactor = {TERMS_FILLFACTOR});
    END IF;
END $$;
"""
