"""`python -m rag bench --scale ROWSxDIM`: which kept sizes `--only scale` searches."""

from __future__ import annotations

import io

import pytest

from benchmarks import search
from rag.errors import RagError


def test_sizes_read_as_rows_and_dimensions_and_bad_ones_are_one_line() -> None:
    assert search.parse_scale("1000000x768") == (1_000_000, 768)
    assert search.parse_scale("100_000X384") == (100_000, 384)
    for bad in ("1000000", "x768", "10x768", "1000000x0", "a million by 768"):
        with pytest.raises(RagError, match=r"^--scale .*: expected ROWSxDIM, such as 1000000x768"):
            search.parse_scale(bad)


def test_the_cli_passes_the_sizes_to_the_scale_bench(monkeypatch) -> None:
    from rag import cli

    seen: list[list[tuple[int, int]]] = []
    monkeypatch.setattr(search, "bench_scale", lambda report, base, quick, sizes: seen.append(list(sizes)))
    monkeypatch.setattr(
        "benchmarks.database.scratch_database", lambda base, suffix="": ("postgresql://x", lambda: None)
    )
    monkeypatch.setattr("rag.store.Store", lambda uri: io.StringIO())  # its close() is all run() calls
    monkeypatch.setattr("rag.store.embedded_server_uri", lambda pgdata: "postgresql://base")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    out = io.StringIO()
    assert cli.main(["bench", "--only", "scale", "--scale", "100000x384", "--scale", "2000x8"], out=out) == 0
    assert seen == [[(100_000, 384), (2_000, 8)]]


def test_a_plain_quick_run_leaves_out_what_takes_minutes_and_says_so(monkeypatch) -> None:
    import benchmarks as bench
    from rag.settings import get_settings

    ran: list[str] = []
    monkeypatch.setattr("benchmarks.quality.bench_answers", lambda report, quick: ran.append("answers"))
    out = io.StringIO()
    # Only the benches that need no database, and `answers`, to see which run: chosen explicitly, it runs.
    bench.run(get_settings(), out=out, quick=True, only=["answers"])
    assert ran == ["answers"] and "skipped in a plain --quick" not in out.getvalue()
    monkeypatch.setattr(bench, "BENCHES", ("answers", "external", "conversation"))
    out = io.StringIO()
    bench.run(get_settings(), out=out, quick=True)
    assert ran == ["answers"]
    text = out.getvalue()
    assert "## answers: skipped in a plain --quick" in text and "`--quick --only answers` runs its small form" in text
    assert "## external: skipped in a plain --quick" in text
    assert "## conversation: skipped in a plain --quick" in text
