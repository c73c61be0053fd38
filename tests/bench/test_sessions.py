"""benchmarks/sessions.py: the app's RSS with browser sessions. The real run (the app, Chromium, the embedded
models) takes minutes, so these check its parts and the printed report, never a timing."""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys
import time

import psutil

from benchmarks import sessions
from benchmarks.report import Report


def test_quick_mode_and_a_missing_browser_skip_with_a_line(monkeypatch) -> None:
    out = io.StringIO()
    sessions.bench_sessions(Report(out), "postgresql://unused", quick=True)
    assert "## Peak RSS of the running app" in out.getvalue()
    assert "skipped in --quick" in out.getvalue()

    monkeypatch.setattr(sessions, "chromium_path", lambda: None)
    out = io.StringIO()
    sessions.bench_sessions(Report(out), "postgresql://unused", quick=False)
    assert out.getvalue().strip().splitlines()[-1] == "skipped: chromium is not installed (apt-get install chromium)"


def test_the_report_reads_idle_one_and_three_sessions(monkeypatch) -> None:
    found = sessions.Footprint(
        embedder="local:e5",
        idle_mb=70,
        pages_mb=900,
        one_mb=1300,
        three_mb=2600,
        three_own_mb=1500,
        three_shared_mb=1100,
        settled_mb=1450,
        seconds={"one": 60, "three": 90},
        answered=[True, True, False],
        problems=["session 3: no answer: Timeout"],
    )
    monkeypatch.setattr(sessions, "browser_missing", lambda: None)
    monkeypatch.setattr(sessions, "measure", lambda uri: found)
    out = io.StringIO()
    sessions.bench_sessions(Report(out), "postgresql://unused", quick=False)
    lines = out.getvalue().strip().splitlines()
    assert "embedder local:e5" in lines[1] and "(2/3 answered)" in lines[1]
    assert lines[2].startswith("idle after start: 70 MB")
    assert lines[3].startswith("peak with one session: 1,300 MB (+1,230 MB over idle; 900 MB once Upload")
    assert lines[4] == "peak with three sessions: 2,600 MB (90 s for the two more; goal < 1,500 MB: NOT met)"
    assert lines[5].startswith("  of which the app's own memory: 1,500 MB at its peak, beside 1,100 MB of shared pages")
    assert lines[6].startswith("per extra session: 650 MB; 1,450 MB at the end")
    assert lines[7] == "note: session 3: no answer: Timeout"

    monkeypatch.setattr(sessions, "measure", lambda uri: dataclasses.replace(found, three_mb=1468))
    out = io.StringIO()
    sessions.bench_sessions(Report(out), "postgresql://unused", quick=False)
    assert out.getvalue().strip().splitlines()[4].endswith("(90 s for the two more; goal < 1,500 MB: met)")

    monkeypatch.setattr(sessions, "measure", lambda uri: (_ for _ in ()).throw(RuntimeError("streamlit exited")))
    out = io.StringIO()
    sessions.bench_sessions(Report(out), "postgresql://unused", quick=False)
    assert out.getvalue().strip().splitlines()[-1] == "failed: RuntimeError: streamlit exited"


def test_the_sampler_counts_children_and_stopping_leaves_none() -> None:
    # A parent holding ~60 MB whose child holds ~60 MB more: the tree's RSS counts both.
    code = (
        "import subprocess, sys, time; a = bytearray(60 << 20); "
        "c = subprocess.Popen([sys.executable, '-c', 'import time; b = bytearray(60 << 20); time.sleep(60)']); "
        "time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    child = None
    try:
        sampler = sessions.RssSampler(proc.pid, interval=0.05).start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            kids = psutil.Process(proc.pid).children()
            if kids and sampler.peak_mb() > 120 and kids[0].memory_info().rss > 60 << 20:
                child = kids[0]
                break
            time.sleep(0.1)
        assert child is not None, f"the tree never reached 120 MB ({sampler.peak_mb():.0f} MB)"
        time.sleep(0.2)
        own, shared = sampler.own_mb()
        assert own > 120 and 0 < shared < sampler.peak_mb() - 120  # the two bytearrays are the trees' own
        sampler.stop()
        assert sampler.samples > 0
    finally:
        sessions._stop_tree(proc)
    assert proc.poll() is not None
    child.wait(10)
    assert not child.is_running()
    assert sessions.tree_rss(proc.pid) == 0


def test_the_app_environment_reaches_no_ollama_and_no_login(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("RAG_APP_PASSWORD", "secret")
    monkeypatch.setenv("RAG_CHAT_MODEL", "llama3")
    env = sessions.app_env("postgresql://scratch", tmp_path, "local:e5")
    assert env["DATABASE_URL"] == "postgresql://scratch" and env["RAG_EMBEDDER"] == "local:e5"
    assert env["RAG_DATA_DIR"] == str(tmp_path) and env["RAG_PRELOAD_MODEL"] == "1"
    assert "RAG_APP_PASSWORD" not in env and "RAG_CHAT_MODEL" not in env
    assert env["OLLAMA_HOST"].startswith("http://127.0.0.1:")
