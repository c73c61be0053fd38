"""Searching: HNSW against the exact scan (speed and recall), and a chat turn's cost before the model."""
from __future__ import annotations

import random
import statistics
import time
import uuid
from collections.abc import Sequence

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from rag.bench.corpus import clustered, question_about, sentences
from rag.bench.report import Report
from rag.llms.counting import CL100K
from rag.store import Store, copy_rows


def bench_search(report: Report, uri: str, quick: bool) -> None:
    n, dim, k = (20_000 if quick else 100_000), 768, 10
    kbs = 10
    report.section(f"Top-{k} search over {n:,} vectors ({dim}-d), HNSW vs exact scan")
    rng = np.random.default_rng(11)
    centers = rng.normal(size=(max(50, n // 100), dim)).astype(np.float32)
    store = Store(uri)
    try:
        with psycopg.connect(uri) as conn:
            register_vector(conn)
            conn.execute("SET maintenance_work_mem = '1GB'")
            batch = 10_000
            for start in range(0, n, batch):
                vectors = clustered(min(batch, n - start), dim, rng, centers)
                texts = sentences(len(vectors), seed=start)
                rows = ((uuid.uuid4(), texts[i],
                         {"knowledge": f"kb{(start + i) % kbs}", "chunk_index": start + i,
                          "original_filename": f"doc{(start + i) // 50}.pdf", "pages": [1 + i % 30]}, v, None)
                        for i, v in enumerate(vectors))
                copy_rows(conn, rows)
            for i in range(kbs):
                # The knowledge-base bookkeeping a real ingest writes; search sizes ef_search from it.
                conn.execute("INSERT INTO knowledge_bases (name, embedder, dimension, chunk_settings) "
                             "VALUES (%s, 'bench', %s, '{}')", (f"kb{i}", dim))
                conn.execute("INSERT INTO documents (id, knowledge, original_filename, sha256, content, "
                             "size_bytes, page_count, chunk_count, chunk_settings) "
                             "VALUES (%s, %s, 'bench', '', '', 0, 1, %s, '{}')",
                             (uuid.uuid4(), f"kb{i}", n // kbs))
            conn.commit()
            t0 = time.perf_counter()
            conn.execute(f"CREATE INDEX vector_store_hnsw_{dim} ON vector_store USING hnsw "
                         f"((embedding::vector({dim})) vector_cosine_ops) WHERE vector_dims(embedding) = {dim}")
            conn.execute("ANALYZE vector_store")
            conn.commit()
            report.line(f"HNSW build: {time.perf_counter() - t0:.1f} s (m=16, ef_construction=64)")
        plan = store.explain_search(dim, "kb3", k)
        report.line(f"KB-filtered plan uses the HNSW index: {f'vector_store_hnsw_{dim}' in plan}")
        queries = clustered(60 if quick else 100, dim, rng, centers)
        ours_p: list[tuple[str | None, tuple[float, float]]] = []
        for label, names in (("no filter", [f"kb{i}" for i in range(kbs)]), ("KB filter, 10% of rows", ["kb3"])):
            approx_t, approx_ids = [], []
            exact_t, exact_ids = [], []
            for q in queries:
                t = time.perf_counter()
                hits = store.search(q, names, top_k=k)
                approx_t.append(time.perf_counter() - t)
                approx_ids.append({h.id for h in hits})
            for q in queries[:30]:
                t = time.perf_counter()
                hits = store.search(q, names, top_k=k, exact=True)
                exact_t.append(time.perf_counter() - t)
                exact_ids.append({h.id for h in hits})
            recall = statistics.mean(len(a & e) / k for a, e in zip(approx_ids, exact_ids))
            p50 = (statistics.median(approx_t), statistics.median(exact_t))
            p95 = (float(np.percentile(approx_t, 95)), float(np.percentile(exact_t, 95)))
            report.line(f"[{label}] p50 {p50[0] * 1000:.1f} ms vs exact {p50[1] * 1000:.1f} ms -> "
                        f"{p50[1] / p50[0]:.1f}x; p95 {p95[0] * 1000:.1f} ms vs {p95[1] * 1000:.1f} ms -> "
                        f"{p95[1] / p95[0]:.1f}x; recall@{k} vs exact {recall:.3f} "
                        f"(goal >= 0.95: {'met' if recall >= 0.95 else 'NOT met'}); "
                        f"rows returned {min(len(a) for a in approx_ids)}..{max(len(a) for a in approx_ids)}")
            ours_p.append((names[0] if len(names) == 1 else None, (p50[0], p95[0])))
        _bench_chat_overhead(report, store, queries, k, kbs)
        _bench_keyword_exact(report, store, [f"kb{i}" for i in range(kbs)], 20 if quick else 40)
        # Last, and its tables dropped after: another 100,000 rows and an HNSW index in the same database
        # evict ours from the cache (keyword p95 went from ~30 to 48 ms when it ran first).
        from rag.bench.peers import drop_langchain_tables, langchain_search

        langchain_search(report, uri, dim, queries, k, ours_p)
        drop_langchain_tables(uri)
    finally:
        store.close()


class _KnownVector:
    """An embedder that answers with the query vector the bench already has: the chat-turn figures
    then leave out the embedder's own time, which depends on the model and not on this code."""

    name = "bench"
    max_input_tokens = None

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.vector = np.zeros(dimension, dtype=np.float32)

    def embed(self, texts: Sequence[str], progress: object = None) -> np.ndarray:
        return np.tile(self.vector, (len(texts), 1))


def _bench_chat_overhead(report: Report, store: Store, queries: np.ndarray, k: int, kbs: int) -> None:
    """What a chat turn costs before the model: retrieval (each mode, through retrieve.search as
    the chat calls it) and prompt assembly."""
    from rag import generate, retrieve
    from rag.settings import get_settings

    names = [f"kb{i}" for i in range(kbs)]
    rng = random.Random(3)
    passages = sentences(len(queries), seed=0)  # the first rows stored are these texts
    known = _KnownVector(queries.shape[1])
    settings = get_settings()
    timings: dict[str, list[float]] = {"vector": [], "keyword": [], "hybrid": [], "hybrid + prompt": []}
    with retrieve.use_embedder(known):
        for q, passage in zip(queries, passages):
            question = question_about(rng, passage)
            known.vector = np.asarray(q, dtype=np.float32)
            for mode in ("vector", "keyword"):
                t = time.perf_counter()
                retrieve.search(store, settings, question, names, top_k=8, mode=mode)
                timings[mode].append(time.perf_counter() - t)
            t = time.perf_counter()
            fused = retrieve.search(store, settings, question, names, top_k=8, mode="hybrid")
            timings["hybrid"].append(time.perf_counter() - t)
            generate.pack_prompt(question, generate.number_sources(fused), counter=CL100K, limit=8192)
            timings["hybrid + prompt"].append(time.perf_counter() - t)
    report.line(f"chat turn before the model, {len(queries)} questions (query embedding excluded: it is the "
                "embedder's time):")
    for label, values in timings.items():
        p95 = float(np.percentile(values, 95))
        limit = {"keyword": 0.03, "hybrid + prompt": 0.05}.get(label)
        goal = f" (goal p95 < {limit * 1000:.0f} ms: " + ("met)" if p95 < limit else "NOT met)") if limit else ""
        report.line(f"  {label:16} p50 {statistics.median(values) * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms{goal}")


def _bench_keyword_exact(report: Report, store: Store, names: list[str], count: int) -> None:
    """BM25 over the bounded candidates (the rarest query terms) against scoring every chunk that
    holds any query term: the speed-up, and how many of the exact top 8 the bounded search keeps."""
    rng = random.Random(5)
    questions = [question_about(rng, p) for p in sentences(count, seed=0)]
    ours, peer, kept = [], [], []
    for question in questions:
        t = time.perf_counter()
        bounded = store.keyword_search(question, names, top_k=8)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        exact = store.keyword_search(question, names, top_k=8, exact=True)
        peer.append(time.perf_counter() - t)
        kept.append(len({h.id for h in bounded} & {h.id for h in exact}) / max(1, len(exact)))
    report.ratio(f"BM25 keyword p50, bounded candidates vs every matching chunk ({count} questions; "
                 f"top-8 kept {statistics.mean(kept):.3f})", statistics.median(ours), statistics.median(peer), 10)
