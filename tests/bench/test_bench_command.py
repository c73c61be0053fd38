"""`rag bench` reaches the benchmarks, which live beside the library (benchmarks/), and says how to install
them, in one line, where they are absent."""

from __future__ import annotations

import builtins
import io
import sys

import pytest

from rag import cli


def _bench(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["bench", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_without_the_benchmarks_it_says_how_to_install_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "benchmarks", None)  # what an install of the library alone looks like
    code, out, err = _bench(["--quick", "--only", "gpu"])
    assert code == 2 and out == ""
    assert (
        err == "error: the benchmarks are not installed: from a clone, `pip install -e '.[bench]'` (or `make bench`)\n"
    )


def test_a_missing_dependency_of_the_benchmarks_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def missing(name: str, *args: object, **kwargs: object) -> object:
        if name == "benchmarks":  # as if benchmarks/__init__.py imported a package of the bench group
            raise ModuleNotFoundError("No module named 'rank_bm25'", name="rank_bm25")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", missing)
    code, _, err = _bench(["--quick", "--only", "gpu"])
    assert code == 2
    assert err.startswith("error: the benchmarks need rank_bm25, which is not installed: from a clone")


def test_where_they_are_present_the_command_runs_them(monkeypatch: pytest.MonkeyPatch) -> None:
    import benchmarks

    ran: list[tuple[bool, list[str] | None]] = []
    monkeypatch.setattr(benchmarks, "run", lambda settings, *, out, quick, only, scales: ran.append((quick, only)) or 0)
    assert _bench(["--quick", "--only", "gpu"]) == (0, "", "")
    assert ran == [(True, ["gpu"])]
