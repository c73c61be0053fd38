"""Chunking speed: re-chunking a tokenised text, cold Spring AI chunking, and the whole CLI process.

Peers: langchain-text-splitters' TokenTextSplitter (the splitter most RAG stacks use) and a
straightforward port of Spring AI's splitter that re-encodes every cut.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.corpus import synthetic_text
from benchmarks.report import Report, best_of, best_of_interleaved
from rag import chunking
from rag.chunking import ChunkSettings
from rag.errors import RagError, one_line

_ROOT = Path(__file__).resolve().parents[1]
"""The folder holding the `rag` package, for `python -m rag` in a child process."""

_PEER_SCRIPT = """\
import json, sys
from langchain_text_splitters import TokenTextSplitter
text = open(sys.argv[1], encoding="utf-8").read()
splitter = TokenTextSplitter(encoding_name=sys.argv[2], chunk_size=int(sys.argv[3]), chunk_overlap=int(sys.argv[4]))
sys.stdout.write(json.dumps(splitter.split_text(text), ensure_ascii=False) + "\\n")
"""
"""The peer's whole job as a user would script it: read the file, split, print the chunks as JSON."""


def bench_rechunk(report: Report, quick: bool) -> None:
    from langchain_text_splitters import TokenTextSplitter

    n_tokens = 200_000 if quick else 1_000_000
    text = synthetic_text(n_tokens, seed=1)
    settings = [(200, 20), (300, 50), (500, 0), (800, 80), (1000, 100)]
    report.section(f"Re-chunking a {n_tokens:,}-token text at {len(settings)} new settings")
    chunking.warm_up()
    tokenized = chunking.tokenize(text)
    report.line(f"text: {len(text):,} chars, {len(tokenized):,} tokens (tokenised once beforehand)")

    def ours() -> list[int]:
        return [
            len(
                chunking.split(
                    tokenized, ChunkSettings(strategy="token", chunk_size=size, chunk_overlap=overlap)
                ).chunks
            )
            for size, overlap in settings
        ]

    def peer() -> list[int]:
        counts = []
        for size, overlap in settings:
            splitter = TokenTextSplitter(encoding_name=chunking.encoding().name, chunk_size=size, chunk_overlap=overlap)
            counts.append(len(splitter.split_text(text)))
        return counts

    ours_t, ours_counts = best_of(ours, 3)
    peer_t, peer_counts = best_of(peer, 1)
    report.line(f"chunks per setting: ours {ours_counts}, langchain {peer_counts}")
    report.ratio("re-chunk vs langchain-text-splitters TokenTextSplitter", ours_t, peer_t, 20)

    pages = 300
    doc_text = synthetic_text(pages * 500, seed=2)
    report.line(
        f"a {pages}-page document ({pages * 500:,} tokens): re-chunk time after the first "
        "tokenisation (goal < 200 ms each)"
    )
    first_t, doc_tokens = best_of(lambda: chunking.tokenize(doc_text), 1)
    report.line(f"  first tokenisation: {first_t * 1000:.0f} ms")
    for strategy in chunking.STRATEGIES:
        overlap = 0 if chunking.is_spring(strategy) else 50
        chunk_settings = ChunkSettings(strategy=strategy, chunk_size=400, chunk_overlap=overlap)
        t, _ = best_of(functools.partial(chunking.split, doc_tokens, chunk_settings), 3)
        report.line(
            f"  {strategy:12}: {t * 1000:6.1f} ms ({'met' if t < 0.2 else 'NOT met'}; "
            f"{0.2 / t:.0f}x under the 200 ms budget)"
        )


def bench_spring(report: Report, quick: bool) -> None:
    n_tokens = 200_000 if quick else 1_000_000
    text = synthetic_text(n_tokens, seed=3)
    report.section(f"Cold Spring AI chunking of a {n_tokens:,}-token text (tokenise + split)")
    chunking.warm_up()  # per-process tables, not per-text work

    def ours() -> list[str]:
        return [c.text for c in chunking.split(chunking.tokenize(text), chunking.SPRING_DEFAULT).chunks]

    (ours_t, ours_out), (peer_t, peer_out) = best_of_interleaved(ours, lambda: chunking.spring_split_reference(text), 7)
    report.line(f"chunks: {len(ours_out)}; identical to the straightforward port: {ours_out == peer_out}")
    report.ratio("cold spring vs a port that re-encodes each cut", ours_t, peer_t, 3)
    if ours_out != peer_out:
        raise RagError("the fast Spring splitter disagrees with the reference port")


def _run(command: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(_ROOT), os.environ.get("PYTHONPATH"))))}
    proc = subprocess.run(command, cwd=_ROOT, env=env, capture_output=True, text=True, encoding="utf-8")
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise RagError(f"{' '.join(command[:4])} ... failed: {one_line(last[0])}")
    return proc.stdout


def bench_cold_cli(report: Report, quick: bool) -> None:
    """Whole processes, each cold (interpreter start, imports, tokeniser tables, the work, the output):
    `python -m rag chunk FILE --json` against a LangChain TokenTextSplitter script on the same file."""
    n_tokens, size, overlap = 1_200_000, 800, 80
    repeat = 1 if quick else 3
    report.section(
        f"Cold `python -m rag chunk` of a {n_tokens:,}-token text vs a TokenTextSplitter script "
        f"(whole processes, {size}/{overlap} token windows, JSON out)"
    )
    with tempfile.TemporaryDirectory(prefix="rag-bench-") as folder:
        path = Path(folder) / "text.txt"
        path.write_text(synthetic_text(n_tokens, seed=4), encoding="utf-8")
        ours_cmd = [
            sys.executable,
            "-m",
            "rag",
            "chunk",
            str(path),
            "--strategy",
            "token",
            "--chunk-size",
            str(size),
            "--chunk-overlap",
            str(overlap),
            "--json",
        ]
        peer_cmd = [sys.executable, "-c", _PEER_SCRIPT, str(path), chunking.encoding().name, str(size), str(overlap)]
        ours_t = peer_t = float("inf")
        ours_out = peer_out = ""
        for _ in range(repeat):  # interleaved, so that both see the same machine load
            t, ours_out = best_of(lambda: _run(ours_cmd), 1)
            ours_t = min(ours_t, t)
            t, peer_out = best_of(lambda: _run(peer_cmd), 1)
            peer_t = min(peer_t, t)
    ours_chunks = json.loads(ours_out.splitlines()[0])
    report.line(f"chunks: ours {len(ours_chunks)}, langchain {len(json.loads(peer_out))}")
    report.ratio("cold CLI chunk vs a langchain TokenTextSplitter script", ours_t, peer_t, 1)
