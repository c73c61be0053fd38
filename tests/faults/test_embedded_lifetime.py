"""Issue 18 (3): the embedded PostgreSQL stops when the process that started it ends by SIGTERM, also when
an earlier process that joined it was killed (its PID stayed in pgserver's list of handles, and the
server then outlived everyone)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.conftest import ROOT

HOLDER = """
import sys, time
from rag.process import exit_on_sigterm
from rag.settings import get_settings
from rag.store import Store
exit_on_sigterm()  # what `rag ...` and `rag mcp` do first
store = Store.open(get_settings())
store.list_knowledge_bases()
print("ready", flush=True)
time.sleep(600)
"""


def start_holder(env: dict[str, str]) -> subprocess.Popen[str]:
    """A process that starts (or joins) the embedded server and keeps it, as the app or `rag mcp` does."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def postmaster(pgdata: Path) -> psutil.Process:
    return psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))


def gone(process: psutil.Process, within: float = 20) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.2)
    return False


def test_sigterm_stops_the_embedded_server_even_after_a_killed_process_joined_it(tmp_path: Path) -> None:
    env = {**os.environ, "RAG_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    pgdata = tmp_path / "data" / "pgdata"
    first = start_holder(env)
    server = postmaster(pgdata)
    first.kill()  # SIGKILL: no exit handler runs, its PID stays in the list of handles
    first.wait(30)
    assert not gone(server, within=1)  # the server outlives a killed process, as it should
    second = start_holder(env)
    assert postmaster(pgdata).pid == server.pid  # joined, not a second server
    second.send_signal(signal.SIGTERM)
    assert second.wait(60) is not None
    assert gone(server), "the embedded PostgreSQL kept running after the last process ended"
