"""benchmarks/portability.py at a tiny size, for real: a knowledge base of 300 chunks exported and imported in
processes of their own beside pg_dump and pg_restore of its database. Its lines must hold measured numbers
(never a timing goal: figures vary with the machine) and every chunk must come back on both sides."""

from __future__ import annotations

import io
import math
import re

import psycopg

from benchmarks import database, portability
from benchmarks.report import Report

NUMBER = r"(\d[\d,]*(?:\.\d+)?)"


def numbers(line: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(NUMBER, line)]


def test_the_quick_form_at_300_chunks_reports_both_sides_and_gives_every_chunk_back(pg_uri: str) -> None:
    out = io.StringIO()
    assert portability.bench_portability(Report(out), pg_uri, True, database.scratch_database, chunks=300)
    lines = out.getvalue().strip().splitlines()
    assert lines[0].startswith("## Portability: a knowledge base of 300 chunks (384-d random unit vectors")
    by_label = {line.split(":")[0]: line for line in lines[1:]}
    assert by_label["built"].startswith("built: 2 documents of up to 200 chunks with their sources, 300 chunks,")
    for label in ("export to the portable zip", "pg_dump -Fc", "import into a fresh database"):
        seconds, megabytes, rate, peak, *_ = numbers(by_label[label].split(": ", 1)[1])
        assert seconds > 0 and megabytes > 0.1 and rate > 0 and math.isfinite(rate), by_label[label]
        assert 1 < peak < 5_000, by_label[label]  # a real resident size, in MB (pg_dump's is a few)
    seconds, megabytes, rate, peak = numbers(by_label["pg_restore into a fresh database"].split(": ", 1)[1])
    assert seconds > 0 and megabytes > 0.1 and peak > 1
    for mine in ("export to the portable zip", "import into a fresh database"):
        line = by_label[mine]
        assert re.search(r"\(baseline \d+ MB\); \d+\.\d\d s of it in the (export|import) itself$", line), line
    for ratio in ("export vs pg_dump -Fc (process wall time)", "import vs pg_restore (process wall time)"):
        assert re.fullmatch(
            r"ours \d+\.\d{4} s, peer \d+\.\d{4} s -> \d+\.\dx \(goal >= 0\.5x: (met|NOT met)\)",
            by_label[ratio].split(": ", 1)[1],
        ), by_label[ratio]
    assert by_label["round trip"] == "round trip: 300 chunks out, 300 imported, 300 restored (all back)"
    with psycopg.connect(pg_uri) as conn:  # the scratch databases are gone
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'rag_bench_%%_port_%%'").fetchall()
    assert left == []
