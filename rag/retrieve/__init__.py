"""Question -> query embedding -> hits, across knowledge bases built with different embedders."""
from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

from rag.retrieve import filters
from rag.embeddings import Embedder, embedder_for_name, resolve_embedder
from rag.errors import RagError
from rag.settings import Settings
from rag.store import Hit, Store

_embedders: dict[str, Embedder] = {}
_embedders_lock = threading.Lock()
_KEYWORD_WORKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="keyword-search")


def embedder_named(name: str, settings: Settings) -> Embedder:
    """One embedder per name per process: the local model loads its weights once."""
    with _embedders_lock:
        if name not in _embedders:
            _embedders[name] = embedder_for_name(name, settings)
        return _embedders[name]


def embedder_named_or_default(settings: Settings) -> Embedder:
    """The configured embedder (RAG_EMBEDDER), resolved once per process."""
    with _embedders_lock:
        if "" not in _embedders:
            _embedders[""] = resolve_embedder(settings)
        chosen = _embedders[""]
    with _embedders_lock:
        return _embedders.setdefault(chosen.name, chosen)


MODES = ("vector", "keyword", "hybrid")
DEFAULT_MODE = "hybrid"


@dataclass(frozen=True)
class Fusion:
    """Weighted reciprocal rank fusion: score = sum of weight / (k + rank) over the two lists."""

    k: int = 60
    vector_weight: float = 1.0
    keyword_weight: float = 1.0
    depth: int = 50
    """Candidates taken from each list before fusing (at least top_k)."""


DEFAULT_FUSION = Fusion()


def fuse(vector_hits: Sequence[Hit], keyword_hits: Sequence[Hit], fusion: Fusion, top_k: int) -> list[Hit]:
    scores: dict[object, float] = {}
    merged: dict[object, Hit] = {}
    for weight, hits in ((fusion.vector_weight, vector_hits), (fusion.keyword_weight, keyword_hits)):
        for rank, hit in enumerate(hits, 1):
            scores[hit.id] = scores.get(hit.id, 0.0) + weight / (fusion.k + rank)
            seen = merged.get(hit.id)
            merged[hit.id] = hit if seen is None else replace(
                seen,
                vector_score=seen.vector_score if seen.vector_score is not None else hit.vector_score,
                keyword_score=seen.keyword_score if seen.keyword_score is not None else hit.keyword_score,
            )
    ranked = sorted(scores, key=lambda key: scores[key], reverse=True)[:top_k]
    return [replace(merged[key], score=scores[key]) for key in ranked]


def search(
    store: Store,
    settings: Settings,
    query: str,
    knowledge_bases: Sequence[str],
    *,
    top_k: int = 5,
    min_score: float | None = None,
    filter_expression: str | None = None,
    mode: str = DEFAULT_MODE,
    fusion: Fusion = DEFAULT_FUSION,
) -> list[Hit]:
    """Top hits for a query; vector search uses each knowledge base's own embedder.

    `min_score` is a minimum cosine similarity: it applies to vector hits (also inside
    hybrid); keyword hits are kept on their own merit.
    """
    if mode not in MODES:
        raise RagError(f"unknown search mode {mode!r} (choose one of: {', '.join(MODES)})")
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
    names = list(dict.fromkeys(knowledge_bases))
    depth = top_k if mode != "hybrid" else max(top_k, fusion.depth)
    vector_hits: list[Hit] = []
    keyword_hits: list[Hit] = []
    # Hybrid: the keyword search runs on its own connection while the query is embedded and the
    # vectors are searched, so a turn waits for the slower of the two rather than for both.
    keyword_future: Future[list[Hit]] | None = None
    if mode == "hybrid":
        keyword_future = _KEYWORD_WORKERS.submit(store.keyword_search, query, names, top_k=depth, filter=sql_filter)
    if mode in ("vector", "hybrid"):
        by_embedder: dict[str, list[str]] = {}
        for name in names:
            by_embedder.setdefault(known[name].embedder, []).append(name)
        for embedder_name, group in by_embedder.items():
            vector = embedder_named(embedder_name, settings).embed([query])[0]
            vector_hits.extend(store.search(vector, group, top_k=depth, min_score=min_score, filter=sql_filter))
        vector_hits.sort(key=lambda h: h.score, reverse=True)
        vector_hits = vector_hits[:depth]
    if keyword_future is not None:
        keyword_hits = keyword_future.result()
    elif mode == "keyword":
        keyword_hits = store.keyword_search(query, names, top_k=depth, filter=sql_filter)
    if mode == "vector":
        return vector_hits[:top_k]
    if mode == "keyword":
        return keyword_hits[:top_k]
    return fuse(vector_hits, keyword_hits, fusion, top_k)


@dataclass(frozen=True)
class ModeQuality:
    mode: str
    hit_at_1: float
    hit_at_5: float
    mrr: float
    ranks: tuple[int | None, ...]
    """1-based rank of the expected document per question (None: not in the top results)."""


def mode_quality(
    store: Store,
    settings: Settings,
    knowledge_base: str,
    questions: Sequence[tuple[str, str]],
    *,
    mode: str,
    fusion: Fusion = DEFAULT_FUSION,
    depth: int = 10,
) -> ModeQuality:
    """Retrieval quality of one search mode: (question, expected original_filename) pairs."""
    ranks: list[int | None] = []
    for question, expected in questions:
        hits = search(store, settings, question, [knowledge_base], top_k=depth, mode=mode, fusion=fusion)
        names = [h.original_filename for h in hits]
        ranks.append(names.index(expected) + 1 if expected in names else None)
    n = max(len(ranks), 1)
    return ModeQuality(
        mode=mode,
        hit_at_1=sum(1 for r in ranks if r is not None and r <= 1) / n,
        hit_at_5=sum(1 for r in ranks if r is not None and r <= 5) / n,
        mrr=sum(1 / r for r in ranks if r is not None) / n,
        ranks=tuple(ranks),
    )
