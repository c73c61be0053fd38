"""The knowledge base as MCP tools, served with the official `mcp` SDK (2.x: `MCPServer`).

The tools themselves (their functions, schemas and the ingest confinement) are
`rag.generate.kb_tools.KnowledgeBaseTools`; this module registers them on a server and runs it. The
server is read-only unless it is given folders to ingest from.

    python -m rag.mcp.server                       # stdio (what MCP clients start as a child process)
    python -m rag.mcp.server --http --port 8765    # streamable HTTP on http://127.0.0.1:8765/mcp
    python -m rag.mcp.server --allow-ingest ~/docs # adds ingest_file, confined to ~/docs
    python -m rag.mcp.server --answer              # adds ask_knowledge_base, answered by a chat model

(`python -m rag mcp ...` takes the same options.)
"""

from __future__ import annotations

import argparse
import inspect
import logging
import math
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.errors import RagError
from rag.generate.kb_tools import ASK_TOOL, TOOL_NAMES, KnowledgeBaseTools, as_tool_error
from rag.settings import Settings, get_settings

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    from rag.store import Store

# The SDK is imported where it is used, so that `python -m rag <other command>` does not pay for it.

log = logging.getLogger(__name__)

SERVER_NAME = "rag-knowledge-lab"
HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"
IDLE_SECONDS = 600.0
"""An HTTP session with no request for this long is closed (the client starts a new one): a client that never
says goodbye (most scripts) left its session behind, +33 MB per 1,000 in the hostile probe of issue 33; the
SDK's own default keeps them 30 minutes."""
MAX_SESSIONS = 1000
"""Open HTTP sessions at most (a new one past it is answered 503 until one ends): ~33 MB (the SDK: 10,000)."""
INSTRUCTIONS = (
    "Search the user's document knowledge bases. Call list_knowledge_bases to learn their names, "
    "search_knowledge_base to find passages (each hit names its file and pages: cite them), and "
    "get_chunk to read one passage in full."
)


def register(server: MCPServer, tools: KnowledgeBaseTools) -> None:
    from mcp.types import ToolAnnotations

    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    ingesting = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    for name in tools.tool_names():
        server.add_tool(
            stoppable_ask(tools) if name == ASK_TOOL else as_tool_error(getattr(tools, name)),
            name=name,
            description=tools.description(name),
            annotations=read_only if name in (*TOOL_NAMES, ASK_TOOL) else ingesting,
        )


DISCONNECT_POLL = 0.5
"""Seconds between two looks at whether the HTTP client of an answer is still there."""


def stoppable_ask(tools: KnowledgeBaseTools) -> Callable[..., Awaitable[Any]]:
    """`ask_knowledge_base` as an async tool whose answer stops when its HTTP client disconnects.

    The SDK runs a synchronous tool on a worker thread to the end: an answer asked over HTTP by a client that
    then went away (a script killed, a timeout) kept the local model generating for nobody, and every other
    question waited behind it (issue 33). Here the tool watches the HTTP request it answers
    (`Request.is_disconnected`) and sets the answer's stop event when the client has gone; a cancelled call
    (notifications/cancelled) stops it too. Over stdio there is no request to watch: the client's exit ends
    the server. Same name, arguments and schema as the synchronous tool (its signature, plus the context)."""
    import anyio
    import anyio.to_thread
    from mcp.server.mcpserver import Context

    signature = inspect.signature(tools.ask_knowledge_base, eval_str=True)
    answer = as_tool_error(tools.answer)

    async def ask_knowledge_base(ctx: Context, **arguments: Any) -> Any:
        stop = threading.Event()
        request = getattr(ctx.request_context, "request", None)
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append(answer(stop=stop, **arguments))
            except Exception as exc:  # noqa: BLE001 - re-raised below as it is (the task group would wrap it in a group)
                outcome.append(exc)

        try:
            async with anyio.create_task_group() as group:
                if request is not None and hasattr(request, "is_disconnected"):
                    group.start_soon(_stop_when_gone, request, stop)
                await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
                group.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            stop.set()  # the thread ends its answer on its own, and nobody waits for it
            raise
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]

    parameters = [*signature.parameters.values()]
    parameters.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))
    ask_knowledge_base.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    ask_knowledge_base.__annotations__ = {
        **{p.name: p.annotation for p in parameters},
        "return": signature.return_annotation,
    }
    ask_knowledge_base.__doc__ = tools.ask_knowledge_base.__doc__
    return ask_knowledge_base


async def _stop_when_gone(request: Any, stop: threading.Event) -> None:
    """Set `stop` once the HTTP client of `request` (a Starlette Request) has disconnected."""
    import anyio

    while not stop.is_set():
        if await request.is_disconnected():
            log.warning("the client of an %s call disconnected: its answer is stopped", ASK_TOOL)
            stop.set()
            return
        await anyio.sleep(DISCONNECT_POLL)


def build_server(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    allow_ingest: Sequence[str | Path] = (),
    answer_model: str | None = None,
    log_level: str = "WARNING",
) -> tuple[MCPServer, KnowledgeBaseTools]:
    """The MCP server and the tools object behind it (close() it to release the store it opened)."""
    from mcp.server.mcpserver import MCPServer

    tools = KnowledgeBaseTools(settings, store=store, allow_ingest=allow_ingest, answer_model=answer_model)
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level=log_level)  # type: ignore[arg-type]
    register(server, tools)
    return server, tools


def client_config(
    python: str | None = None, root: Path | None = None, *, name: str = SERVER_NAME, allow_ingest: Sequence[str] = ()
) -> dict[str, Any]:
    """A ready `mcpServers` entry (Claude Desktop format) that starts this server over stdio.

    Such clients start servers from a folder of their own, so the project is found through
    PYTHONPATH and the embedded database through an absolute RAG_DATA_DIR."""
    root = (root or Path(__file__).resolve().parents[2]).resolve()
    python = python or project_python(root)
    settings = get_settings()
    env = {"PYTHONPATH": str(root)}
    if settings.database_url:
        env["DATABASE_URL"] = "<your DATABASE_URL>"  # never echo a password into a snippet
    else:
        env["RAG_DATA_DIR"] = str(settings.data_dir)
    if settings.embedder != "auto":
        env["RAG_EMBEDDER"] = settings.embedder
    args = ["-m", "rag", "mcp"]
    if allow_ingest:
        args += ["--allow-ingest", *allow_ingest]
    return {"mcpServers": {name: {"command": python, "args": args, "env": env}}}


def project_python(root: Path) -> str:
    """The project's own interpreter as a path a client can start: `.venv/bin/python` in the project
    when it is there (not the file it links to, which has none of the packages), else this
    process's virtual environment, else this interpreter."""
    for candidate in (root / ".venv" / "bin" / "python", root / ".venv" / "Scripts" / "python.exe"):
        if candidate.exists():
            return str(candidate)
    if sys.prefix != sys.base_prefix:
        return str(Path(sys.prefix) / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python"))
    return sys.executable


# ------------------------------------------------------------------------------------------------
# Entry point


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http", action="store_true", help=f"serve streamable HTTP on http://{HOST}:PORT{HTTP_PATH} instead of stdio"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=IDLE_SECONDS,
        metavar="SECONDS",
        help=f"with --http: close a session after this long without a request (default {IDLE_SECONDS:g})",
    )
    parser.add_argument(
        "--allow-ingest",
        nargs="+",
        metavar="ROOT",
        default=None,
        help="add the ingest_file tool, reading only files inside these folders",
    )
    parser.add_argument(
        "--answer",
        nargs="?",
        const="",
        default=None,
        metavar="MODEL",
        help="add the ask_knowledge_base tool, answering with MODEL (an Ollama model or "
        "'local'; default RAG_CHAT_MODEL, else Ollama's first model, else local)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="with --http: also accept browser requests from this Origin (e.g. "
        "http://localhost:5173 for a web client); repeatable",
    )


def transport_security(port: int, extra_origins: Sequence[str] = ()) -> TransportSecuritySettings:
    """Browser requests only from the server's own origin (and `extra_origins`): the SDK's default for a
    local server accepts any http://localhost:* page, so any page on another local port could call
    the tools. Clients that send no Origin (every non-browser client) are not affected; the Host header
    must name this server (DNS rebinding)."""
    from mcp.server.transport_security import TransportSecuritySettings

    own = [f"http://{HOST}:{port}", f"http://localhost:{port}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{HOST}:{port}", f"localhost:{port}"],
        allowed_origins=[*own, *(o.rstrip("/") for o in extra_origins)],
    )


def _check_port(port: int) -> None:
    if not 1 <= port <= 65535:
        raise RagError(f"--port {port}: choose a port between 1 and 65535")
    with socket.socket() as sock:
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            raise RagError(f"cannot listen on {HOST}:{port} ({exc.strerror or exc}): choose another --port") from exc


def serve(
    settings: Settings | None = None,
    *,
    http: bool = False,
    port: int = DEFAULT_PORT,
    allow_ingest: Sequence[str | Path] = (),
    answer_model: str | None = None,
    allow_origins: Sequence[str] = (),
    idle_timeout: float = IDLE_SECONDS,
) -> int:
    """Serve until the client closes stdin (stdio) or the process is interrupted (HTTP)."""
    settings = settings or get_settings()
    if http:
        _check_port(port)
        if not (math.isfinite(idle_timeout) and idle_timeout > 0):
            raise RagError(f"--idle-timeout {idle_timeout:g}: give a number of seconds above 0")
    server, tools = build_server(settings, allow_ingest=allow_ingest, answer_model=answer_model)
    mode = "read-only" if not tools.roots else f"ingest from {', '.join(str(r) for r in tools.roots)}"
    try:
        if http:
            print(f"MCP server ({mode}) on http://{HOST}:{port}{HTTP_PATH}", file=sys.stderr, flush=True)
            server.run(
                "streamable-http",
                host=HOST,
                port=port,
                streamable_http_path=HTTP_PATH,
                transport_security=transport_security(port, allow_origins),
                session_idle_timeout=idle_timeout,
                max_sessions=MAX_SESSIONS,
            )
        else:
            log.info("MCP server (%s) on stdio", mode)
            server.run("stdio")
    finally:
        tools.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rag.mcp.server", description="Serve the knowledge base as MCP tools."
    )
    add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rag.errors import install_log_masking
    from rag.process import exit_on_sigterm

    exit_on_sigterm()
    install_log_masking()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        return serve(
            get_settings(),
            http=args.http,
            port=args.port,
            allow_ingest=args.allow_ingest or (),
            answer_model=args.answer,
            allow_origins=args.allow_origin or (),
            idle_timeout=args.idle_timeout,
        )
    except (RagError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
