"""Shared fixtures: a real PostgreSQL with pgvector (embedded, or TEST_DATABASE_URL)."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from rag.settings import Settings
from rag.store import Store, embedded_server_uri, stop_embedded_server

ROOT = Path(__file__).resolve().parent.parent


def dead_port() -> int:
    """A local port with nothing listening (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The app's Settings are read from the environment once per process, so the environment the
# pages (AppTest runs them in this process) see is fixed here, before anything reads it.
SESSION_DATA_DIR = Path(tempfile.mkdtemp(prefix="rag-tests-"))
# mkdtemp makes it 0700; as root the embedded server runs as the user pgserver (with root's group),
# which must pass through it, and rag.store no longer opens folders outside the data folder up.
SESSION_DATA_DIR.chmod(0o711)
os.environ["RAG_DATA_DIR"] = str(SESSION_DATA_DIR)
# WordLlama, explicitly: ~200 passages/s against e5's 0.5-0.7 on 2 loaded cores keeps the suite fast. The
# e5 embedder has its own tests (tests/embeddings/test_e5.py) and the browser test runs it as the app does.
os.environ["RAG_EMBEDDER"] = "local:wordllama"
# AppTest runs of app.py would load the 1.1 GB embedded model in the background; the browser test
# of the running app turns it back on (the real default).
os.environ["RAG_PRELOAD_MODEL"] = "0"
os.environ["OLLAMA_HOST"] = f"http://127.0.0.1:{dead_port()}"
os.environ.pop("DATABASE_URL", None)
if os.environ.get("TEST_DATABASE_URL"):
    os.environ["DATABASE_URL"] = os.environ["TEST_DATABASE_URL"]


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    """pytest's tmp_path, passable by the embedded server's user: pytest makes it, `pytest-N` and
    `pytest-of-root` 0700, and tests start embedded servers in data folders below it."""
    for folder in (tmp_path, tmp_path.parent, tmp_path.parent.parent):
        folder.chmod(stat.S_IMODE(folder.stat().st_mode) | 0o011)  # g+x (root's group), o+x
    return tmp_path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return SESSION_DATA_DIR


@pytest.fixture(scope="session")
def pg_uri(data_dir: Path) -> Iterator[str]:
    """TEST_DATABASE_URL (its tables are wiped!) or the embedded server under data_dir."""
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        yield url
        return
    yield embedded_server_uri(data_dir / "pgdata")
    # Subprocesses (CLI, streamlit) joined this server; one killed by a test never leaves the
    # server's handle list, so the server would outlive the session. Stop it for good.
    stop_embedded_server(data_dir / "pgdata")
    shutil.rmtree(data_dir, ignore_errors=True)


def wipe(uri: str) -> None:
    with psycopg.connect(uri, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('vector_store') IS NOT NULL").fetchone()[0]
        if exists:
            conn.execute("TRUNCATE vector_store, documents, knowledge_bases CASCADE")
            for (index,) in conn.execute(  # the knowledge bases' graphs (rag.store.graphs)
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'vector\\_store\\_hnsw\\_%'"
            ).fetchall():
                conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
        if conn.execute("SELECT to_regclass('conversations') IS NOT NULL").fetchone()[0]:
            conn.execute("TRUNCATE conversations, messages")
        if conn.execute("SELECT to_regclass('embedding_cache') IS NOT NULL").fetchone()[0]:
            conn.execute("TRUNCATE embedding_cache")  # the vectors a stopped ingest kept (rag.store.vector_cache)


@pytest.fixture
def store(pg_uri: str) -> Iterator[Store]:
    s = Store(pg_uri, embedded=not os.environ.get("TEST_DATABASE_URL"))
    wipe(pg_uri)
    try:
        yield s
    finally:
        if s._graphing is not None:  # a graph a search asked for: built before the next test wipes the table
            s._graphing.join(timeout=120)
        s.close()


@pytest.fixture
def dead_host() -> str:
    """An Ollama URL with nothing listening: connecting to it is refused at once."""
    return f"http://127.0.0.1:{dead_port()}"


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return Settings(
        database_url=os.environ.get("TEST_DATABASE_URL"),
        data_dir=data_dir,
        ollama_host=f"http://127.0.0.1:{dead_port()}",
        embedder="local:wordllama",
        chat_model=None,
        ollama_timeout=5.0,
        embed_batch_size=16,
    )


@pytest.fixture
def cli_env(data_dir: Path, pg_uri: str) -> dict[str, str]:
    """Environment for `python -m rag` subprocesses sharing the test database."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RAG_EMBEDDER", "OLLAMA_HOST")}
    env.update(
        RAG_DATA_DIR=str(data_dir),
        RAG_EMBEDDER="local:wordllama",
        OLLAMA_HOST=f"http://127.0.0.1:{dead_port()}",
        PYTHONPATH=str(ROOT),
    )
    if os.environ.get("TEST_DATABASE_URL"):
        env["DATABASE_URL"] = os.environ["TEST_DATABASE_URL"]
    return env


PYTHON = sys.executable


@pytest.fixture(autouse=True)
def _no_learned_token_counts() -> Iterator[None]:
    """Each test starts without the token-count calibration earlier answers taught (rag.llms.counting)."""
    from rag.llms.counting import forget_calibration

    forget_calibration()
    yield
    forget_calibration()


@pytest.fixture(autouse=True)
def _no_measured_embedding_rates() -> Iterator[None]:
    """Each test starts without the embedding rates earlier tests measured (rag.embeddings.timing.RATES: the
    Chunk Lab's cache times its batches too, and a rate measured by one test made another's estimate 25x
    shorter)."""
    from rag.embeddings.timing import RATES

    RATES.clear()
    yield
    RATES.clear()


@pytest.fixture(autouse=True)
def _no_kept_read_ahead_worker() -> Iterator[None]:
    """Each test's ingest starts its own read-ahead worker: one kept from an earlier test (rag.ingest.readahead
    keeps it for the next ingest) was spawned with that test's environment and patches."""
    import sys

    yield
    readahead = sys.modules.get("rag.ingest.readahead")
    if readahead is not None:
        readahead.drop_kept()
