"""The vectors the knowledge bases already hold for given chunk texts, so that the Chunk Lab embeds only the rest.

A stored chunk's vector is what its ingest's embedder returned for `embed([chunk.text])` (a passage:
rag.ingest.pipeline embeds `c.text` for each chunk, and writes `chunk.text` as `content`), which is
what the Chunk Lab's check asks the same embedder for (rag.evaluation.cache). So a text is matched on
its exact content, in knowledge bases built by an embedder of the same name and dimension; nothing
else (a prefix, a cut to the model's window) can differ, as the embedder does both the same way in
both places. Looking up a three-setting check of a 500 KB text (1,706 texts) took 75 ms here, where
embedding the 137 chunks found would take e5 minutes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import numpy as np
import psycopg

LOOKUP_TEXTS = 1_000
"""Texts asked for in one statement: a chunk is up to a few KB, so ~1-4 MB of parameters at most."""


def stored_vectors(
    connect: Callable[[], AbstractContextManager[psycopg.Connection]],
    embedder: str,
    dimension: int,
    texts: Sequence[str],
) -> dict[str, np.ndarray]:
    """Text -> float32 vector for each of `texts` that a knowledge base built with `embedder` at
    `dimension` holds as a chunk (one of them when several do: the same embedder gives the same vector)."""
    found: dict[str, np.ndarray] = {}
    unique = list(dict.fromkeys(texts))
    if not unique:
        return found
    with connect() as conn:
        for start in range(0, len(unique), LOOKUP_TEXTS):
            cursor = conn.execute(
                "SELECT DISTINCT ON (v.content) v.content, v.embedding FROM vector_store v "
                "JOIN knowledge_bases k ON k.name = v.metadata->>'knowledge' "
                "WHERE k.embedder = %s AND k.dimension = %s AND vector_dims(v.embedding) = %s "
                "AND v.content = ANY(%s)",
                (embedder, dimension, dimension, unique[start : start + LOOKUP_TEXTS]),
            )
            for content, vector in cursor:
                found[content] = np.asarray(vector, dtype=np.float32)
    return found
