"""Issue 18 (3): SIGKILL of the embedded PostgreSQL under a running Store. Before, every call then waited
30 s for a connection and failed until the app restarted; now the first call says the server was started
again, and the next one answers, with the data intact."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import psutil
import psycopg
import pytest
from psycopg_pool import PoolTimeout

from rag.chunking import Chunk
from rag.errors import StoreError
from rag.store import Store, embedded_server_uri, stop_embedded_server


def postmaster_pid(pgdata: Path) -> int:
    return int((pgdata / "postmaster.pid").read_text().split()[0])


def dead(pid: int, within: float = 30) -> bool:
    """Whether process `pid` is gone (or a zombie) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def own_server(tmp_path: Path):
    pgdata = tmp_path / "pgdata"
    store = Store(embedded_server_uri(pgdata), embedded=True, pgdata=pgdata)
    yield store, pgdata
    store.close()
    stop_embedded_server(pgdata)


def test_a_killed_embedded_server_is_started_again_and_the_store_answers(own_server) -> None:
    store, pgdata = own_server
    chunk = Chunk(text="Harbour fees rose by four percent.", index=0, start=0, end=34, tokens=8, pages=(1,))
    store.write_document(
        knowledge="kept",
        embedder="bench",
        dimension=4,
        chunk_settings={},
        filename="a.txt",
        path=None,
        data=b"x",
        sha256="s",
        page_count=1,
        chunks=[chunk],
        embeddings=np.ones((1, 4), dtype=np.float32),
    )
    old = postmaster_pid(pgdata)
    os.kill(old, signal.SIGKILL)
    assert dead(old), "the postmaster outlived SIGKILL"
    with pytest.raises(StoreError, match="has been started again: try once more") as caught:
        store.list_knowledge_bases()
    # The dead connection's own error started the server again, not the pool giving up waiting for one.
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    assert not isinstance(caught.value.__cause__, PoolTimeout)
    assert postmaster_pid(pgdata) != old
    answered = None
    deadline = time.monotonic() + 60  # the pool reconnects within seconds
    while answered is None and time.monotonic() < deadline:
        try:
            answered = store.list_knowledge_bases()
        except StoreError:
            time.sleep(0.2)
    assert answered is not None and [kb.name for kb in answered] == ["kept"]
    assert store.find_document("kept", "a.txt").chunk_count == 1
