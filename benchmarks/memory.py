"""Peak memory of an ingest, each in a process of its own (VmHWM): a 50 MB and a 200 MB TXT (the
uploader's limit) and a 2,000-page PDF into a scratch knowledge base, with the in-process WordLlama
embedder (quick: a 10 MB TXT and a 200-page PDF). The goal (issue 18): any file the uploader accepts
stays under ~1.5 GB; the process's baseline (Python, pymupdf, the embedder) is printed beside it, so
the figure reads as what the file itself costs.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from benchmarks.report import Report

_ROOT = Path(__file__).resolve().parents[1]
GOAL_MB = 1500

PEAK_MB = textwrap.dedent("""
    def peak_mb():
        # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's RSS when it was spawned (Linux
        # keeps the high-water mark across exec), so a big bench process made every figure its own.
        try:
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
""")
"""Source of `peak_mb()`: this process's peak resident memory in MB, for scripts run in a process of their own."""

_SCRIPT = PEAK_MB + textwrap.dedent("""
    import json, sys, time
    from rag.chunking import ChunkSettings
    from rag.embeddings.local import LocalEmbedder
    from rag.ingest import ingest_bytes
    from rag.store import Store
    embedder = LocalEmbedder()
    embedder.embed(["warm up"])
    store = Store(sys.argv[1])
    store.list_knowledge_bases()
    baseline = peak_mb()
    data = open(sys.argv[2], "rb").read()
    start = time.perf_counter()
    result = ingest_bytes(store, embedder, data, sys.argv[3], "bench-memory", ChunkSettings())
    seconds = time.perf_counter() - start
    store.close()
    print(json.dumps({"status": result.status, "reason": str(result.reason), "chunks": result.chunks,
                      "pages": result.pages, "seconds": seconds, "baseline_mb": baseline,
                      "peak_mb": peak_mb()}))
""")


def _text_file(path: Path, megabytes: int) -> None:
    from benchmarks.corpus import synthetic_text

    block = synthetic_text(200_000, seed=3)  # ~1 MB
    with path.open("w", encoding="utf-8") as out:
        written = 0
        while written < megabytes * 1_000_000:
            out.write(block)
            out.write("\n\n")
            written += len(block) + 2


def _pdf_file(path: Path, pages: int) -> None:
    import pymupdf

    from benchmarks.corpus import synthetic_text

    text = synthetic_text(400, seed=5)
    lines = [text[i : i + 90] for i in range(0, len(text), 90)][:48]
    doc = pymupdf.open()
    for _ in range(pages):
        doc.new_page().insert_text((50, 60), "\n".join(lines), fontsize=10, lineheight=1.4)
    doc.save(path, garbage=3, deflate=True)
    doc.close()


def bench_memory(report: Report, uri: str, quick: bool) -> None:
    megabytes, pages = ((10,), 200) if quick else ((50, 200), 2000)
    report.section(
        f"Peak memory of one ingest (own process, WordLlama): a {' and a '.join(map(str, megabytes))} "
        f"MB TXT and a {pages:,}-page PDF (goal < {GOAL_MB:,} MB)"
    )
    with tempfile.TemporaryDirectory(prefix="rag-memory-") as tmp:
        files = [(Path(tmp) / f"text-{mb}mb.txt", functools.partial(_text_file, megabytes=mb)) for mb in megabytes]
        files.append((Path(tmp) / "book.pdf", functools.partial(_pdf_file, pages=pages)))
        for path, make in files:
            make(path)  # each made just before its run, and removed after it: 200 MB on disk at most
            done = subprocess.run(
                [sys.executable, "-c", _SCRIPT, uri, str(path), path.name],
                cwd=_ROOT,
                capture_output=True,
                text=True,
                timeout=3600,
            )
            size_mb = path.stat().st_size / 1e6
            path.unlink()
            if done.returncode != 0:
                report.line(f"{path.name}: the ingest process failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            f = json.loads(done.stdout.strip().splitlines()[-1])
            met = f["peak_mb"] < GOAL_MB
            report.line(
                f"{path.name} ({size_mb:,.1f} MB): {f['status']}, {f['pages']:,} pages, "
                f"{f['chunks']:,} chunks in {f['seconds']:.0f} s; peak RSS {f['peak_mb']:,.0f} MB "
                f"(baseline {f['baseline_mb']:,.0f} MB) (goal < {GOAL_MB:,} MB: {'met' if met else 'NOT met'})"
                + (f"; {f['reason']}" if f["status"] == "failed" else "")
            )
