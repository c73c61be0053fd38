"""MCP servers as child processes: the `mcp-servers.json` config, and a thread-safe manager.

The config is the format MCP clients share (Claude Desktop, Cursor, Spring AI's
`mcp-servers-config.json`):

    {"mcpServers": {"name": {"command": "npx", "args": ["-y", "..."], "env": {"KEY": "value"}}}}

It lives at the project root as `mcp-servers.json`, or wherever RAG_MCP_CONFIG points. Optional
per-server keys: `cwd` (default: the config file's folder; relative paths are taken from there too)
and `disabled: true`.

`McpManager` starts every configured server over stdio, lists its tools, calls them, and stops them.
The SDK is async; the manager runs one asyncio loop on a background thread and exposes plain
blocking methods that any thread (e.g. Streamlit's script threads) may call. A server that fails to
start is reported in its status (with the end of its stderr) and the others keep running.
`shared_manager()` is the one manager of the process for the current config file, stopped at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import json
import logging
import os
import re
import shlex
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rag.errors import McpConfigError, McpConfigMissing, McpError, one_line
from rag.text import Text, text_of

log = logging.getLogger(__name__)

CONFIG_ENV = "RAG_MCP_CONFIG"
CONFIG_FILENAME = "mcp-servers.json"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STARTUP_TIMEOUT = 60.0
DEFAULT_CALL_TIMEOUT = 60.0
PASSED_ENV_PREFIXES = ("RAG_", "OLLAMA_")
PASSED_ENV_NAMES = ("DATABASE_URL",)
"""Besides the SDK's safe defaults (PATH, HOME, ...), our own server (`python -m rag mcp`, started from
the config) gets the app's settings, so that it uses the same database. Any other server gets only the
defaults and what its config's `env` names: DATABASE_URL and RAG_WEB_SEARCH_API_KEY hold secrets."""

STATES = ("starting", "running", "failed", "stopped", "disabled")
_STDERR_TAIL = 2000


# ------------------------------------------------------------------------------------------------
# Config


@dataclass(frozen=True)
class ServerConfig:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    disabled: bool = False

    @property
    def command_line(self) -> str:
        return shlex.join([self.command, *self.args])


@dataclass(frozen=True)
class McpConfig:
    path: Path | None
    servers: tuple[ServerConfig, ...] = ()

    def server(self, name: str) -> ServerConfig:
        for s in self.servers:
            if s.name == name:
                return s
        if self.path:
            raise McpError(Text("no MCP server named {name} in {path}", name=repr(name), path=str(self.path)))
        raise McpError(Text("no MCP server named {name} in the config", name=repr(name)))


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """RAG_MCP_CONFIG if set, else `mcp-servers.json` at the project root."""
    env = os.environ if env is None else env
    chosen = env.get(CONFIG_ENV, "").strip()
    return Path(chosen).expanduser().resolve() if chosen else PROJECT_ROOT / CONFIG_FILENAME


_EXAMPLE = '{"mcpServers": {"name": {"command": "...", "args": [...], "env": {...}}}}'


def load_config(path: str | os.PathLike[str] | None = None) -> McpConfig:
    """Read and check the config; every problem is one McpConfigError line naming the file."""
    from_env = path is None and bool(os.environ.get(CONFIG_ENV, "").strip())
    file = Path(path).expanduser().resolve() if path is not None else config_path()
    try:
        text = file.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        if from_env:
            raise McpConfigMissing(
                Text(
                    "No MCP servers configured: {env} points to {file}, which does not exist; copy "
                    "mcp-servers.example.json to {config} and edit it (see docs/mcp.md)",
                    env=CONFIG_ENV,
                    file=str(file),
                    config=CONFIG_FILENAME,
                )
            ) from exc
        raise McpConfigMissing(
            Text(
                "No MCP servers configured: {file} does not exist; copy mcp-servers.example.json to {config} "
                "and edit it (see docs/mcp.md)",
                file=str(file),
                config=CONFIG_FILENAME,
            )
        ) from exc
    except OSError as exc:
        raise McpConfigError(
            Text("{file}: cannot read it ({error})", file=str(file), error=str(exc.strerror or exc))
        ) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            Text(
                "{file}: invalid JSON at line {line} column {column} ({error})",
                file=str(file),
                line=exc.lineno,
                column=exc.colno,
                error=exc.msg,
            )
        ) from exc
    return parse_config(data, file)


def parse_config(data: Any, path: Path | None = None) -> McpConfig:
    where = str(path) if path else Text("MCP config")
    base = path.parent if path else Path.cwd()
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise McpConfigError(
            Text('{where}: expected an object with "mcpServers", like {example}', where=where, example=_EXAMPLE)
        )
    servers = []
    for name, entry in data["mcpServers"].items():
        servers.append(_parse_server(where, base, name, entry))
    return McpConfig(path=path, servers=tuple(servers))


def _parse_server(where: str, base: Path, name: str, entry: Any) -> ServerConfig:
    label = Text("{where}: server {name}", where=where, name=repr(name))
    if not name.strip():
        raise McpConfigError(Text("{where}: a server has an empty name", where=where))
    if not isinstance(entry, dict):
        raise McpConfigError(Text('{server} must be an object with "command", "args" and "env"', server=label))
    command = entry.get("command")
    if command is None and "url" in entry:
        raise McpConfigError(Text('{server}: only stdio servers ("command") are supported, not "url"', server=label))
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError(Text('{server} needs a "command" (the program to start), e.g. "npx"', server=label))
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError(Text('{server}: "args" must be a list of strings', server=label))
    env = entry.get("env", {})
    if env is None:
        env = {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise McpConfigError(
            Text(
                '{server}: "env" must map names to string values, e.g. {example}', server=label, example='{"KEY": "1"}'
            )
        )
    cwd_raw = entry.get("cwd")
    if cwd_raw is not None and (not isinstance(cwd_raw, str) or not cwd_raw.strip()):
        raise McpConfigError(Text('{server}: "cwd" must be a folder path', server=label))
    cwd = (base / Path(cwd_raw).expanduser()).resolve() if cwd_raw else base
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        raise McpConfigError(Text('{server}: "disabled" must be true or false', server=label))
    command = command.strip()
    # A relative program path ("./server", ".venv/bin/python") is taken from the server's folder;
    # made absolute without following links (a venv's python is a link that must stay one).
    if ("/" in command or "\\" in command) and not Path(command).expanduser().is_absolute():
        command = os.path.normpath(cwd / command)
    return ServerConfig(
        name=name, command=os.path.expanduser(command), args=tuple(args), env=dict(env), cwd=cwd, disabled=disabled
    )


def is_own_server(command: str, args: Sequence[str]) -> bool:
    """Whether a configured server is this app's (`python -m rag mcp ...` or `python -m rag.mcp.server`)."""
    words = [os.path.basename(command), *args]
    return any(
        words[i : i + 3] == ["-m", "rag", "mcp"] or words[i : i + 2] in (["-m", "rag.mcp.server"], ["-m", "rag.mcp"])
        for i in range(len(words))
    )


def _read_only(tool: Any) -> bool:
    """Whether a listed tool's annotations say readOnlyHint (the SDK's 2.x name first, then 1.x's)."""
    notes = getattr(tool, "annotations", None)
    value = getattr(notes, "read_only_hint", None)
    if value is None:
        value = getattr(notes, "readOnlyHint", None)
    return value is True


def child_environment(extra: Mapping[str, str], own: bool = False) -> dict[str, str]:
    from mcp.client.stdio import get_default_environment

    env = get_default_environment()
    if own:
        for key, value in os.environ.items():
            if key.startswith(PASSED_ENV_PREFIXES) or key in PASSED_ENV_NAMES:
                env[key] = value
    env.pop(CONFIG_ENV, None)
    env.update(extra)
    return env


# ------------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class ToolInfo:
    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    read_only: bool = False
    """The server marks it readOnlyHint: it changes nothing. Unmarked tools may change things (MCP's
    default), so agent mode runs them only where the user allowed it."""


@dataclass(frozen=True)
class ServerStatus:
    name: str
    state: str
    """'starting', 'running', 'failed', 'stopped' or 'disabled'."""
    command_line: str
    tools: tuple[ToolInfo, ...] = ()
    error: str = ""
    stderr_tail: str = ""
    server_info: str = ""
    """Name and version the server reported."""

    @property
    def ok(self) -> bool:
        return self.state == "running"


@dataclass(frozen=True)
class ToolCallResult:
    text: str
    """The result's content as text (what a model reads)."""
    is_error: bool
    structured: Mapping[str, Any] | None = None
    duration: float = 0.0


# ------------------------------------------------------------------------------------------------
# The manager


class _Server:
    """Mutable state of one server; touched under the manager's lock (or on the loop thread)."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.state = "disabled" if config.disabled else "stopped"
        self.error = ""
        self.tools: tuple[ToolInfo, ...] = ()
        self.server_info = ""
        self.client: Any = None
        self.stop: asyncio.Event | None = None
        self.task: concurrent.futures.Future[None] | None = None
        self.settled = threading.Event()
        self.stderr: IO[bytes] | None = None
        """The child's stderr, in append mode: the child writes at the end whatever we read."""
        self.settled.set()

    def stderr_tail(self) -> str:
        f = self.stderr
        if f is None or f.closed:
            return ""
        try:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - _STDERR_TAIL * 4))
            return f.read().decode("utf-8", errors="replace")[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""


_managers: weakref.WeakSet[McpManager] = weakref.WeakSet()


class McpManager:
    """Starts the configured servers as child processes and talks to them; every method is
    blocking and thread-safe. Use it as a context manager, or call close()."""

    def __init__(
        self,
        config: McpConfig,
        *,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.config = config
        self.startup_timeout = startup_timeout
        self.call_timeout = call_timeout
        self._servers = {s.name: _Server(s) for s in config.servers}
        self._lock = threading.RLock()
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client-loop", daemon=True)
        self._thread.start()
        _managers.add(self)

    def __enter__(self) -> McpManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self, *, wait: bool = True) -> None:
        """Start every enabled server that is not running; with `wait`, until each runs or failed."""
        for name in self._servers:
            self._start(name)
        if wait:
            self.wait_started()

    def wait_started(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else self.startup_timeout + 15)
        for server in list(self._servers.values()):
            server.settled.wait(max(0.0, deadline - time.monotonic()))

    def restart(self, name: str, *, wait: bool = True) -> ServerStatus:
        server = self._get(name)
        self._stop(server, timeout=15)
        self._start(name)
        if wait:
            server.settled.wait(self.startup_timeout + 15)
        return self.status(name)

    def close(self) -> None:
        """Stop every server (closing stdin, then terminating it if need be) and the loop thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for server in self._servers.values():
            self._stop(server, timeout=15)
        for server in self._servers.values():
            if server.stderr is not None:
                server.stderr.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()
        _managers.discard(self)

    @property
    def closed(self) -> bool:
        return self._closed

    def _get(self, name: str) -> _Server:
        try:
            return self._servers[name]
        except KeyError:
            if self._servers:
                raise McpError(
                    Text(
                        "no MCP server named {name} (configured: {known})",
                        name=repr(name),
                        known=", ".join(self._servers),
                    )
                ) from None
            raise McpError(Text("no MCP server named {name} (configured: none configured)", name=repr(name))) from None

    def _start(self, name: str) -> None:
        server = self._get(name)
        with self._lock:
            if self._closed:
                raise McpError(Text("the MCP manager is closed"))
            if server.config.disabled or server.state in ("starting", "running"):
                return
            server.state = "starting"
            server.error = ""
            server.tools = ()
            server.settled.clear()
            server.stop = asyncio.Event()
            server.task = asyncio.run_coroutine_threadsafe(self._run(server), self._loop)

    def _stop(self, server: _Server, timeout: float) -> None:
        with self._lock:
            task, stop, running = server.task, server.stop, server.state == "running"
        if task is None:
            return
        if running and stop is not None:
            self._loop.call_soon_threadsafe(stop.set)  # leaves the client's context: stdin closed, child waited for
        else:
            task.cancel()  # still starting: abandon the handshake (the SDK still stops the child)
        try:
            task.result(timeout)
        except Exception:  # noqa: BLE001 - already reported in the status
            pass
        with self._lock:
            if server.state in ("starting", "running"):
                server.state = "stopped"
            server.task = None
            server.settled.set()

    async def _run(self, server: _Server) -> None:
        import anyio
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        cfg = server.config
        if server.stderr is not None:
            server.stderr.close()
        # Kept on the server past this run (its status reads the tail): closed by the next run or by close().
        server.stderr = tempfile.TemporaryFile("a+b", prefix=f"mcp-{cfg.name}-")  # noqa: SIM115
        stop = server.stop if server.stop is not None else asyncio.Event()
        env = child_environment(cfg.env, own=is_own_server(cfg.command, cfg.args))
        params = StdioServerParameters(command=cfg.command, args=list(cfg.args), env=env, cwd=cfg.cwd)
        ready = False
        timed_out = False
        try:
            with anyio.CancelScope() as scope:

                def on_timeout() -> None:
                    nonlocal timed_out
                    if not ready:
                        timed_out = True
                        scope.cancel()

                watchdog = asyncio.get_running_loop().call_later(self.startup_timeout, on_timeout)
                try:
                    transport = stdio_client(params, errlog=server.stderr)  # type: ignore[arg-type]
                    client = Client(transport, read_timeout_seconds=self.call_timeout)
                    async with client:
                        tools = await _list_all_tools(client)
                        info = client.server_info
                        ready = True
                        watchdog.cancel()
                        with self._lock:
                            server.client = client
                            server.tools = tuple(
                                ToolInfo(
                                    server=cfg.name,
                                    name=t.name,
                                    description=(t.description or "").strip(),
                                    input_schema=dict(t.input_schema or {"type": "object"}),
                                    output_schema=dict(t.output_schema) if t.output_schema else None,
                                    read_only=_read_only(t),
                                )
                                for t in tools
                            )
                            server.server_info = f"{info.name} {info.version}".strip() if info else ""
                            server.state = "running"
                            server.settled.set()
                        await stop.wait()
                        with self._lock:
                            server.client = None
                finally:
                    watchdog.cancel()
            if timed_out:
                self._failed(
                    server,
                    Text("did not answer the MCP handshake within {seconds} s", seconds=f"{self.startup_timeout:g}"),
                )
            else:
                with self._lock:
                    server.client = None
                    if server.state in ("starting", "running"):
                        server.state = "stopped"
                    server.settled.set()
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            if isinstance(exc, asyncio.CancelledError):
                with self._lock:
                    server.client = None
                    server.state = "stopped"
                    server.settled.set()
                raise
            message = _describe(exc, cfg, running=ready)
            last = server.stderr_tail().splitlines()[-1:] if not ready else []
            self._failed(
                server,
                Text("{error}; its stderr ends with: {line}", error=message, line=last[0].strip()) if last else message,
            )

    def _failed(self, server: _Server, message: str) -> None:
        log.warning("MCP server %r: %s", server.config.name, message)
        with self._lock:
            server.client = None
            server.state = "failed"
            server.error = message
            server.settled.set()

    # -- queries ---------------------------------------------------------------------------------

    def statuses(self) -> list[ServerStatus]:
        return [self.status(name) for name in self._servers]

    def status(self, name: str) -> ServerStatus:
        server = self._get(name)
        with self._lock:
            return ServerStatus(
                name=server.config.name,
                state=server.state,
                command_line=server.config.command_line,
                tools=server.tools,
                error=server.error,
                stderr_tail=server.stderr_tail(),
                server_info=server.server_info,
            )

    def tools(self) -> list[ToolInfo]:
        """The tools of every running server, in config order."""
        with self._lock:
            return [t for s in self._servers.values() if s.state == "running" for t in s.tools]

    def tool(self, server: str, name: str) -> ToolInfo:
        status = self.status(server)
        for t in status.tools:
            if t.name == name:
                return t
        if not status.ok:
            raise McpError(_not_running(status))
        if status.tools:
            raise McpError(
                Text(
                    "MCP server {server} has no tool {name} (it has: {tools})",
                    server=repr(server),
                    name=repr(name),
                    tools=", ".join(t.name for t in status.tools),
                )
            )
        raise McpError(
            Text("MCP server {server} has no tool {name} (it has: none)", server=repr(server), name=repr(name))
        )

    def call_tool(
        self, server: str, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> ToolCallResult:
        """Call a tool; its own failures come back as `is_error` results, while a server that is not
        running or does not answer within `timeout` seconds raises McpError."""
        entry = self._get(server)
        with self._lock:
            client = entry.client
            if client is None or entry.state != "running":
                raise McpError(_not_running(self.status(server)))
        limit = self.call_timeout if timeout is None else timeout
        started = time.perf_counter()
        future = asyncio.run_coroutine_threadsafe(_call(client, name, dict(arguments or {}), limit), self._loop)
        try:
            result = future.result(limit + 5)
        except TimeoutError as exc:
            future.cancel()
            raise McpError(
                Text(
                    "tool {name} of MCP server {server} did not answer within {seconds} s",
                    name=repr(name),
                    server=repr(server),
                    seconds=f"{limit:g}",
                )
            ) from exc
        except McpError as exc:
            raise McpError(Text("{error} (MCP server {server})", error=text_of(exc), server=repr(server))) from exc
        except Exception as exc:
            text = one_line(exc, None, with_type=True)
            if isinstance(exc, _ConnectionClosed) or _looks_closed(exc):
                self._failed(entry, Text("the server exited or closed its connection ({error})", error=text))
                raise McpError(
                    Text(
                        "MCP server {server} exited or closed its connection: {error}", server=repr(server), error=text
                    )
                ) from exc
            raise McpError(
                Text(
                    "calling {name} on MCP server {server} failed: {error}",
                    name=repr(name),
                    server=repr(server),
                    error=text,
                )
            ) from exc
        return ToolCallResult(
            text=result[0], is_error=result[1], structured=result[2], duration=time.perf_counter() - started
        )


async def _list_all_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


class _ConnectionClosed(Exception):
    pass


async def _call(client: Any, name: str, arguments: dict[str, Any], timeout: float) -> tuple[str, bool, Any]:
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    try:
        result = await client.call_tool(name, arguments, read_timeout_seconds=timeout)
    except MCPError as exc:
        if exc.error.code == REQUEST_TIMEOUT:
            raise McpError(
                Text("tool {name} did not answer within {seconds} s", name=repr(name), seconds=f"{timeout:g}")
            ) from exc
        if exc.error.code == CONNECTION_CLOSED:
            raise _ConnectionClosed(exc.error.message) from exc
        # A protocol-level refusal (unknown tool, invalid params, ...) is the caller's to read.
        return f"Error: {exc.error.message}", True, None
    structured = result.structured_content
    return content_text(result.content, structured), bool(result.is_error), structured


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments to start from when calling a tool by hand: defaults where the schema has them,
    placeholders of the right type for the required ones."""
    out: dict[str, Any] = {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    for name, prop in properties.items():
        prop = prop if isinstance(prop, Mapping) else {}
        if "default" in prop:
            out[name] = prop["default"]
        elif name in required:
            out[name] = _placeholder(prop)
    return out


def _placeholder(prop: Mapping[str, Any]) -> Any:
    if prop.get("enum"):
        return prop["enum"][0]
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and isinstance(prop.get("anyOf"), list):
        kinds = [p.get("type") for p in prop["anyOf"] if isinstance(p, Mapping) and p.get("type") != "null"]
        kind = kinds[0] if kinds else None
    if kind is None:
        return None
    return {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}.get(kind)


def content_text(content: Sequence[Any], structured: Any = None) -> str:
    """A tool result's content blocks as one text for a model."""
    parts: list[str] = []
    for block in content or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource {resource.uri}, {resource.mime_type or 'binary'}]")
        elif kind == "resource_link":
            parts.append(f"[resource link {block.uri}]")
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}, not shown]")
        else:
            parts.append(f"[{kind or type(block).__name__} content]")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def _not_running(status: ServerStatus) -> str:
    if status.state == "failed":
        return Text("MCP server {server} failed to start: {error}", server=repr(status.name), error=status.error)
    if status.state == "starting":
        return Text("MCP server {server} is starting, not running", server=repr(status.name))
    if status.state == "stopped":
        return Text("MCP server {server} is stopped, not running", server=repr(status.name))
    if status.state == "disabled":
        return Text("MCP server {server} is disabled, not running", server=repr(status.name))
    return Text("MCP server {server} is {state}, not running", server=repr(status.name), state=status.state)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _looks_closed(exc: BaseException) -> bool:
    import anyio

    return any(
        isinstance(
            e, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError, EOFError)
        )
        or "closed" in str(e).lower()
        for e in _leaves(exc)
    )


def _describe(exc: BaseException, cfg: ServerConfig, *, running: bool) -> str:
    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, FileNotFoundError):
            return Text('cannot start {command}: no such program (check "command" and PATH)', command=repr(cfg.command))
        if isinstance(leaf, PermissionError):
            return Text("cannot start {command}: permission denied", command=repr(cfg.command))
        if isinstance(leaf, NotADirectoryError) or (isinstance(leaf, OSError) and cfg.cwd and not cfg.cwd.is_dir()):
            return Text(
                "cannot start {command}: the folder {folder} does not exist",
                command=repr(cfg.command),
                folder=str(cfg.cwd),
            )
    if running:
        return Text("stopped ({error})", error=one_line(exc, None, with_type=True))
    return Text(
        "exited or broke the connection before the MCP handshake ({error})", error=one_line(exc, None, with_type=True)
    )


# ------------------------------------------------------------------------------------------------
# One manager per process


_shared: McpManager | None = None
_shared_key: tuple[str, int] | None = None
_shared_lock = threading.Lock()


def _config_key(path: Path) -> tuple[str, int]:
    try:
        return str(path), path.stat().st_mtime_ns
    except OSError:
        return str(path), -1


def shared_manager(path: str | os.PathLike[str] | None = None) -> McpManager:
    """The process-wide manager for the config file, started; replaced (and the old servers
    stopped) when the file changes. Raises McpConfigError (McpConfigMissing without a file)."""
    global _shared, _shared_key
    file = Path(path).expanduser().resolve() if path is not None else config_path()
    key = _config_key(file)
    old: McpManager | None = None
    with _shared_lock:
        if _shared is not None and _shared_key == key and not _shared.closed:
            return _shared
        config = load_config(path)
        old, _shared, _shared_key = _shared, McpManager(config), key
        manager = _shared
        manager.start(wait=True)
    if old is not None:
        old.close()
    return manager


def close_shared() -> None:
    global _shared, _shared_key
    with _shared_lock:
        manager, _shared, _shared_key = _shared, None, None
    if manager is not None:
        manager.close()


@atexit.register
def _close_all() -> None:
    for manager in list(_managers):
        try:
            manager.close()
        except Exception:
            log.exception("stopping MCP servers at exit")


def qualified_name(server: str, tool: str) -> str:
    """A tool name unique across servers (for a model), e.g. 'files__read_file'."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}__{tool}")
