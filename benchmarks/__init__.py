"""`python -m rag bench`: each figure is a ratio against a peer measured in the same run.

Not part of the library: `rag` never imports this package except in the `bench` command, so the peers
(LangChain, LlamaIndex, rank-bm25, bm25s, Playwright: the `bench` optional dependencies) are needed only
here. Speed goals live here, never in timed tests. The database benchmarks run in a scratch
database (`rag_bench_<pid>`) on the configured server, dropped afterwards. One module per
family: `splitting` (chunking and the cold CLI), `database` (writes), `search` (HNSW, a chat
turn before the model; `scale`: a million rows at 768-d and 384-d in databases kept between runs,
made by `datasets`), `external` (a second PostgreSQL over TCP standing for a managed one),
`retrieval` (the public sets: hit@5 and MRR per mode beside the BM25 peers of `bm25_peers`, embedding
throughput), `embed` (e5's chunks/s, tokens/s and GFLOP/s against a float32 BLAS bound measured in the
same run, beside WordLlama, issue #32), `quality` (the embedded model's answers), `badges` (the green badge
on a labelled set of right and wrong answers: words alone against the claim check; no model),
`conversation` (questions asked one after another in one conversation against the same asked each alone,
on the embedded model: right answers, gold cited, green but wrong, and the stage that lost each wrong
answer), `tune` (the Chunk Lab's tuner: settings ranked by generated questions against the sets' real
ones, issue #30), `gpu` (the sampler's cost),
`readers` (document readers' throughput, OCR pages/s and accuracy), `ocr` (OCR character error
rate of Chinese and English scans per dpi beside upscaling, chi_sim_vert and RapidOCR, issue #33),
`peers` (whole ingest pipelines against LangChain's and LlamaIndex's on the same PDFs), `memory` (peak
RSS of ingesting a big TXT and PDF), `sessions` (peak RSS of the running app with one and three browser sessions),
`portability` (a knowledge base exported and imported whole against pg_dump and pg_restore, issue #31).
"""

from __future__ import annotations

from typing import TextIO

from benchmarks.report import Report
from rag.errors import RagError
from rag.settings import Settings

BENCHES = (
    "rechunk",
    "spring",
    "cli",
    "documents",
    "embed",
    "gpu",
    "insert",
    "search",
    "scale",
    "external",
    "peers",
    "memory",
    "retrieval",
    "answers",
    "badges",
    "conversation",
    "tune",
    "sessions",
    "portability",
)


DATABASE_BENCHES = frozenset(
    ("insert", "search", "scale", "external", "peers", "memory", "retrieval", "conversation", "sessions", "portability")
)
"""The benchmarks that need the database (started once for all of them)."""

SLOW_IN_QUICK = {
    "answers": "it loads the embedded chat model and has it write 8 answers on the CPU (minutes)",
    "conversation": "it loads the embedded chat model and has it answer 2 conversations of 4 questions twice (in one "
    "conversation, then each alone) and rewrite the follow-ups on the CPU (10-20 minutes)",
    "tune": "it loads the embedded chat model and has it write 6 questions per language on the CPU (5-15 minutes "
    "on a busy machine; cached for later runs)",
    "external": "it starts a second PostgreSQL, ingests with one and two writers on both and builds four "
    "HNSW indexes (minutes)",
}
"""Benchmarks whose small form still takes minutes (`scale` and `sessions` skip themselves in --quick)."""


def bench_gpu(report: Report, quick: bool) -> None:
    """The GPU sampler's cost per tick against the two NVML calls every GPU monitor makes."""
    from benchmarks.gpu import tick_cost

    report.section("GPU sampler: one tick vs bare nvmlDeviceGetMemoryInfo + nvmlDeviceGetUtilizationRates")
    cost = tick_cost(ticks=800 if quick else 4000, rounds=3 if quick else 5)
    if cost.skipped:
        report.line(f"skipped: {cost.skipped}")
        return
    met = cost.ratio <= 1.5
    report.line(
        f"{cost.devices} GPU(s), {cost.ticks} ticks per round: sampler {cost.ours * 1e6:.1f} µs/tick, "
        f"bare calls {cost.peer * 1e6:.1f} µs -> {cost.ratio:.2f}x (goal <= 1.5x: {'met' if met else 'NOT met'})"
    )


def run(
    settings: Settings,
    *,
    out: TextIO,
    quick: bool = False,
    only: list[str] | None = None,
    scales: list[str] | None = None,
) -> int:
    chosen = only or list(BENCHES)
    unknown = [b for b in chosen if b not in BENCHES]
    if unknown:
        raise RagError(f"unknown benchmark {unknown[0]!r} (choose from: {', '.join(BENCHES)})")
    if scales:
        from benchmarks.search import parse_scale

        sizes = [parse_scale(s) for s in scales]  # before any benchmark runs: a typo costs nothing
    report = Report(out)
    report.line(f"# rag bench{' (quick)' if quick else ''}: ratios are peer time / our time, same process")
    if quick and only is None:  # a plain --quick is a smoke run of under two minutes
        for name, why in SLOW_IN_QUICK.items():
            if name not in chosen:
                continue
            chosen.remove(name)
            report.section(f"{name}: skipped in a plain --quick")
            report.line(f"skipped: {why}; `--quick --only {name}` runs its small form")
    if {"rechunk", "spring", "cli"} & set(chosen):
        from benchmarks import splitting

        if "rechunk" in chosen:
            splitting.bench_rechunk(report, quick)
        if "spring" in chosen:
            splitting.bench_spring(report, quick)
        if "cli" in chosen:
            splitting.bench_cold_cli(report, quick)
    if "documents" in chosen:
        from benchmarks.readers import bench_documents

        bench_documents(report, quick)
    if "embed" in chosen:
        from benchmarks.embed import bench_embed

        bench_embed(report, quick)
    if "gpu" in chosen:
        bench_gpu(report, quick)
    if "answers" in chosen:
        from benchmarks.quality import bench_answers

        bench_answers(report, quick)
    if "badges" in chosen:
        from benchmarks.badges import bench_badges
        from benchmarks.conversation import ANSWERS_FILE

        bench_badges(report, quick, answers=settings.data_dir / "bench" / ANSWERS_FILE)
    if "tune" in chosen:
        from benchmarks.tune import bench_tune

        bench_tune(report, settings, quick)
    if DATABASE_BENCHES & set(chosen):
        from benchmarks import database, external, memory, peers, retrieval, search, sessions
        from rag.store import Store, embedded_server_uri

        base = settings.database_url or embedded_server_uri(settings.pgdata)
        uri, drop = database.scratch_database(base)
        try:
            Store(uri).close()  # schema
            if "insert" in chosen:
                database.bench_insert(report, uri, quick)
            if "search" in chosen:
                search.bench_search(report, uri, quick)
            if "scale" in chosen:
                search.bench_scale(report, base, quick, sizes if scales else search.SCALES)
            if "external" in chosen:
                external.bench_external(report, base, quick, database.scratch_database)
            if "peers" in chosen:
                peers.bench_ingest_peers(report, base, quick, database.scratch_database)
            if "memory" in chosen:
                memory.bench_memory(report, uri, quick)
            if "retrieval" in chosen:
                retrieval.bench_retrieval(report, uri, settings, quick)
            if "conversation" in chosen:
                from benchmarks.conversation import bench_conversation

                bench_conversation(report, uri, settings, quick)
            if "sessions" in chosen:
                sessions.bench_sessions(report, uri, quick)
            if "portability" in chosen:
                from benchmarks.portability import bench_portability

                bench_portability(report, base, quick, database.scratch_database)
        finally:
            drop()
    return 0
