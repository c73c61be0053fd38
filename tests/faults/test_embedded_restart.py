"""Issue 18 (3): SIGKILL of the embedded PostgreSQL under a running Store. Before, every call then waited
30 s for a connection and failed until the app restarted; now the first call says the server was started
again, and the next one answers, with the data intact."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from rag.chunking import Chunk
from rag.errors import StoreError
from rag.store import Store, embedded_server_uri, stop_embedded_server


def postmaster_pid(pgdata: Path) -> int:
    return int((pgdata / "postmaster.pid").read_text().split()[0])


@pytest.fixture
def own_server(tmp_path: Path):  # noqa: ANN201 - an embedded server of this test only (it gets killed)
    pgdata = tmp_path / "pgdata"
    store = Store(embedded_server_uri(pgdata), embedded=True, pgdata=pgdata)
    yield store, pgdata
    store.close()
    stop_embedded_server(pgdata)


def test_a_killed_embedded_server_is_started_again_and_the_store_answers(own_server) -> None:  # noqa: ANN001
    store, pgdata = own_server
    chunk = Chunk(text="Harbour fees rose by four percent.", index=0, start=0, end=34, tokens=8, pages=(1,))
    store.write_document(knowledge="kept", embedder="bench", dimension=4, chunk_settings={}, filename="a.txt",
                         path=None, data=b"x", sha256="s", page_count=1, chunks=[chunk],
                         embeddings=np.ones((1, 4), dtype=np.float32))
    old = postmaster_pid(pgdata)
    os.kill(old, signal.SIGKILL)
    time.sleep(0.5)
    start = time.monotonic()
    with pytest.raises(StoreError, match="has been started again: try once more"):
        store.list_knowledge_bases()
    assert time.monotonic() - start < 15  # not the pool's 30 s wait
    assert postmaster_pid(pgdata) != old
    answered = None
    for _ in range(20):  # the pool reconnects within seconds
        try:
            answered = store.list_knowledge_bases()
            break
        except StoreError:
            time.sleep(0.5)
    assert answered is not None and [kb.name for kb in answered] == ["kept"]
    assert store.find_document("kept", "a.txt").chunk_count == 1
