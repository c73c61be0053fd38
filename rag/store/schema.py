"""The tables and indexes, created on first connection (idempotent DDL).

`vector_store` keeps the Spring AI layout (id, content, metadata, embedding) so the seed
project's SQL runs unchanged. Knowledge bases may differ in dimension, and HNSW needs a
fixed one: a large knowledge base has a partial HNSW index of its own on `embedding::vector(d)`
(`graphs`).
"""

from __future__ import annotations

from psycopg import sql

from rag.errors import StoreError
from rag.store.bm25_stats import BM25_SCHEMA
from rag.store.conversations import CONVERSATIONS_SCHEMA
from rag.store.question_sets import QUESTION_SETS_SCHEMA
from rag.store.vector_cache import VECTOR_CACHE_SCHEMA
from rag.text import Text

MAX_DIMENSION = 16000  # pgvector's limit for the vector type

SCHEMA_LOCK = 7_283_105_514
"""The advisory lock held while the schema is created: processes starting at once take turns (the
whole script is one implicit transaction), so CREATE OR REPLACE never races itself."""

GIN_PENDING_KB = 131_072
"""The keyword index's pending list (KB): new rows' terms wait there, unsorted, until it is full or an ingest ends
(`CLEAN_WORK_MEM`), and are then merged into the index, each merge rewriting the posting lists of every term it
touches. The default 4 MB merged every few documents: the peers bench's 11,074 chunks, written a document a
statement as an ingest writes them, cost 3.8 s of server time in the index against 1.4 s with 64 MB (and
`WRITE_WORK_MEM` to merge in). With 64 MB the writer that filled the list merged it in the middle of that bench's
ingest (~3 s of a core the other stages waited for); 128 MB hold the terms of its 11,630 chunks (90 MB, 3.6 million,
0.4 s of the server's CPU to put there), merged once the ingest is done: the ingest alone 12.2/12.3 s against
13.2/13.0 s (alternating). A keyword search reads the pending list too: 20-25 ms a query with those 90 MB pending
against 0.2-1.8 ms merged. The cost is disk: the index keeps the pages its pending list filled, free for the next
one (90 MB after that ingest; 79 MB against 19 MB for those 11,074 chunks with 64 MB)."""
CLEAN_WORK_MEM = "128MB"
"""maintenance_work_mem of the merge of the keyword index's pending list once an ingest is done
(`Store.clean_keyword_index`): the whole list's terms gathered at once (the 90 MB above: 2.2 s of one server
process, after the ingest)."""
WRITE_WORK_MEM = "64MB"
"""work_mem of a transaction that writes chunks: the memory a merge of the pending list gathers terms in before
it writes them (with PostgreSQL's 4 MB, a 64 MB pending list is merged in 16 rounds: the index's 1.4 s above
were 2.4 s)."""


AUTOVACUUM_ROWS = 100_000
"""Rows written to `vector_store` before PostgreSQL's autovacuum analyzes it (or vacuums it for the inserts alone) on
its own: its default (50 rows and a tenth of the table, 1,000 and a fifth for a vacuum) fired in the middle of every
`bench --only peers` ingest (~10 s into it), and an autovacuum worker's VACUUM or ANALYZE of a table merges its
keyword index's pending list (`GIN_PENDING_KB`), the work an ingest leaves to its end: the server's CPU within the
ingest 7.6-8.7 s against 4.0-4.5 with autovacuum kept off that table, the ingest 14.1-18.0 s against 13.1-15.7 s
(four runs each, alternating). An ingest's end analyzes the table instead (`Store.analyze_if_due`), after the
BM25 merge, by autovacuum's own rule; what others write to the table (Spring AI's store) is analyzed by autovacuum
past this many rows, or by the app's next ingest. Dead rows (a document replaced or deleted) vacuum it as before."""

TOAST_TARGET = 8160
"""Bytes a row of `vector_store` may have before PostgreSQL compresses it or moves parts of it out of line (the
largest it accepts: a page less its header and one line pointer)."""


def _storage(column: str, storage: str, table: str = "vector_store") -> str:
    """`table.column` set to `storage` (MAIN, EXTERNAL) where it is not yet: checked first, as the ALTER would take
    an exclusive lock on the table each time a process starts."""
    return f"""DO $$ BEGIN
    IF (SELECT attstorage FROM pg_attribute
        WHERE attrelid = '{table}'::regclass AND attname = '{column}') <> '{storage[0].lower()}' THEN
        ALTER TABLE {table} ALTER COLUMN {column} SET STORAGE {storage};
    END IF;
END $$;"""


def _unless_column(table: str, column: str, ddl: str) -> str:
    """`ddl` (which adds `table.column`) where the column is missing."""
    return f"""DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '{table}'::regclass AND attname = '{column}'
                   AND NOT attisdropped) THEN
        {ddl};
    END IF;
END $$;"""


def _unless_option(kind: str, name: str, option: str) -> str:
    """`option` ('name=value') set on table or index `name` (`kind`: TABLE, INDEX) where it is not yet: checked
    first, as the ALTER waits for the table's writers and takes a lock at every start."""
    return f"""DO $$ BEGIN
    IF NOT coalesce((SELECT reloptions FROM pg_class WHERE oid = '{name}'::regclass) @> ARRAY['{option}'], false)
    THEN
        ALTER {kind} {name} SET ({option});
    END IF;
END $$;"""


def _unless_index(name: str, ddl: str) -> str:
    """`ddl` (which creates index `name`) where it is missing."""
    return f"""DO $$ BEGIN
    IF to_regclass('{name}') IS NULL THEN
        {ddl};
    END IF;
END $$;"""


_FTS_COLUMN = "ALTER TABLE vector_store ADD COLUMN fts tsvector"
_CJK_TERMS_COLUMN = "ALTER TABLE vector_store ADD COLUMN cjk_terms tsvector"

# `fts` is what keyword search reads: the English lexemes of `search_text` (or of the content, where the writer
# left it NULL) and the CJK bigrams a writer sent ready in `cjk_terms` (rag.store.cjk_terms; moved into `fts`,
# not kept). Kept by a trigger rather than as a generated column, which can read only stored columns: sent as
# text for the server to parse, the bigrams were the largest part of its work on a Chinese chunk. It was
# generated before: the expression is dropped (PostgreSQL 13), the values stay.
_FTS_TRIGGER = """
CREATE OR REPLACE FUNCTION vector_store_fts() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.content IS NOT DISTINCT FROM OLD.content AND NEW.search_text IS NOT DISTINCT FROM OLD.search_text
           AND NEW.cjk_terms IS NULL THEN
            NEW.fts := OLD.fts;  -- a new embedding or metadata: the terms are those of the same text
            RETURN NEW;
        END IF;
        IF NEW.search_text IS NOT DISTINCT FROM OLD.search_text THEN
            NEW.search_text := NULL;  -- new content (Spring AI's upsert): the old content's text would be stale
        END IF;
    END IF;
    IF NEW.cjk_terms IS NULL THEN
        NEW.fts := to_tsvector('english', coalesce(NEW.search_text, NEW.content, ''));
    ELSE
        NEW.fts := to_tsvector('english', coalesce(NEW.search_text, NEW.content, '')) || NEW.cjk_terms;
        NEW.cjk_terms := NULL;
    END IF;
    RETURN NEW;
END
$fn$;
DO $$ BEGIN
    IF (SELECT attgenerated FROM pg_attribute WHERE attrelid = 'vector_store'::regclass AND attname = 'fts') = 's'
    THEN
        IF current_setting('server_version_num')::int < 130000 THEN
            RAISE EXCEPTION 'this database was made by an older version of the app and needs PostgreSQL 13 or later';
        END IF;
        ALTER TABLE vector_store ALTER COLUMN fts DROP EXPRESSION;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'vector_store'::regclass AND tgname = 'vector_store_fts')
    THEN
        CREATE TRIGGER vector_store_fts BEFORE INSERT OR UPDATE ON vector_store
            FOR EACH ROW EXECUTE FUNCTION vector_store_fts();
    END IF;
END $$;
"""
FTS_INDEX = "vector_store_fts_idx"
"""The keyword search's GIN index on `fts`."""
_FTS_INDEX = f"""CREATE INDEX {FTS_INDEX} ON vector_store USING gin (fts)
            WITH (gin_pending_list_limit = {GIN_PENDING_KB})"""

SCHEMA = (
    f"""
SELECT pg_advisory_xact_lock({SCHEMA_LOCK});
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS knowledge_bases (
    name text PRIMARY KEY,
    embedder text NOT NULL,
    dimension integer NOT NULL CHECK (dimension > 0),
    chunk_settings jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- The folder `rag sync` keeps the knowledge base in step with (NULL: built from uploads).
{_unless_column("knowledge_bases", "source_folder", "ALTER TABLE knowledge_bases ADD COLUMN source_folder text")}
CREATE TABLE IF NOT EXISTS documents (
    id uuid PRIMARY KEY,
    knowledge text NOT NULL REFERENCES knowledge_bases(name) ON DELETE CASCADE,
    original_filename text NOT NULL,
    path text,
    sha256 text NOT NULL,
    content bytea NOT NULL,
    size_bytes bigint NOT NULL,
    page_count integer NOT NULL,
    chunk_count integer NOT NULL,
    chunk_settings jsonb NOT NULL,
    ingested_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (knowledge, original_filename)
);
CREATE TABLE IF NOT EXISTS vector_store (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    content text,
    metadata jsonb,
    embedding vector,
    document_id uuid REFERENCES documents(id) ON DELETE CASCADE
);
-- What exists is looked up first (here and below): CREATE INDEX, ALTER TABLE and CREATE STATISTICS lock the table
-- even when IF NOT EXISTS then finds nothing to do, and this script is one transaction. Held while a knowledge
-- base's graph is built concurrently (rag.store.graphs), that lock and the build waited for each other: a
-- deadlock, or a process that could not start until the build ended.
{_unless_index("vector_store_document_idx", "CREATE INDEX vector_store_document_idx ON vector_store (document_id)")}
{_unless_column("vector_store", "search_text", "ALTER TABLE vector_store ADD COLUMN search_text text")}
{_unless_column("vector_store", "fts", _FTS_COLUMN)}
{_unless_column("vector_store", "cjk_terms", _CJK_TERMS_COLUMN)}
{_FTS_TRIGGER}
{_unless_index(FTS_INDEX, _FTS_INDEX)}
-- An index made before it had the option gets it (checked first: the ALTER waits for the table's writers).
{_unless_option("INDEX", FTS_INDEX, f"gin_pending_list_limit={GIN_PENDING_KB}")}
-- BM25 reads every candidate's tsvector twice (its terms and its length). Left EXTENDED it is the
-- row's largest column after the embedding and is moved to the TOAST table, fetched once per
-- read; kept in the row (MAIN: compressed at most, out of line only as a last resort), keyword p50
-- went from 27.8 to 9.1 ms and p95 from 79 to 25 ms at 100,000 bench chunks. Checked first: the
-- ALTER would take an exclusive lock on the table each time a process starts. Rows written
-- before keep their storage until rewritten.
{_storage("fts", "MAIN")}
-- `search_text` (what the server parses where it is not the content: a Chinese chunk's text but its bigrams, a
-- giant chunk's first characters) is written once and read by no search (`fts` is): stored as it is (EXTERNAL:
-- out of line when large, never compressed). When it held a Chinese chunk's bigrams, compressing them was
-- 0.8 of the server's 14.3 CPU s on the peers bench. Checked first, as above; rows written before stay compressed.
{_storage("search_text", "EXTERNAL")}
-- The embedding and the metadata kept in the row (MAIN): the tsvector, kept there (above), makes most rows larger
-- than the 2 KB past which PostgreSQL moves the other columns out, and a row read for its distance or its
-- knowledge base then fetched each from the TOAST table (11,006 of the peers bench's 11,074 rows had their
-- metadata there, 11,065 their embedding). Comparing a query with all of a knowledge base's rows took 35 ms
-- with them out of line, 16 with them in (that bench's 11,074 rows, 256-d); rows stay under a page.
{_storage("embedding", "MAIN")}
{_storage("metadata", "MAIN")}
-- A row is compressed and moved out in parts only past TOAST_TARGET bytes, not PostgreSQL's 2 KB: an 800-token
-- chunk's row (its tsvector, embedding and metadata, ~6 KB) filled a page of its own anyway, and its content
-- (1.5-2.5 KB) was compressed (or tried: Chinese text rarely shrinks) and moved to the TOAST table beside it
-- for nothing. Inserting the peers bench's 12,014 rows took the server 1.2-1.3 CPU s against 1.8-2.1, the table
-- 103 MB against 115. Checked first, as above.
{_unless_option("TABLE", "vector_store", f"toast_tuple_target={TOAST_TARGET}")}
-- Not analyzed nor vacuumed by autovacuum for rows merely added while an ingest writes them (AUTOVACUUM_ROWS).
-- Checked first, as above.
{_unless_option("TABLE", "vector_store", f"autovacuum_analyze_threshold={AUTOVACUUM_ROWS}")}
{_unless_option("TABLE", "vector_store", f"autovacuum_vacuum_insert_threshold={AUTOVACUUM_ROWS}")}
-- A stored file is kept as it is (EXTERNAL: out of line, never compressed). PDFs, Office files and EPUBs are
-- compressed inside already, and PostgreSQL's compression ran over each of them before giving up: the peers
-- bench's 200 PDFs (16.0 MB) took the server 0.28 CPU s to store against 0.07 kept as they are, 16.0 MB either
-- way. A text file is kept at its own size too, as on disk. Checked first, as above; files stored before stay as
-- they are.
{_storage("content", "EXTERNAL", table="documents")}
-- Each large knowledge base's graph as its check found it (rag.store.graphs: `_recall`).
CREATE TABLE IF NOT EXISTS vector_graphs (
    index_name text PRIMARY KEY,
    rows bigint NOT NULL,
    options text NOT NULL,
    ef_search integer NOT NULL,
    recall real NOT NULL,
    exact boolean NOT NULL,
    checked_at timestamptz NOT NULL DEFAULT now()
);
-- Each embedder's vectors of the questions a new graph is checked with (rag.store.graphs: PROBE_QUESTIONS).
CREATE TABLE IF NOT EXISTS graph_probes (
    embedder text NOT NULL,
    version text NOT NULL,
    ordinal integer NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (embedder, ordinal)
);
-- How many chunks each knowledge base has, for the planner: without it, a search filtered to
-- knowledge bases holding most rows is planned as if it kept a handful. (Statistics on an
-- expression need PostgreSQL 14; older servers plan without them.)
DO $$ BEGIN
    IF current_setting('server_version_num')::int >= 140000
       AND NOT EXISTS (SELECT 1 FROM pg_statistic_ext WHERE stxname = 'vector_store_knowledge_stats') THEN
        EXECUTE 'CREATE STATISTICS IF NOT EXISTS vector_store_knowledge_stats '
                'ON ((metadata->>''knowledge'')) FROM vector_store';
    END IF;
END $$;
"""
    + BM25_SCHEMA
    + CONVERSATIONS_SCHEMA
    + VECTOR_CACHE_SCHEMA
    + QUESTION_SETS_SCHEMA
)


def dimension_sql(dimension: int) -> sql.Composable:
    """`dimension` as an SQL literal, after checking it is a vector size pgvector accepts."""
    # The dimension comes from an embedder, never from a user; still, only an int gets here.
    if not isinstance(dimension, int) or not 0 < dimension <= MAX_DIMENSION:
        raise StoreError(Text("invalid vector dimension {dimension}", dimension=repr(dimension)))
    return sql.Literal(dimension)


HNSW_OPTIONS = "m = 16, ef_construction = 128"
"""pgvector's default ef_construction of 64 leaves clustered rows in islands the search cannot leave: at
300,000 384-d rows (3,000 clusters) one query in 40 found none of its 10 neighbours at ef_search 100
(recall 0.968; at a million 0.755-0.860, flat past ef_search 200). Built with 128: recall 1.000 at
ef_search 100, queries faster (7.9 vs 12.0 ms), the build ~2x longer; at a million 768-d rows recall
0.995 at ef_search 200 (bench --only scale; the build 1,808 s on 2 loaded cores, 948 s with 64)."""


def graph_megabytes(rows: int, dim: int) -> int:
    """maintenance_work_mem that holds the whole HNSW graph (vectors + neighbour lists, ~1.3x the raw
    vectors measured), at least PostgreSQL's default 64 MB: a graph that outgrows it is built on disk,
    several times slower (pgvector says so in a NOTICE)."""
    return max(64, int(rows * (dim * 4 + 300) * 1.3 / 1e6))
