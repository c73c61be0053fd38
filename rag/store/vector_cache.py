"""The vectors of ingests that did not finish, so that the next ingest of the same text embeds only the rest.

A document goes into a knowledge base whole or not at all (one transaction); its vectors do not have to
wait for that. Each batch an ingest embeds is written here in its own small transaction as soon as it is
done, so a Stop, a crash or a SIGKILL loses at most the batch in flight: 红楼梦 (1,633 chunks) had 65
chunks embedded in 195 s when it was stopped, and all of that was thrown away before.

In PostgreSQL, beside the knowledge bases, rather than in files under the data folder: a committed row
survives a killed process, two ingests writing the same text at once meet on the primary key (ON
CONFLICT DO NOTHING), and a server at DATABASE_URL shared by several machines shares the cache too.

A row's key is the embedder (its name and dimension: another model or size is another vector space) and
the SHA-256 of exactly what the model read (its passage prefix and the chunk as cut to the model's
window: `rag.embeddings.batches.input_key`), so a changed chunk is never answered with an old vector.

Bounded two ways: the rows of a document are dropped once it is stored (its vectors live on in
`vector_store`), which leaves only the rows of ingests stopped and not taken up again; of those, rows
unused for `MAX_AGE_DAYS` go, and beyond `MAX_ROWS` the least recently used go (LRU on `used_at`,
which a reuse renews).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import numpy as np
import psycopg

VECTOR_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS embedding_cache (
    embedder text NOT NULL,
    text_sha256 bytea NOT NULL,
    embedding vector NOT NULL,
    used_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (embedder, text_sha256)
);
CREATE INDEX IF NOT EXISTS embedding_cache_used_idx ON embedding_cache (used_at);
"""

MAX_ROWS = 100_000
"""Rows kept at most (the least recently used beyond go): of e5's 384-d rows (1,536 bytes of vector, 32
of key, the embedder's name and PostgreSQL's row and index overhead: ~1.7 KB, estimated, not measured)
~170 MB; 61 stopped books the size of 红楼梦; at e5's 0.3-0.7 chunks/s on 2 cores, 40-90 hours of
embedding, more than anyone stops and leaves."""
MAX_AGE_DAYS = 30
"""Rows unused for this long go: an ingest not taken up again within a month is not coming back."""
LOOKUP_KEYS = 5_000
"""Keys asked for in one statement (160 KB of parameters): a 200 MB TXT cut into 300,000 chunks
would otherwise send 10 MB in one."""


def embedder_key(name: str, dimension: int) -> str:
    """The embedder part of a row's key: its name and its dimension (Ollama's model can be re-pulled
    at another size under the same name)."""
    return f"{name}:{dimension}"


class VectorCache:
    """The `embedding_cache` table, through a store's connections (`Store.vector_cache`)."""

    def __init__(self, connect: Callable[[], AbstractContextManager[psycopg.Connection]]) -> None:
        self._connect = connect

    def found(self, embedder: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The vectors kept for `keys`, as float32 rows; each found row's `used_at` is renewed (LRU)."""
        found: dict[bytes, np.ndarray] = {}
        if not keys:
            return found
        with self._connect() as conn:
            row = conn.execute("SELECT EXISTS (SELECT 1 FROM embedding_cache WHERE embedder = %s)", (embedder,))
            first = row.fetchone()
            if first is None or not first[0]:  # the common case: no stopped ingest of this embedder
                return found
            unique = list(dict.fromkeys(keys))
            for start in range(0, len(unique), LOOKUP_KEYS):
                cursor = conn.execute(
                    "UPDATE embedding_cache SET used_at = now() WHERE embedder = %s AND text_sha256 = ANY(%s) "
                    "RETURNING text_sha256, embedding",
                    (embedder, unique[start : start + LOOKUP_KEYS]),
                )
                for key, vector in cursor:
                    found[bytes(key)] = np.asarray(vector, dtype=np.float32)
        return found

    def holds(self, embedder_name: str) -> bool:
        """Whether any row is kept for an embedder of this name (of any dimension): one cheap look before
        an estimate works out the keys of a file's chunks (rag.ingest.resume.already_embedded)."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM embedding_cache WHERE starts_with(embedder, %s))", (embedder_name + ":",)
            ).fetchone()
        return bool(row and row[0])

    def keep(self, embedder: str, keys: Sequence[bytes], rows: np.ndarray) -> None:
        """Keep `rows` under `keys`, committed when this returns; a key kept already (the same text
        embedded by another ingest meanwhile) keeps its row."""
        if len(keys) != len(rows):
            raise ValueError(f"{len(keys)} keys for {len(rows)} rows")
        with self._connect() as conn, conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO embedding_cache (embedder, text_sha256, embedding) VALUES (%s, %s, %s) "
                "ON CONFLICT (embedder, text_sha256) DO NOTHING",
                [(embedder, key, np.asarray(row, dtype=np.float32)) for key, row in zip(keys, rows)],
            )

    def drop(self, embedder: str, keys: Sequence[bytes]) -> int:
        """Drop the rows of `keys` (a document stored with them); how many there were."""
        dropped = 0
        unique = list(dict.fromkeys(keys))
        with self._connect() as conn:
            for start in range(0, len(unique), LOOKUP_KEYS):
                cursor = conn.execute(
                    "DELETE FROM embedding_cache WHERE embedder = %s AND text_sha256 = ANY(%s)",
                    (embedder, unique[start : start + LOOKUP_KEYS]),
                )
                dropped += max(cursor.rowcount, 0)
        return dropped

    def prune(self, max_rows: int = MAX_ROWS, max_age_days: int = MAX_AGE_DAYS) -> int:
        """Drop rows unused for `max_age_days`, then the least recently used beyond `max_rows`; how many."""
        with self._connect() as conn:
            old = conn.execute(
                "DELETE FROM embedding_cache WHERE used_at < now() - make_interval(days => %s)", (max_age_days,)
            )
            extra = conn.execute(
                "DELETE FROM embedding_cache WHERE ctid = ANY(ARRAY("
                "SELECT ctid FROM embedding_cache ORDER BY used_at DESC OFFSET %s))",
                (max_rows,),
            )
            return max(old.rowcount, 0) + max(extra.rowcount, 0)

    def count(self, embedder: str | None = None) -> int:
        """Rows kept (of `embedder`'s, when given)."""
        with self._connect() as conn:
            if embedder is None:
                row = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()
            else:
                row = conn.execute("SELECT count(*) FROM embedding_cache WHERE embedder = %s", (embedder,)).fetchone()
        assert row is not None, "count(*) returns one row"
        return int(row[0])
