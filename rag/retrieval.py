"""Question -> query embedding -> hits, across knowledge bases built with different embedders."""
from __future__ import annotations

import threading
from collections.abc import Sequence

from rag import filters
from rag.embeddings import Embedder, embedder_for_name
from rag.errors import RagError
from rag.settings import Settings
from rag.store import Hit, Store

_embedders: dict[str, Embedder] = {}
_embedders_lock = threading.Lock()


def embedder_named(name: str, settings: Settings) -> Embedder:
    """One embedder per name per process: the local model loads its weights once."""
    with _embedders_lock:
        if name not in _embedders:
            _embedders[name] = embedder_for_name(name, settings)
        return _embedders[name]


def search(
    store: Store,
    settings: Settings,
    query: str,
    knowledge_bases: Sequence[str],
    *,
    top_k: int = 5,
    min_score: float | None = None,
    filter_expression: str | None = None,
) -> list[Hit]:
    """Top hits by cosine similarity; each knowledge base is queried with its own embedder."""
    if not query.strip():
        raise RagError("the query is empty: type a question or some keywords")
    if not knowledge_bases:
        raise RagError("no knowledge base chosen: pick at least one")
    if top_k < 1:
        raise RagError(f"top-k must be at least 1, got {top_k}")
    sql_filter = filters.to_sql(filter_expression) if filter_expression and filter_expression.strip() else None
    known = {kb.name: kb for kb in store.list_knowledge_bases()}
    missing = [name for name in knowledge_bases if name not in known]
    if missing:
        existing = ", ".join(sorted(known)) or "none yet; ingest a file first"
        raise RagError(f"no knowledge base named {missing[0]!r} (existing: {existing})")
    by_embedder: dict[str, list[str]] = {}
    for name in dict.fromkeys(knowledge_bases):
        by_embedder.setdefault(known[name].embedder, []).append(name)
    hits: list[Hit] = []
    for embedder_name, names in by_embedder.items():
        vector = embedder_named(embedder_name, settings).embed([query])[0]
        hits.extend(store.search(vector, names, top_k=top_k, min_score=min_score, filter=sql_filter))
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits[:top_k]
