"""Issue 18 (10): starting the embedded PostgreSQL as root changed a 0700 parent folder to 0755. pgserver runs
the server as its own system user and widened (g+rx,o+rx) every folder above the data folder up to / so that
user could pass. Now no permission outside the data folder changes: a start whose folders already let that
user through leaves their modes exactly as they were, and a folder it cannot pass is named in one line
with its mode and what to do, and stays as it was."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="only as root does pgserver run the server as another user (who must pass through the folders "
    "above the data folder); as anyone else it runs as the caller and changes no permissions",
)

START = """
import json, re, shlex, subprocess, sys
from pathlib import Path
import psycopg
from rag.errors import StoreError
from rag.store import embedded_server_uri, stop_embedded_server

pgdata, then_fix = Path(sys.argv[1]), sys.argv[2:] == ["--then-do-as-said"]
out = {}
try:
    try:
        with psycopg.connect(embedded_server_uri(pgdata)) as conn:
            out["answer"] = conn.execute("SELECT 1").fetchone()[0]
    except StoreError as exc:
        out["error"] = str(exc)
        if then_fix:  # run the command the message says, then try again in this same process (the app reruns)
            subprocess.run(shlex.split(re.search(r"allow it with (.+?), or set", out["error"])[1]), check=True)
            with psycopg.connect(embedded_server_uri(pgdata)) as conn:
                out["after_fix"] = conn.execute("SELECT 1").fetchone()[0]
finally:
    stop_embedded_server(pgdata)
print(json.dumps(out), flush=True)
"""


def mode(folder: Path) -> int:
    return stat.S_IMODE(folder.stat().st_mode)


def postgres_under(folder: Path) -> list[psutil.Process]:
    """The postgres processes whose command line names a folder below `folder` (a server a test started)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and any(str(folder) in part for part in cmdline):
            found.append(proc)
    return found


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder of this test in the system's temporary folder, one the server's user may pass (0711) but not
    list. (pytest's tmp_path lies below /tmp/pytest-of-root, which pytest keeps at 0700.)"""
    made = Path(tempfile.mkdtemp(prefix="rag-perm-")).resolve()
    made.chmod(0o711)
    try:
        yield made
    finally:
        left = postgres_under(made)
        for proc in left:  # only servers of this test: their data folders lie below `made`
            proc.kill()
        shutil.rmtree(made, ignore_errors=True)
        assert not left, f"a test left embedded servers running: {[p.pid for p in left]}"


def start(pgdata: Path, *flags: str) -> dict:
    """Start the embedded server of `pgdata` in a process of its own (one server per data folder per process)
    and stop it again; what it answered, or the error it said."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", START, str(pgdata), *flags],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_start_below_folders_the_server_can_pass_leaves_their_modes_exactly_as_they_were(base: Path) -> None:
    listed = base / "listed"  # others may pass and list
    listed.mkdir()
    listed.chmod(0o751)
    passable = listed / "passable"  # others may pass, not list: pgserver made it 0755
    passable.mkdir()
    passable.chmod(0o711)
    pgdata = passable / "pgdata"
    before = {folder: mode(folder) for folder in (base, listed, passable)}
    assert start(pgdata) == {"answer": 1}
    assert {folder: mode(folder) for folder in before} == before
    assert before == {base: 0o711, listed: 0o751, passable: 0o711}
    assert not postgres_under(base)


def test_a_folder_the_server_cannot_pass_is_named_with_its_mode_and_stays_0700(base: Path) -> None:
    locked = base / "locked"  # root's own, as mkdtemp or /root make it
    locked.mkdir()
    locked.chmod(0o700)
    pgdata = locked / "data" / "pgdata"
    said = start(pgdata)
    assert set(said) == {"error"}, said
    error = said["error"]
    assert "\n" not in error
    # pgserver changes only the uid: the server keeps root's group, so on root's folder the group bits decide
    assert error == (
        f"the embedded PostgreSQL runs as the system user pgserver, who cannot pass through {locked} (mode "
        f"0700, owner root:root) to reach its data folder {pgdata}: allow it with chmod g+x {locked}, or set "
        f"RAG_DATA_DIR to a folder it can reach, or set DATABASE_URL to use another server; permissions outside "
        f"the data folder are left as they are"
    )
    assert mode(locked) == 0o700
    assert mode(base) == 0o711
    assert not postgres_under(base)


def test_after_doing_what_the_message_says_the_same_process_starts_the_server(base: Path) -> None:
    locked = base / "locked"
    locked.mkdir()
    locked.chmod(0o700)
    pgdata = locked / "pgdata"
    said = start(pgdata, "--then-do-as-said")  # chmod g+x, and start again without a restart
    assert said.get("after_fix") == 1, said
    assert said["error"].startswith("the embedded PostgreSQL runs as the system user pgserver, who cannot pass")
    assert mode(locked) == 0o710  # only the bit the message asked for: nothing widened it to 0755
    assert not postgres_under(base)


def test_a_folder_above_the_servers_programs_is_not_widened_either(base: Path) -> None:
    """The same check for the other folders pgserver's user needs (its programs, a socket folder): named,
    with only DATABASE_URL as the other way out, since RAG_DATA_DIR would not help."""
    from rag.errors import StoreError
    from rag.store.embedded import _reachable_or_fail

    locked = base / "venv"
    (locked / "lib").mkdir(parents=True)
    locked.chmod(0o700)
    with pytest.raises(StoreError) as info:
        _reachable_or_fail(locked / "lib" / "bin", user="pgserver", own=base / "elsewhere", pgdata=base / "pgdata")
    assert str(info.value) == (
        f"the embedded PostgreSQL runs as the system user pgserver, who cannot pass through {locked} (mode 0700, "
        f"owner root:root) to reach {locked / 'lib' / 'bin'}: allow it with chmod g+x {locked}, or set "
        f"DATABASE_URL to use another server"
    )
    assert mode(locked) == 0o700
