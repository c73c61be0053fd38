"""Chunk rows into `vector_store` by binary COPY: one round trip per document."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from rag.errors import StoreError
from rag.store.cjk_terms import split_terms

_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
_COPY_TRAILER = struct.pack("!h", -1)
_TABLES = ("vector_store", "bench_copy")
"""The only tables written: the chunks, and the benchmark's copy of their layout."""
INDEXED_CHARS = 100_000
"""Keyword search indexes a chunk's first this many characters. The one chunk Spring AI's splitter
leaves after max_num_chunks can hold most of a 200 MB file, and PostgreSQL refused its tsvector
("string is too long for tsvector (2222096 bytes, max 1048575 bytes)" from a 1.5 MB English text;
"invalid memory alloc request size 1599008468" from a 200 MB Chinese one): the document was not
stored. The content itself is stored whole."""


def copy_rows(
    conn: psycopg.Connection,
    rows: Iterable[tuple[Any, ...]],
    *,
    table: str = "vector_store",
    flush_bytes: int = 8 << 20,
    keywords: bool = True,
) -> int:
    """Binary COPY of (id, content, metadata, embedding, document_id) rows in one round trip. What keyword search
    indexes is derived from the content here (`cjk_terms.split_terms`, for all the rows at once): `search_text`,
    the text the server is to parse for its English terms (NULL where it would equal the content), and
    `cjk_terms`, the CJK bigrams as a tsvector (the table's trigger moves them into `fts`).

    The binary tuples are packed here rather than through per-value dumpers: for 768-d vectors
    that halves the client's share of an ingest. A field of `flush_bytes` or more goes to the COPY
    as it is rather than through the buffer (one copy fewer of a giant chunk: ~300 MB at 200 MB).

    `keywords` False (the benchmark's bare table only: `vector_store`'s trigger would parse a Chinese chunk's text
    as English words): neither is derived nor sent, as a vector-only store writes its rows.
    """
    if table not in _TABLES:
        raise StoreError(f"copy_rows cannot write to {table!r}")
    if not keywords and table == "vector_store":
        raise StoreError("copy_rows writes vector_store's keyword columns always")
    pack_field = struct.Struct("!i").pack
    written = 0
    with (
        conn.cursor() as cur,
        cur.copy(
            sql.SQL(
                "COPY {} (id, content, metadata, embedding, document_id, search_text, cjk_terms) "
                "FROM STDIN WITH (FORMAT BINARY)"
            ).format(sql.Identifier(table))
        ) as copy,
    ):
        buffer = bytearray(_COPY_HEADER)

        def field(value: bytes) -> None:
            buffer.extend(pack_field(len(value)))
            if len(value) < flush_bytes:
                buffer.extend(value)
                return
            copy.write(bytes(buffer))
            buffer.clear()
            copy.write(value)

        rows = list(rows)
        # Stored only where it differs (CJK, or a giant chunk's first INDEXED_CHARS): `fts` falls back to the
        # content, and a second copy of an English chunk would push its tsvector out of the row (see schema).
        terms = split_terms([row[1][:INDEXED_CHARS] for row in rows]) if keywords else [(None, None)] * len(rows)
        for (row_id, content, metadata, vector, document_id), (parsed, cjk) in zip(rows, terms, strict=True):
            meta = b"\x01" + json.dumps(metadata, ensure_ascii=False).encode("utf-8")
            vec = np.asarray(vector, dtype=">f4")
            vec_bytes = struct.pack("!hh", vec.shape[0], 0) + vec.tobytes()
            buffer += b"\x00\x07"
            buffer += pack_field(16) + row_id.bytes
            field(content.encode("utf-8"))
            buffer += pack_field(len(meta)) + meta
            buffer += pack_field(len(vec_bytes)) + vec_bytes
            buffer += pack_field(-1) if document_id is None else pack_field(16) + document_id.bytes
            if keywords and parsed is None and len(content) > INDEXED_CHARS:
                parsed = content[:INDEXED_CHARS]
            if parsed is None:
                buffer += pack_field(-1)
            else:
                field(parsed.encode("utf-8"))
            buffer += pack_field(-1) if cjk is None else pack_field(len(cjk)) + cjk
            written += 1
            if len(buffer) >= flush_bytes:
                copy.write(bytes(buffer))
                buffer.clear()
        buffer += _COPY_TRAILER
        copy.write(bytes(buffer))
    return written
