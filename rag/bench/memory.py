"""Peak memory of an ingest, each in a process of its own (ru_maxrss): a 50 MB TXT and a 2,000-page PDF
into a scratch knowledge base, with the in-process WordLlama embedder. The goal (issue 18): any file the
uploader accepts stays under ~1.5 GB; the process's baseline (Python, pymupdf, the embedder) is printed
beside it, so the figure reads as what the file itself costs.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from rag.bench.report import Report

_ROOT = Path(__file__).resolve().parents[2]
GOAL_MB = 1500

_SCRIPT = textwrap.dedent("""
    import json, resource, sys, time
    from rag.chunking import ChunkSettings
    from rag.embeddings.local import LocalEmbedder
    from rag.ingest import ingest_bytes
    from rag.store import Store
    embedder = LocalEmbedder()
    embedder.embed(["warm up"])
    store = Store(sys.argv[1])
    store.list_knowledge_bases()
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    data = open(sys.argv[2], "rb").read()
    start = time.perf_counter()
    result = ingest_bytes(store, embedder, data, sys.argv[3], "bench-memory", ChunkSettings())
    seconds = time.perf_counter() - start
    store.close()
    print(json.dumps({"status": result.status, "reason": str(result.reason), "chunks": result.chunks,
                      "pages": result.pages, "seconds": seconds, "baseline_mb": baseline,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


def _text_file(path: Path, megabytes: int) -> None:
    from rag.bench.corpus import synthetic_text

    block = synthetic_text(200_000, seed=3)  # ~1 MB
    with path.open("w", encoding="utf-8") as out:
        written = 0
        while written < megabytes * 1_000_000:
            out.write(block)
            out.write("\n\n")
            written += len(block) + 2


def _pdf_file(path: Path, pages: int) -> None:
    import pymupdf

    from rag.bench.corpus import synthetic_text

    text = synthetic_text(400, seed=5)
    lines = [text[i:i + 90] for i in range(0, len(text), 90)][:48]
    doc = pymupdf.open()
    for _ in range(pages):
        doc.new_page().insert_text((50, 60), "\n".join(lines), fontsize=10, lineheight=1.4)
    doc.save(path, garbage=3, deflate=True)
    doc.close()


def bench_memory(report: Report, uri: str, quick: bool) -> None:
    sizes = (10, 200) if quick else (50, 2000)
    report.section(f"Peak memory of one ingest (own process, WordLlama): a {sizes[0]} MB TXT and a "
                   f"{sizes[1]:,}-page PDF (goal < {GOAL_MB:,} MB)")
    with tempfile.TemporaryDirectory(prefix="rag-memory-") as tmp:
        txt, pdf = Path(tmp) / "big.txt", Path(tmp) / "book.pdf"
        _text_file(txt, sizes[0])
        _pdf_file(pdf, sizes[1])
        for path in (txt, pdf):
            done = subprocess.run([sys.executable, "-c", _SCRIPT, uri, str(path), path.name], cwd=_ROOT,
                                  capture_output=True, text=True, timeout=3600)
            if done.returncode != 0:
                report.line(f"{path.name}: the ingest process failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            f = json.loads(done.stdout.strip().splitlines()[-1])
            met = f["peak_mb"] < GOAL_MB
            report.line(f"{path.name} ({path.stat().st_size / 1e6:,.1f} MB): {f['status']}, {f['pages']:,} pages, "
                        f"{f['chunks']:,} chunks in {f['seconds']:.0f} s; peak RSS {f['peak_mb']:,.0f} MB "
                        f"(baseline {f['baseline_mb']:,.0f} MB) (goal < {GOAL_MB:,} MB: {'met' if met else 'NOT met'})"
                        + (f"; {f['reason']}" if f["status"] == "failed" else ""))
