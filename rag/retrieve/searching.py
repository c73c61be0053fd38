"""Question -> hits: vector, keyword or hybrid search across knowledge bases.

Knowledge bases built with different embedders are searched in one call: the question is
embedded once per embedder, each group of knowledge bases searched in its own vector space.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from rag.embeddings import Embedder
from rag.errors import RagError
from rag.query import filters
from rag.retrieve import copies
from rag.retrieve.embedders import embedder_named
from rag.retrieve.fusion import DEFAULT_FUSION, Fusion, fuse
from rag.retrieve.modes import DEFAULT_MODE, MODES
from rag.settings import Settings
from rag.store import Hit, Store
from rag.text import Text

_KEYWORD_WORKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="keyword-search")


MAX_TOP_K = 100
"""The most hits one search returns (MCP's tools allow 50; the pages' sliders less)."""


def query_vectors(embedder: Embedder, queries: Sequence[str]) -> np.ndarray:
    """The vectors search compares chunks with: `embed_queries` where the embedder encodes a question
    differently from a passage (e5's "query: " prefix), else `embed`."""
    embed = getattr(embedder, "embed_queries", None) or embedder.embed
    return embed(list(queries))


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
    keep_copies: bool = False,
) -> list[Hit]:
    """Top hits for a query; vector search uses each knowledge base's own embedder. Copies of a passage in
    several chunks are kept once (`copies.keep_once`), unless `keep_copies` (a measure that asks for one
    document's chunk: rag.evaluation, the Chunk Lab's checks).

    `min_score` is a minimum cosine similarity: it applies to vector hits (also inside
    hybrid); keyword hits are kept on their own merit.
    """
    if mode not in MODES:
        raise RagError(
            Text("unknown search mode {mode} (choose one of: {modes})", mode=repr(mode), modes=", ".join(MODES))
        )
    if not query.strip():
        raise RagError(Text("the query is empty: type a question or some keywords"))
    if not knowledge_bases:
        raise RagError(Text("no knowledge base chosen: pick at least one"))
    if top_k < 1:
        raise RagError(Text("top-k must be at least 1, got {top_k}", top_k=top_k))
    if top_k > MAX_TOP_K:  # 10^9 returned the whole knowledge base
        raise RagError(Text("top-k must be at most {most}, got {top_k}", most=MAX_TOP_K, top_k=top_k))
    sql_filter = filters.to_sql(filter_expression) if filter_expression and filter_expression.strip() else None
    known = {kb.name: kb for kb in store.list_knowledge_bases()}
    missing = [name for name in knowledge_bases if name not in known]
    if missing:
        if known:
            raise RagError(
                Text(
                    "no knowledge base named {name} (existing: {existing})",
                    name=repr(missing[0]),
                    existing=", ".join(sorted(known)),
                )
            )
        raise RagError(
            Text("no knowledge base named {name} (existing: none yet; ingest a file first)", name=repr(missing[0]))
        )
    names = list(dict.fromkeys(knowledge_bases))

    @functools.cache
    def groups() -> list[tuple[list[str], np.ndarray]]:
        """Each embedder's knowledge bases and the question's vector in its space: embedded once, however deep
        the lists are read (`_ranked` asks for it after it has started the keyword search)."""
        by_embedder: dict[str, list[str]] = {}
        for name in names:
            by_embedder.setdefault(known[name].embedder, []).append(name)
        return [
            (group, query_vectors(embedder_named(embedder_name, settings), [query])[0])
            for embedder_name, group in by_embedder.items()
        ]

    room = 1 if keep_copies else copies.ROOM
    hits, full = _ranked(
        store, query, names, groups, top_k, top_k * room, min_score, sql_filter, mode, fusion, room > 1
    )
    if not keep_copies and len(hits) < top_k and full:  # copies filled what was read: read deeper once
        hits, _ = _ranked(
            store, query, names, groups, top_k, top_k * copies.DEEPER, min_score, sql_filter, mode, fusion
        )
    return hits


def _ranked(
    store: Store,
    query: str,
    names: list[str],
    groups: Callable[[], list[tuple[list[str], np.ndarray]]],
    top_k: int,
    wanted: int,
    min_score: float | None,
    sql_filter: filters.SqlFilter | None,
    mode: str,
    fusion: Fusion,
    collapse: bool = True,
) -> tuple[list[Hit], bool]:
    """`top_k` hits of `wanted` candidates read from each list (the vector list searched with each group of
    knowledge bases' question vector, `groups()`), copies of a passage kept once (`copies.keep_once`, where
    `collapse`); and whether a list held all `wanted` (more may lie deeper)."""
    wanted = min(MAX_TOP_K, wanted)
    depth = wanted if mode != "hybrid" else max(wanted, fusion.depth)
    # Deeper where copies of a passage in several bases may fill the list (`once_across_bases`), cut back after.
    fetch = depth * min(len(names), COPIES)
    vector_hits: list[Hit] = []
    keyword_hits: list[Hit] = []
    # Hybrid: the keyword search runs on its own connection while the query is embedded and the
    # vectors are searched, so a turn waits for the slower of the two rather than for both.
    keyword_future: Future[list[Hit]] | None = None
    if mode == "hybrid":
        keyword_future = _KEYWORD_WORKERS.submit(store.keyword_search, query, names, top_k=fetch, sql_filter=sql_filter)
    if mode in ("vector", "hybrid"):
        for group, vector in groups():
            vector_hits.extend(store.search(vector, group, top_k=fetch, min_score=min_score, sql_filter=sql_filter))
        vector_hits.sort(key=lambda h: h.score, reverse=True)
    if keyword_future is not None:
        keyword_hits = keyword_future.result()
    elif mode == "keyword":
        keyword_hits = store.keyword_search(query, names, top_k=fetch, sql_filter=sql_filter)
    vector_hits = once_across_bases(vector_hits, names)[:depth]
    keyword_hits = once_across_bases(keyword_hits, names)[:depth]
    full = wanted < MAX_TOP_K and max(len(vector_hits), len(keyword_hits)) >= depth
    vector_hits = [replace(h, vector_rank=rank) for rank, h in enumerate(vector_hits, 1)]
    keyword_hits = [replace(h, keyword_rank=rank) for rank, h in enumerate(keyword_hits, 1)]

    def once(hits: list[Hit]) -> list[Hit]:
        return copies.keep_once(hits, top_k) if collapse else hits[:top_k]

    if mode == "vector":
        return once(vector_hits), full
    if mode == "keyword":
        return once(keyword_hits), full
    kept = once(fuse(vector_hits, keyword_hits, fusion, wanted))
    return [replace(h, fused_rank=rank) for rank, h in enumerate(kept, 1)], full  # the ranks of what is shown


COPIES = 3
"""Copies of a passage in as many knowledge bases that a search of several still gives top_k others beside: each
list is read this many times deeper (at most), which costs the vector search a wider HNSW beam."""


def once_across_bases(hits: Sequence[Hit], names: Sequence[str]) -> list[Hit]:
    """`hits` (one search's list, best first) with each passage that several of the knowledge bases `names` hold
    word for word kept once, from the first of `names` that holds it here: a base imported beside the one it was
    exported from, both searched, gave the model the same passage three times and left a fourth source out for
    room (the Chromium walk of issue 31). One base's own copies are all kept. The same base is chosen in the
    vector and the keyword list, so that fusing them joins its two ranks as for any other passage."""
    if len(names) < 2:
        return list(hits)
    order = {name: i for i, name in enumerate(names)}
    first: dict[str, str] = {}
    for hit in hits:
        text = " ".join(hit.content.split())
        held = first.get(text)
        if held is None or order.get(hit.knowledge, len(order)) < order.get(held, len(order)):
            first[text] = hit.knowledge
    return [hit for hit in hits if first[" ".join(hit.content.split())] == hit.knowledge]
