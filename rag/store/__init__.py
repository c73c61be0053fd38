"""PostgreSQL + pgvector: the schema, the embedded server, binary COPY, vector and keyword search.

`Store` is the way in; the modules each do one job: `schema` (DDL), `bm25_stats` (the keyword
statistics and the triggers that keep them), `embedded` (the bundled server), `binary_copy`
(chunk rows), `vector_sql` and `keyword_sql` (the searches: cosine, BM25), `records` (what
comes back), `vector_cache` (the vectors of ingests that did not finish, for the next one).
"""

from __future__ import annotations

from rag.store.binary_copy import copy_rows
from rag.store.embedded import embedded_server_uri, stop_embedded_server
from rag.store.graphs import ef_search_for
from rag.store.keyword_sql import DEFAULT_BM25, KEYWORD_CANDIDATES, Bm25
from rag.store.records import (
    Copy,
    Hit,
    KnowledgeBase,
    ServerInfo,
    StoredDocument,
    WriteResult,
    chunk_metadata,
    mismatch_message,
)
from rag.store.schema import MAX_DIMENSION
from rag.store.store import Store

__all__ = [
    "DEFAULT_BM25",
    "KEYWORD_CANDIDATES",
    "MAX_DIMENSION",
    "Bm25",
    "Copy",
    "Hit",
    "KnowledgeBase",
    "ServerInfo",
    "Store",
    "StoredDocument",
    "WriteResult",
    "chunk_metadata",
    "copy_rows",
    "ef_search_for",
    "embedded_server_uri",
    "mismatch_message",
    "stop_embedded_server",
]
