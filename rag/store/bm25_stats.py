"""BM25 statistics per knowledge base, kept exact by triggers on `vector_store`.

Per knowledge base (the `knowledge` key of a chunk's metadata): how many chunks it has and
their total length (`bm25_knowledge`), and in how many of its chunks each term occurs
(`bm25_terms`, the document frequency). The terms are the lexemes of the chunk's `fts`
tsvector (English stems, and Chinese as the character bigrams of `search_text`); a chunk's
length is its number of distinct terms, `length(fts)`, which PostgreSQL reads from the
tsvector's header. (Counting term occurrences instead means unnesting every chunk's tsvector:
keyword p50 went from 30 to 77 ms at 100,000 chunks with 1000 candidates, while hit@5 on the
three shared/eval sets moved by at most 0.002: 0.938/0.976/0.993 against 0.939/0.978/0.993.)

What a write costs. Upserting one row of `bm25_terms` per (term, knowledge base) pair each document holds
(~77 distinct stems an 800-token English chunk, ~280 bigrams a Chinese one) took half of the store stage's
server time (1.4 ms a chunk against 0.7 without it; a bare table 0.4) and made writers of one knowledge base
queue on its term rows. Then a statement's chunks appended their terms' counts as arrays to one `bm25_pending`
row (no row lock): still 1.3-1.5 s of the server's time in the peers bench's ingest of 11,630 chunks, the
lexemes of every tsvector unnested and grouped while the ingest waited. So a write now only lists its chunks:
one `bm25_pending` row per knowledge base with their ids, number and total length (`bm25_track_insert`). A
search counts the query's terms in the listed chunks' rows (`keyword_sql`; ~10 microseconds a listed chunk, a
search ~110 ms slower with the peers bench's 11,630 listed, hence `LISTED_CHUNK_ENTRIES`), and `bm25_merge`
counts them once for good, after the ingest, in the background (that bench's: 1.9 s), folding everything pending
into the tables in one transaction, where a term common to many documents is one upsert instead of one per
document. Deleting or changing a chunk still listed takes back only its number and length and takes it off its
list; a counted one takes back its terms, as a pending row of negative counts. `Store` merges in the background
once a write leaves more than `MERGE_TERMS` pending, and after an ingest (`merge_bm25_later`).

Statement-level triggers with transition tables keep them in the transaction that writes the
chunks, whoever writes them (an ingest, a cascade from `documents`, the benchmark's COPY,
Spring AI's own INSERTs), so a killed ingest leaves them exact: pending rows commit or vanish with
their chunks, and a merge moves them whole. Merges take turns on one advisory lock, and lock the pending rows
in the order of their ids, as a write that deletes listed chunks locks theirs (`bm25_listed`): a deleted chunk
is either counted by the merge and its terms taken back, or taken off its list before the merge reads it.

`MIGRATION` (run with the rest of the schema) creates the tables and triggers on a database
that lacks them and fills the statistics from the rows already there, with writes to
`vector_store` held off until it commits. The Spring AI columns of `vector_store` are left
as they are.
"""

from __future__ import annotations

LOCK_NAMESPACE = 1_112_365_109
"""The first key of the advisory lock merges take turns on (the second is 0)."""

TERMS_FILLFACTOR = 50
"""Room left in each page of `bm25_terms`: a merge updates one row per (term, knowledge base) it holds, and
an update with room on its page stays there (a HOT update: no new index entry). Full pages (the default, 100)
kept 34 % of the updates HOT, 50 kept 99.8 %: the store stage's server CPU went from 2.64 to 2.40 ms a chunk
when each document upserted its terms (70: 2.53; 40 documents of 30 eval-passage chunks into a knowledge
base of 63,000 term rows). The table is twice the size for it, and its rows are only ever read by key."""

LISTED_CHUNK_ENTRIES = 100
"""What a listed chunk (one whose terms no merge has counted yet, `bm25_track_insert`) weighs against `MERGE_TERMS`:
a search reads its row and counts the query's terms there, ~10 microseconds (the peers bench's 11,630 chunks listed:
keyword p50 135-152 ms against 38-50 merged, the same scores), about what 100 pending counts cost it."""

MERGE_TERMS = 3_000_000
"""Pending (term, knowledge base) counts (a listed chunk `LISTED_CHUNK_ENTRIES` of them) beyond which a write starts
a merge of them into the tables in the background (`Store.merge_bm25`). Every keyword search reads all pending
counts: ~100 ms more a million (a keyword
search over the peers bench's 12,014 chunks: p50 225-260 ms with its 2.36 million pending, 12-16 ms merged),
which only a search during a large ingest meets, as an ingest merges what it left once it is done. The merges are
what this trades against, each folding in most of the vocabulary again: at 200,000 they ran back to back through
the peers bench's 200 PDFs and the server's CPU went from 31 s to 32-36; at a million, two merges during the ingest
and the last took ~2.3 s of the server's CPU; at 3 million none runs during it, and the one after it merges all
2.36 million counts (78,712 terms) in 1.25 s. (While an ingest waited for its last merge, 3 million was no faster
than a million: 14.2-15.0 s against 13.4-14.7, the last merge 1.2 s against 0.3.)"""

BM25_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS bm25_pending (
    id bigserial PRIMARY KEY,
    knowledge text NOT NULL,
    chunks bigint NOT NULL,
    total_length bigint NOT NULL,
    terms text[] NOT NULL,
    counts bigint[] NOT NULL,
    entries integer NOT NULL
);
-- `chunk_ids`: the chunks a statement wrote, listed for their terms to be counted later (`bm25_track_insert`); NULL
-- in a row of counts. Not compressed: a merge or a search reads every pending array whole, and pglz was a tenth of
-- the writes' and the merges' server time (compressing on the way in, decompressing on the way out). Both looked up
-- first: the ALTER would wait for every open transaction that wrote a chunk, at every start.
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'bm25_pending'::regclass AND attname = 'chunk_ids'
                   AND NOT attisdropped) THEN
        ALTER TABLE bm25_pending ADD COLUMN chunk_ids uuid[];
    END IF;
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'bm25_pending'::regclass
               AND attname IN ('terms', 'counts', 'chunk_ids') AND attstorage <> 'e') THEN
        ALTER TABLE bm25_pending ALTER COLUMN terms SET STORAGE EXTERNAL, ALTER COLUMN counts SET STORAGE EXTERNAL,
            ALTER COLUMN chunk_ids SET STORAGE EXTERNAL;
    END IF;
END $$;

-- What a statement's chunks change, kept as one pending row per knowledge base: the chunks, their length and
-- each term's count, appended (no row of bm25_terms is touched, so no writer waits for another here).
CREATE OR REPLACE FUNCTION bm25_apply(kbs text[], vectors tsvector[], signs integer[]) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF kbs IS NULL THEN
        RETURN;
    END IF;
    -- The lexemes alone (tsvector_to_array), not unnest(tsvector), which builds every position list; unnested in
    -- the select list, which streams them (in FROM, each chunk's go through a tuplestore first: 12 % slower). Each
    -- knowledge base's terms grouped by the lexeme alone (grouped by knowledge base and lexeme, the peers bench's
    -- 11,630 rows written a document a statement took the server 2.1-2.5 CPU s against 1.8-1.9 so).
    INSERT INTO bm25_pending (knowledge, chunks, total_length, terms, counts, entries)
    SELECT c.k, c.n, c.len, coalesce(t.terms, '{{}}'), coalesce(t.counts, '{{}}'), coalesce(cardinality(t.terms), 0)
    FROM (SELECT d.k, sum(d.s) AS n, sum(d.s * length(d.v)) AS len
          FROM unnest(kbs, vectors, signs) d(k, v, s) WHERE d.k IS NOT NULL GROUP BY d.k) c
    CROSS JOIN LATERAL (
        SELECT array_agg(x.lexeme) AS terms, array_agg(x.n) AS counts
        FROM (SELECT u.lexeme, sum(u.s) AS n
              FROM (SELECT d.s, unnest(tsvector_to_array(d.v)) AS lexeme
                    FROM unnest(kbs, vectors, signs) d(k, v, s) WHERE d.k = c.k) u
              GROUP BY u.lexeme HAVING sum(u.s) <> 0) x) t
    WHERE c.n <> 0 OR t.terms IS NOT NULL;
END
$fn$;

-- The pending rows committed by now, added to bm25_knowledge and bm25_terms and deleted, in one transaction: a
-- reader sees them either pending or merged, never both. One merge at a time (`wait` false: return at once when
-- another runs); writers go on appending meanwhile. Returns how many pending rows it merged.
CREATE OR REPLACE FUNCTION bm25_merge(wait boolean DEFAULT true) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    ids bigint[];
BEGIN
    IF wait THEN
        PERFORM pg_advisory_xact_lock({LOCK_NAMESPACE}, 0);
    ELSIF NOT pg_try_advisory_xact_lock({LOCK_NAMESPACE}, 0) THEN
        RETURN 0;
    END IF;
    -- Locked in the order of their ids, as a write that deletes listed chunks locks their rows (`bm25_listed`): it
    -- waits for this merge, or this merge for its commit, and the chunks it deletes are counted or not, never both.
    SELECT coalesce(array_agg(l.id), '{{}}') INTO ids FROM (SELECT id FROM bm25_pending ORDER BY id FOR UPDATE) l;
    IF cardinality(ids) = 0 THEN
        RETURN 0;
    END IF;
    INSERT INTO bm25_knowledge AS s (knowledge, chunks, total_length)
    SELECT p.knowledge, sum(p.chunks), sum(p.total_length) FROM bm25_pending p WHERE p.id = ANY(ids)
    GROUP BY p.knowledge
    ON CONFLICT (knowledge) DO UPDATE
        SET chunks = s.chunks + excluded.chunks, total_length = s.total_length + excluded.total_length;
    -- The counts, and the terms of the listed chunks read from their rows. The arrays unnested in the select list
    -- (zipped, as unnest(a, b) in FROM would, which goes through a tuplestore a row: the 2.3 million pending counts
    -- of the peers bench grouped in 0.35 s instead of 0.60).
    INSERT INTO bm25_terms AS s (term, knowledge, chunks)
    SELECT u.term, u.knowledge, sum(u.n)
    FROM (SELECT p.knowledge, unnest(p.terms) AS term, unnest(p.counts) AS n
          FROM bm25_pending p WHERE p.id = ANY(ids)
          UNION ALL
          SELECT v.metadata->>'knowledge', unnest(tsvector_to_array(v.fts)), 1
          FROM vector_store v
          WHERE v.id IN (SELECT unnest(p.chunk_ids) FROM bm25_pending p WHERE p.id = ANY(ids))
            AND v.metadata->>'knowledge' IS NOT NULL) u
    GROUP BY u.term, u.knowledge
    ON CONFLICT (term, knowledge) DO UPDATE SET chunks = s.chunks + excluded.chunks;
    IF EXISTS (SELECT 1 FROM bm25_pending p WHERE p.id = ANY(ids) AND (p.chunks < 0 OR 0 > ANY(p.counts))) THEN
        DELETE FROM bm25_terms t
        USING (SELECT DISTINCT u.term, u.knowledge
               FROM (SELECT p.knowledge, unnest(p.terms) AS term, unnest(p.counts) AS n
                     FROM bm25_pending p WHERE p.id = ANY(ids)) u
               WHERE u.n < 0) z
        WHERE t.term = z.term AND t.knowledge = z.knowledge AND t.chunks <= 0;
        DELETE FROM bm25_knowledge WHERE chunks <= 0;
    END IF;
    DELETE FROM bm25_pending WHERE id = ANY(ids);
    RETURN cardinality(ids);
END
$fn$;

-- Chunks listed, not counted: one pending row per knowledge base with their ids, number and length (`lengths`,
-- `length(fts)`: read from each tsvector's header). A search counts a listed chunk's terms where it reads it
-- (`keyword_sql`), a merge once for good.
CREATE OR REPLACE FUNCTION bm25_list(ids uuid[], kbs text[], lengths integer[]) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO bm25_pending (knowledge, chunks, total_length, terms, counts, entries, chunk_ids)
    SELECT d.k, count(*), sum(d.len), '{{}}', '{{}}', count(*) * {LISTED_CHUNK_ENTRIES}, array_agg(d.id)
    FROM unnest(ids, kbs, lengths) d(id, k, len) WHERE d.k IS NOT NULL GROUP BY 1;
END
$fn$;

-- Of the chunks `ids`, those still listed (not counted by a merge): their pending rows are locked first, in the
-- order of their ids as a merge locks them all (so neither waits for the other in a cycle), then read again, as a
-- merge that held them may have counted and deleted them meanwhile. `unlist`: they are taken off their lists
-- too (deleted chunks: a merge must not count them).
CREATE OR REPLACE FUNCTION bm25_listed(ids uuid[], unlist boolean) RETURNS uuid[]
LANGUAGE plpgsql AS $fn$
DECLARE
    rows bigint[];
    found uuid[];
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN '{{}}';
    END IF;
    -- Hashed (IN over a set): `= ANY(array)` compares each listed id with every id, 11,630 squared for a
    -- knowledge base deleted right after its ingest.
    SELECT coalesce(array_agg(DISTINCT p.id), '{{}}') INTO rows
    FROM bm25_pending p, unnest(p.chunk_ids) c(id)
    WHERE p.chunk_ids IS NOT NULL AND c.id IN (SELECT unnest(ids));
    IF cardinality(rows) = 0 THEN
        RETURN '{{}}';
    END IF;
    PERFORM 1 FROM bm25_pending p WHERE p.id = ANY(rows) ORDER BY p.id FOR UPDATE;
    SELECT coalesce(array_agg(c.id), '{{}}') INTO found
    FROM bm25_pending p, unnest(p.chunk_ids) c(id)
    WHERE p.id = ANY(rows) AND c.id IN (SELECT unnest(ids));
    IF unlist AND cardinality(found) > 0 THEN
        UPDATE bm25_pending p SET chunk_ids = k.kept, entries = cardinality(k.kept) * {LISTED_CHUNK_ENTRIES}
        FROM (SELECT p2.id, coalesce(array_agg(c.id) FILTER (WHERE c.id NOT IN (SELECT unnest(found))), '{{}}') AS kept
              FROM bm25_pending p2, unnest(p2.chunk_ids) c(id) WHERE p2.id = ANY(rows) GROUP BY p2.id) k
        WHERE p.id = k.id;
    END IF;
    RETURN found;
END
$fn$;

-- Chunks leaving (deleted, or the old version of an update): a listed one takes back its number and length (its
-- terms were never counted) and leaves its list; a counted one its terms too.
CREATE OR REPLACE FUNCTION bm25_leave(ids uuid[], kbs text[], vectors tsvector[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    listed uuid[];
BEGIN
    IF ids IS NULL THEN
        RETURN;
    END IF;
    listed := bm25_listed(ids, true);
    PERFORM bm25_apply(array_agg(d.k), array_agg(d.v), array_agg(-1))
    FROM unnest(ids, kbs, vectors) d(id, k, v) WHERE d.id NOT IN (SELECT unnest(listed));
    INSERT INTO bm25_pending (knowledge, chunks, total_length, terms, counts, entries)
    SELECT d.k, -count(*), -sum(length(d.v)), '{{}}', '{{}}', 0
    FROM unnest(ids, kbs, vectors) d(id, k, v) WHERE d.id IN (SELECT unnest(listed)) GROUP BY 1;
END
$fn$;

CREATE OR REPLACE FUNCTION bm25_track_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM bm25_list(array_agg(n.id), array_agg(n.metadata->>'knowledge'), array_agg(length(n.fts))) FROM bm25_new n;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION bm25_track_delete() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM bm25_leave(array_agg(o.id), array_agg(o.metadata->>'knowledge'), array_agg(o.fts))
    FROM bm25_old o WHERE o.metadata->>'knowledge' IS NOT NULL;
    RETURN NULL;
END
$fn$;

-- An update counts only where a row's terms or knowledge base changed (not a new embedding): the old version leaves
-- as a deleted chunk does, the new one is listed as an inserted one.
CREATE OR REPLACE FUNCTION bm25_track_update() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM bm25_leave(array_agg(o.id), array_agg(o.metadata->>'knowledge'), array_agg(o.fts))
    FROM bm25_old o LEFT JOIN bm25_new n ON n.id = o.id
    WHERE o.metadata->>'knowledge' IS NOT NULL AND (n.id IS NULL OR n.fts IS DISTINCT FROM o.fts
          OR n.metadata->>'knowledge' IS DISTINCT FROM o.metadata->>'knowledge');
    PERFORM bm25_list(array_agg(n.id), array_agg(n.metadata->>'knowledge'), array_agg(length(n.fts)))
    FROM bm25_new n LEFT JOIN bm25_old o ON o.id = n.id
    WHERE o.id IS NULL OR n.fts IS DISTINCT FROM o.fts
          OR n.metadata->>'knowledge' IS DISTINCT FROM o.metadata->>'knowledge';
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION bm25_track_truncate() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    TRUNCATE bm25_terms, bm25_knowledge, bm25_pending;
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
    TRUNCATE bm25_pending;
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
