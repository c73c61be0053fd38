"""Retrieval on the public sets (rag/evaluation/data/eval): hit@5 and MRR per search mode beside a plain
BM25 peer (`rank-bm25`) on the same passages, and the embedding throughput of each local embedder.

Each passage is ingested as its own document (named by its pid) into a scratch knowledge base, and
every question searched through `rag.retrieve.search`, as the chat does. Vectors are cached on disk
under the data dir (embedder + text hash), so only the first run with an embedder pays for
embedding; questions are sampled evenly, the same ones every run.
"""

from __future__ import annotations

import dataclasses
import time

import psycopg

from benchmarks.bm25_peers import BM25Peer, Bm25sPeer
from benchmarks.report import Report
from rag.chunking import Chunk
from rag.embeddings import Embedder
from rag.evaluation.metrics import hit_rate, mean_reciprocal_rank
from rag.evaluation.sets import SETS, EvalSet, eval_set
from rag.evaluation.vectors import CachedEmbedder, DiskVectors
from rag.retrieve import MODES
from rag.settings import Settings
from rag.store import Store

QUESTIONS_PER_SET = 500
"""The issue's figures were measured on 500 questions per set; --quick takes 100."""
DEPTH = 10
"""Hits read per question: MRR counts a rank beyond it as 0."""


@dataclasses.dataclass(frozen=True)
class SetFigures:
    name: str
    embedder: str
    passages: int
    questions: int
    hit5: dict[str, float]
    """Per mode, and 'bm25' / 'bm25s' for the peers."""
    mrr: dict[str, float]
    peer_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    """Median milliseconds per question of each peer's ranking (in process, no database)."""


def bench_throughput(report: Report, quick: bool) -> None:
    """Passages embedded per second by each local embedder, on the same en_race passages."""
    from rag.embeddings import E5_NAME, WORDLLAMA_NAME, embedder_for_name, local_fallback_reason, throughput
    from rag.settings import get_settings

    n = 8 if quick else 24  # e5 reads ~340 tokens/s on 2 cores: 24 passages of ~350 tokens is ~25 s
    texts = [p.text for p in eval_set("en_race").passages[:n]]
    report.section(f"Embedding throughput of each local embedder ({n} en_race passages, ~350 tokens each)")
    for name in (WORDLLAMA_NAME, E5_NAME):
        reason = local_fallback_reason() if name == E5_NAME else None
        if reason is not None:
            report.line(f"{name}: skipped: {reason}")
            continue
        t = throughput(embedder_for_name(name, get_settings()), texts)
        report.line(
            f"{name}: {t.chunks_per_second:,.1f} passages/s ({t.texts} in {t.seconds:.2f} s, "
            f"process RSS {t.rss_mb:,.0f} MB)"
        )


def _ingest(store: Store, uri: str, knowledge: str, data: EvalSet, embedder: CachedEmbedder) -> None:
    texts = [p.text for p in data.passages]
    vectors = embedder.embed(texts)
    for passage, vector in zip(data.passages, vectors):
        store.write_document(
            knowledge=knowledge,
            embedder=embedder.name,
            dimension=embedder.dimension,
            chunk_settings={},
            filename=passage.key,
            path=None,
            data=passage.text.encode(),
            sha256=passage.key,
            page_count=1,
            chunks=[Chunk(0, passage.text, 1, 0, len(passage.text), (1,))],
            embeddings=vector[None, :],
        )
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("ANALYZE vector_store")  # as autovacuum would soon after an ingest


def measure_set(
    store: Store, uri: str, settings: Settings, data: EvalSet, embedder: CachedEmbedder, n_questions: int
) -> SetFigures:
    from rag.evaluation.quality import mode_quality
    from rag.retrieve.searching import query_vectors

    knowledge = f"eval-{data.name}-{embedder.name}"  # a knowledge base keeps the embedder it was built with
    _ingest(store, uri, knowledge, data, embedder)
    questions = data.sample(n_questions)
    query_vectors(embedder, [q.text for q in questions])  # in one batch, cached on disk for later runs
    quality = {m: mode_quality(store, settings, knowledge, questions, mode=m, depth=DEPTH) for m in MODES}
    pids = [p.key for p in data.passages]
    hit5 = {m: quality[m].hit_at_5 for m in MODES}
    mrr = {m: quality[m].mrr for m in MODES}
    peer_ms: dict[str, float] = {}
    for label, peer in (
        ("bm25", BM25Peer([p.text for p in data.passages])),
        ("bm25s", Bm25sPeer([p.text for p in data.passages])),
    ):
        peer_ranks, took = [], []
        for q in questions:
            start = time.perf_counter()
            ranked = [pids[i] for i in peer.rank(q.text, DEPTH)]
            took.append(time.perf_counter() - start)
            peer_ranks.append(ranked.index(q.file) + 1 if q.file in ranked else None)
        hit5[label], mrr[label] = hit_rate(peer_ranks, 5), mean_reciprocal_rank(peer_ranks)
        peer_ms[label] = 1000 * sorted(took)[len(took) // 2]
    return SetFigures(data.name, embedder.name, len(data.passages), len(questions), hit5, mrr, peer_ms)


def bench_retrieval(report: Report, uri: str, settings: Settings, quick: bool = False) -> list[SetFigures]:
    from rag import retrieve

    local = dataclasses.replace(settings, database_url=uri)
    bench_throughput(report, quick)
    n_questions = 100 if quick else QUESTIONS_PER_SET
    configured = retrieve.embedder_named_or_default(local)
    # The configured embedder; in a full run the other local one too (WordLlama's vectors take
    # seconds; knowledge bases built with it keep it).
    embedders = [configured] + ([] if quick else [e for e in _runnable_local(local) if e.name != configured.name])
    figures: list[SetFigures] = []
    store = Store(uri)
    try:
        for embedder in embedders:
            figures += _quality_table(report, store, uri, local, embedder, n_questions)
    finally:
        store.close()
    return figures


def _runnable_local(settings: Settings) -> list[Embedder]:
    from rag.embeddings import E5_NAME, WORDLLAMA_NAME, embedder_for_name, local_fallback_reason

    names = [WORDLLAMA_NAME] + ([E5_NAME] if local_fallback_reason() is None else [])
    return [embedder_for_name(name, settings) for name in names]


def _quality_table(
    report: Report, store: Store, uri: str, settings: Settings, embedder: Embedder, n_questions: int
) -> list[SetFigures]:
    from rag import retrieve

    cache = DiskVectors(settings.data_dir / "eval-vectors", embedder)
    report.section(
        f"Retrieval on the public sets: hit@5 / MRR@{DEPTH}, embedder {embedder.name}, up to "
        f"{n_questions} questions per set (evenly sampled), vectors cached in {cache.path}"
    )
    report.line(
        f"{'set':14} {'passages':>8} {'questions':>9}  " + "  ".join(f"{m:>13}" for m in (*MODES, "rank-bm25", "bm25s"))
    )
    figures: list[SetFigures] = []
    with retrieve.use_embedder(CachedEmbedder(cache)) as cached:
        for name in SETS:
            start = time.perf_counter()
            f = measure_set(store, uri, settings, eval_set(name), cached, n_questions)
            figures.append(f)
            cells = "  ".join(f"{f.hit5[m]:.3f} / {f.mrr[m]:.3f}" for m in (*MODES, "bm25", "bm25s"))
            report.line(f"{name:14} {f.passages:8} {f.questions:9}  {cells}   ({time.perf_counter() - start:.0f} s)")
    report.line(f"texts embedded this run: {cache.embedded} (the rest read from the cache)")
    for f in figures:
        best = max(f.hit5["vector"], f.hit5["keyword"])
        checks = [
            ("hybrid >= max(vector, keyword)", f.hit5["hybrid"] >= best),
            ("hybrid >= both BM25 peers", f.hit5["hybrid"] >= max(f.hit5["bm25"], f.hit5["bm25s"])),
            ("keyword >= 0.98 x BM25 peer", f.hit5["keyword"] >= 0.98 * f.hit5["bm25"]),
        ]
        report.line(
            f"{f.name}: "
            + "; ".join(f"{label} {'met' if ok else 'NOT met'}" for label, ok in checks)
            + f" (peers' ranking p50 in process: rank-bm25 {f.peer_ms['bm25']:.1f} ms, "
            f"bm25s {f.peer_ms['bm25s']:.2f} ms)"
        )
    return figures
