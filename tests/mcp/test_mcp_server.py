"""rag/mcp/server.py (and rag/generate/kb_tools.py, the tools it serves) driven by the SDK's own client: over
stdio and streamable HTTP (real child processes, the real test database, the local embedder), plus the path
confinement of ingest_file."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from rag import ingest
from rag.chunking import ChunkSettings
from rag.errors import RagError
from rag.generate import kb_tools
from rag.mcp import server as mcp_server
from rag.settings import Settings
from rag.store import Store
from tests.conftest import PYTHON, ROOT
from tests.docgen import make_pdf

KB = "handbook"
PAGE_1 = " ".join(f"Line {i}: the cafeteria serves noodles and dumplings at lunch." for i in range(12))
PAGE_2 = " ".join(f"Line {i}: the library closes at nine in the evening on weekdays." for i in range(12))
NOTES = "Parking permits are renewed every January at the front desk of building C.\n" * 3
READ_TOOLS = ["list_knowledge_bases", "search_knowledge_base", "get_chunk"]
ONE_CHUNK_PER_PAGE = ChunkSettings(strategy="recursive", chunk_size=200, chunk_overlap=0)


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.pdf").write_bytes(make_pdf([PAGE_1, PAGE_2]))
    (docs / "notes.txt").write_text(NOTES, encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("The vault code is 1234.", encoding="utf-8")
    (docs / "link.txt").symlink_to(secret)
    (docs / "sub").mkdir()
    return {"docs": docs, "secret": secret, "root": tmp_path}


@pytest.fixture
def handbook(store: Store, settings: Settings, folders: dict[str, Path]) -> Store:
    """The test database holding one knowledge base: report.pdf (two pages)."""
    embedder = ingest.embedder_for_kb(store, settings, KB)
    result = ingest.ingest_path(store, embedder, folders["docs"] / "report.pdf", KB, ONE_CHUNK_PER_PAGE)
    assert result.status == "stored", result
    return store


def texts(result) -> str:
    return "\n".join(block.text for block in result.content)


# ------------------------------------------------------------------------------------------------
# stdio


def test_stdio_lists_searches_reads_and_confines_ingest(http_server, handbook, cli_env, folders):
    # (http_server: started now, so that it boots while this test runs)
    docs, secret = folders["docs"], folders["secret"]
    params = StdioServerParameters(
        command=PYTHON, args=["-m", "rag.mcp.server", "--allow-ingest", str(docs)], env=cli_env, cwd=str(ROOT)
    )

    async def session():
        async with Client(params) as client:
            out = {"tools": (await client.list_tools()).tools}
            out["kbs"] = await client.call_tool("list_knowledge_bases", {})
            out["search"] = await client.call_tool(
                "search_knowledge_base", {"query": "when does the library close", "knowledge_base": KB, "top_k": 2}
            )
            hit_id = out["search"].structured_content["hits"][0]["id"]
            out["chunk"] = await client.call_tool("get_chunk", {"id": hit_id})
            out["no_chunk"] = await client.call_tool("get_chunk", {"id": "not-an-id"})
            out["no_kb"] = await client.call_tool("search_knowledge_base", {"query": "x", "knowledge_base": "nope"})
            out["bad_args"] = await client.call_tool(
                "search_knowledge_base", {"query": "x", "knowledge_base": KB, "top_k": 0}
            )
            out["ingest"] = await client.call_tool("ingest_file", {"path": "notes.txt", "knowledge_base": KB})
            out["dotdot"] = await client.call_tool("ingest_file", {"path": "../secret.txt", "knowledge_base": KB})
            out["sub_dotdot"] = await client.call_tool(
                "ingest_file", {"path": "sub/../../secret.txt", "knowledge_base": KB}
            )
            out["symlink"] = await client.call_tool(
                "ingest_file", {"path": str(docs / "link.txt"), "knowledge_base": KB}
            )
            out["absolute"] = await client.call_tool("ingest_file", {"path": str(secret), "knowledge_base": KB})
            out["after"] = await client.call_tool(
                "search_knowledge_base", {"query": "parking permits renewed", "knowledge_base": KB, "top_k": 1}
            )
            return out

    out = anyio.run(session)

    tools = {t.name: t for t in out["tools"]}
    assert list(tools) == READ_TOOLS + ["ingest_file"]
    search = tools["search_knowledge_base"]
    assert search.description.startswith("Search a knowledge base for the passages closest to a query")
    assert search.input_schema["required"] == ["query", "knowledge_base"]
    for name, prop in search.input_schema["properties"].items():
        assert prop["description"], name
    assert search.input_schema["properties"]["top_k"] == {
        "default": 5,
        "description": "How many passages to return",
        "maximum": 50,
        "minimum": 1,
        "title": "Top K",
        "type": "integer",
    }
    hit_schema = search.output_schema["$defs"]["SearchHit"]
    assert set(hit_schema["required"]) == {"id", "original_filename", "pages", "score", "text"}
    assert tools["get_chunk"].annotations.read_only_hint is True
    assert tools["ingest_file"].annotations.read_only_hint is False
    assert str(docs) in tools["ingest_file"].description

    kbs = out["kbs"].structured_content["knowledge_bases"]
    assert [(k["name"], k["documents"]) for k in kbs] == [(KB, 1)]

    hits = out["search"].structured_content["hits"]
    assert not out["search"].is_error
    assert hits[0]["original_filename"] == "report.pdf"
    assert hits[0]["pages"] == [2]
    assert "library closes at nine" in hits[0]["text"]
    assert hits[0]["score"] > 0

    chunk = out["chunk"].structured_content
    assert chunk["id"] == hits[0]["id"] and chunk["text"] == hits[0]["text"] and chunk["pages"] == [2]

    assert out["no_chunk"].is_error
    assert texts(out["no_chunk"]) == (
        "Error executing tool get_chunk: no chunk with id 'not-an-id': use an id from search_knowledge_base"
    )
    assert texts(out["no_kb"]) == (
        "Error executing tool search_knowledge_base: no knowledge base named 'nope' (existing: handbook)"
    )
    assert out["bad_args"].is_error and "greater than or equal to 1" in texts(out["bad_args"])

    assert not out["ingest"].is_error, texts(out["ingest"])
    assert out["ingest"].structured_content == {
        "path": str((docs / "notes.txt").resolve()),
        "knowledge_base": KB,
        "status": "stored",
        "pages": 1,
        "chunks": 1,
    }
    assert out["after"].structured_content["hits"][0]["original_filename"] == "notes.txt"

    real_docs = docs.resolve()
    real_secret = secret.resolve()
    assert out["dotdot"].is_error
    assert texts(out["dotdot"]) == (
        f"Error executing tool ingest_file: refused '../secret.txt': it resolves through '..' to {real_secret}, "
        f"outside the folders this server may ingest from ({real_docs})"
    )
    assert f"refused 'sub/../../secret.txt': it resolves through '..' to {real_secret}" in texts(out["sub_dotdot"])
    assert texts(out["symlink"]) == (
        f"Error executing tool ingest_file: refused '{docs / 'link.txt'}': it resolves through a symbolic link "
        f"to {real_secret}, outside the folders this server may ingest from ({real_docs})"
    )
    assert f"refused '{secret}': it resolves to {real_secret}, outside" in texts(out["absolute"])
    assert [d.original_filename for d in handbook.list_documents(KB)] == ["notes.txt", "report.pdf"]


# ------------------------------------------------------------------------------------------------
# streamable HTTP


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port} after {timeout} s")


def start_http_server(*options: str, **env: str) -> tuple[int, subprocess.Popen]:
    """`python -m rag.mcp.server --http` with `options` on a free port, `env` added to this process's
    environment; its stderr is a text pipe (read it only once it has ended: the tests' servers write little)."""
    port = free_port()
    proc = subprocess.Popen(
        [PYTHON, "-m", "rag.mcp.server", "--http", "--port", str(port), *options],
        env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    return port, proc


@pytest.fixture(scope="module")
def http_server(pg_uri: str) -> Iterator[tuple[int, subprocess.Popen]]:
    """`python -m rag.mcp.server --http` on a free port, started once for the module (so that it
    boots while the stdio test runs); it opens the database only when a tool needs it."""
    port, proc = start_http_server()
    try:
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(15)
        proc.stderr.close()


# Before test_http_serves_read_only_tools, which stops the module's server.
def test_http_accepts_browser_requests_only_from_its_own_origin(http_server):
    """Issue 18 (9): the SDK's default accepted any http://localhost:* Origin, so a page on another local port
    could call the tools. A client without an Origin (every non-browser client) still gets in."""
    import httpx

    port, proc = http_server
    wait_for_port(port, proc)
    headers = HTTP_HEADERS
    url = f"http://127.0.0.1:{port}/mcp"
    other = httpx.post(url, json=HELLO, headers={**headers, "Origin": "http://localhost:5173"}, timeout=30)
    assert other.status_code == 403
    own = httpx.post(url, json=HELLO, headers={**headers, "Origin": f"http://127.0.0.1:{port}"}, timeout=30)
    assert own.status_code == 200
    no_origin = httpx.post(url, json=HELLO, headers=headers, timeout=30)
    assert no_origin.status_code == 200
    settings = mcp_server.transport_security(8765, ["http://localhost:5173/"])
    assert settings.allowed_origins == ["http://127.0.0.1:8765", "http://localhost:8765", "http://localhost:5173"]


def test_http_serves_read_only_tools(handbook, http_server):
    port, proc = http_server
    wait_for_port(port, proc)

    async def session():
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            tools = (await client.list_tools()).tools
            found = await client.call_tool(
                "search_knowledge_base", {"query": "noodles and dumplings", "knowledge_base": KB, "top_k": 1}
            )
            ingest_call = await client.call_tool("ingest_file", {"path": "x.txt", "knowledge_base": KB})
            return tools, found, ingest_call

    tools, found, ingest_call = anyio.run(session)
    assert [t.name for t in tools] == READ_TOOLS
    hit = found.structured_content["hits"][0]
    assert (hit["original_filename"], hit["pages"]) == ("report.pdf", [1])
    assert ingest_call.is_error and texts(ingest_call) == "Unknown tool: ingest_file"
    proc.terminate()
    proc.wait(15)
    assert f"MCP server (read-only) on http://127.0.0.1:{port}/mcp" in proc.stderr.read()


HTTP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
"""What a streamable-HTTP client sends with each request."""
HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
"""The request that opens a session (its id comes back in the mcp-session-id header)."""


def test_an_idle_http_session_is_closed_and_a_busy_one_kept() -> None:
    """Issue 33: a client that never ends its session (most scripts) left it behind for good, +33 MB per 1,000.
    With --idle-timeout 2, a session used every second stays; one left alone for 4 s answers 404 (closed),
    and a new one can be started."""
    import httpx

    port, proc = start_http_server("--idle-timeout", "2")
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        headers = dict(HTTP_HEADERS)

        def session() -> str:
            reply = httpx.post(url, json=HELLO, headers=headers, timeout=30)
            assert reply.status_code == 200
            return reply.headers["mcp-session-id"]

        def ping(sid: str) -> int:
            body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            return httpx.post(url, json=body, headers={**headers, "mcp-session-id": sid}, timeout=30).status_code

        busy, idle = session(), session()
        for _ in range(4):
            time.sleep(1)
            assert ping(busy) == 200
        assert ping(idle) == 404
        assert ping(session()) == 200
    finally:
        proc.terminate()
        proc.wait(15)
        proc.stderr.close()


def slow_model(httpserver) -> tuple[list[float], threading.Event]:
    """A stand-in Ollama whose /api/chat streams a word every 0.2 s for 60 s: when each word was pulled, and an
    event set once its stream is closed (by its reader, or at its end)."""
    import json

    from werkzeug import Response

    pulled: list[float] = []
    closed = threading.Event()

    def chat(request):
        def words():
            try:
                for i in range(300):
                    pulled.append(time.monotonic())
                    message = {"role": "assistant", "content": f"word{i} "}
                    yield json.dumps({"model": "m", "message": message, "done": False}) + "\n"
                    time.sleep(0.2)
                yield json.dumps({"model": "m", "message": {"role": "assistant", "content": ""}, "done": True}) + "\n"
            finally:
                closed.set()

        return Response(words(), content_type="application/x-ndjson")

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(chat)
    return pulled, closed


def test_an_answer_whose_http_client_disconnects_is_stopped(handbook, httpserver) -> None:
    """Issue 33: an ask_knowledge_base call over HTTP went on generating after its client had gone (the SDK runs
    the tool to its end), holding the local model for nobody. The stand-in model streams a word every 0.2 s for
    60 s; the client reads the start of the reply and closes its connection; the server must stop pulling the
    stream within seconds."""
    import httpx

    pulled, closed = slow_model(httpserver)
    port, proc = start_http_server("--answer", "qwen2.5:7b-instruct", OLLAMA_HOST=httpserver.url_for("/").rstrip("/"))
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        headers = dict(HTTP_HEADERS)
        with httpx.Client(timeout=60) as client:
            sid = client.post(url, json=HELLO, headers=headers).headers["mcp-session-id"]
            headers["mcp-session-id"] = sid
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert client.post(url, json=initialized, headers=headers).status_code == 202
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "ask_knowledge_base",
                "arguments": {"question": "When does the library close?", "knowledge_base": KB},
            },
        }
        with httpx.Client(timeout=60) as client, client.stream("POST", url, json=call, headers=headers) as reply:
            assert reply.status_code == 200
            deadline = time.monotonic() + 60
            while len(pulled) < 5 and time.monotonic() < deadline:  # the answer is being generated
                time.sleep(0.1)
            assert len(pulled) >= 5, "the model was never asked"
        gone = time.monotonic()  # the client's connection is closed here
        assert closed.wait(15), f"the answer went on: {len(pulled)} words pulled"
        assert pulled[-1] - gone < 5 and len(pulled) < 150
    finally:
        proc.terminate()
        proc.wait(15)
        log = proc.stderr.read()
        proc.stderr.close()
    assert "disconnected: its answer is stopped" in log


def test_a_cancelled_answer_is_stopped(handbook, settings, httpserver) -> None:
    """A client that cancels its ask_knowledge_base call (notifications/cancelled, as a client's timeout sends)
    stops the answer too: the stand-in model's stream, a word every 0.2 s for 60 s, is closed within seconds."""
    import dataclasses

    pulled, closed = slow_model(httpserver)
    near = dataclasses.replace(settings, ollama_host=httpserver.url_for("/").rstrip("/"))
    server, _tools = mcp_server.build_server(near, store=handbook, answer_model="qwen2.5:7b-instruct")

    async def session() -> float:
        async with Client(server) as client:
            with anyio.move_on_after(3):
                await client.call_tool(
                    "ask_knowledge_base", {"question": "When does the library close?", "knowledge_base": KB}
                )
            return time.monotonic()

    cancelled = anyio.run(session)
    assert len(pulled) >= 3, "the model was never asked"
    assert closed.wait(15), f"the answer went on: {len(pulled)} words pulled"
    assert pulled[-1] - cancelled < 5 and len(pulled) < 150


def test_the_idle_timeout_must_be_a_number_of_seconds(capsys):
    assert mcp_server.main(["--http", "--port", str(free_port()), "--idle-timeout", "0"]) == 2
    assert "error: --idle-timeout 0: give a number of seconds above 0" in capsys.readouterr().err


def test_http_port_in_use_is_a_clear_error(capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert mcp_server.main(["--http", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot listen on 127.0.0.1:{port} (")
    assert err.rstrip().endswith("): choose another --port")


# ------------------------------------------------------------------------------------------------
# Confinement, in-process


def test_confine_allows_paths_that_stay_inside(folders):
    docs = folders["docs"]
    roots = kb_tools.resolve_roots([docs])
    assert kb_tools.confine("notes.txt", roots) == (docs / "notes.txt").resolve()
    assert kb_tools.confine("sub/../notes.txt", roots) == (docs / "notes.txt").resolve()
    (docs / "inner.md").symlink_to(docs / "notes.txt")  # a link that stays inside is fine
    assert kb_tools.confine(str(docs / "inner.md"), roots) == (docs / "notes.txt").resolve()


@pytest.mark.parametrize(
    "path, message",
    [
        ("missing.txt", "'missing.txt': no such file (looked at {docs}/missing.txt)"),
        ("sub", "'sub' is not a file"),
        ("", "the path is empty: give a file inside {docs}"),
    ],
)
def test_confine_errors(folders, path, message):
    docs = folders["docs"].resolve()
    (folders["docs"] / "image.png").write_bytes(b"\x89PNG")
    with pytest.raises(RagError) as info:
        kb_tools.confine(path, kb_tools.resolve_roots([docs]))
    assert str(info.value) == message.format(docs=docs)


def test_confine_refuses_unsupported_types_and_read_only(folders):
    docs = folders["docs"]
    (docs / "image.png").write_bytes(b"\x89PNG")
    with pytest.raises(RagError, match=r"^'image.png': unsupported file type; supported: \.pdf, \.epub"):
        kb_tools.confine("image.png", kb_tools.resolve_roots([docs]))
    with pytest.raises(RagError, match=r"^this server is read-only: start it with --allow-ingest FOLDER"):
        kb_tools.confine("notes.txt", ())
    with pytest.raises(RagError, match=r"^--allow-ingest .*/nowhere: no such folder$"):
        kb_tools.resolve_roots([folders["root"] / "nowhere"])
    with pytest.raises(RagError, match=r"^--allow-ingest .*/notes.txt: not a folder$"):
        kb_tools.resolve_roots([docs / "notes.txt"])


def test_a_file_swapped_for_a_link_after_the_check_is_not_read(folders):
    """Issue 18 (7): confine() approved notes.txt; before it is read, it becomes a link to a file outside
    the allowed folder (and, in a second case, its folder does). The read opens once and checks what it
    opened: refused, the outside text never returned."""
    docs, secret = folders["docs"], folders["secret"]
    roots = kb_tools.resolve_roots([docs])
    approved = kb_tools.confine("notes.txt", roots)
    assert kb_tools.read_confined(approved, roots) == NOTES.encode()
    approved.unlink()
    approved.symlink_to(secret)
    with pytest.raises(RagError, match=r"cannot open the file .*a symbolic link is refused"):
        kb_tools.read_confined(approved, roots)
    # A folder on the way swapped for a link: O_NOFOLLOW guards only the last part, the opened
    # descriptor's own path shows where it really is.
    (docs / "sub" / "inner.txt").write_text("inside", encoding="utf-8")
    checked = kb_tools.confine("sub/inner.txt", roots)
    outside = folders["root"] / "outside"
    outside.mkdir()
    (outside / "inner.txt").write_text("The vault code is 1234.", encoding="utf-8")
    (docs / "sub" / "inner.txt").unlink()
    (docs / "sub").rmdir()
    (docs / "sub").symlink_to(outside)
    with pytest.raises(RagError, match="changed after it was checked and now leads outside"):
        kb_tools.read_confined(checked, roots)


def test_a_file_over_the_size_limit_is_refused_with_its_size(folders):
    roots = kb_tools.resolve_roots([folders["docs"]])
    approved = kb_tools.confine("notes.txt", roots)
    with pytest.raises(RagError, match=r"^notes.txt: 0 MB is more than this server ingests \(0 MB\)$"):
        kb_tools.read_confined(approved, roots, limit=10)


def test_in_process_tools_match_what_clients_see(handbook, settings):
    server, tools = mcp_server.build_server(settings, store=handbook)

    async def listing():
        async with Client(server) as client:
            return (await client.list_tools()).tools

    listed = {t.name: t for t in anyio.run(listing)}
    assert list(listed) == READ_TOOLS
    for name in READ_TOOLS:
        assert listed[name].input_schema == tools.input_schema(name)
        assert listed[name].description == tools.description(name)
    result = tools.search_knowledge_base("library", KB, top_k=1, filter="original_filename == 'report.pdf'")
    assert result.hits[0].original_filename == "report.pdf"
    assert tools.search_knowledge_base("library", KB, filter="original_filename == 'other.pdf'").hits == []


def test_client_config_snippet_starts_our_server(settings):
    config = mcp_server.client_config(python="/usr/bin/python3", root=ROOT)
    entry = config["mcpServers"]["rag-knowledge-lab"]
    assert entry["command"] == "/usr/bin/python3"
    assert entry["args"] == ["-m", "rag", "mcp"]
    assert entry["env"]["PYTHONPATH"] == str(ROOT)
    if not os.environ.get("DATABASE_URL"):
        assert entry["env"]["RAG_DATA_DIR"] == os.environ["RAG_DATA_DIR"]
    assert mcp_server.client_config()["mcpServers"]["rag-knowledge-lab"]["command"] == sys.executable


# ------------------------------------------------------------------------------------------------
# Answering (opt-in), through the same engine as the chat page


def test_ask_tool_answers_a_follow_up_with_the_chat_engine(handbook, settings, httpserver):
    import dataclasses
    import json

    from werkzeug import Response

    def chat(request):
        messages = request.get_json()["messages"]
        text = (
            "Where do I get lunch in the library?"
            if "Standalone query:" in messages[-1]["content"]
            else "It closes at nine in the evening [1]. See also [5]."
        )
        lines = [
            {"model": "qwen2.5:7b-instruct", "message": {"role": "assistant", "content": text}, "done": False},
            {
                "model": "qwen2.5:7b-instruct",
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "stop",
            },
        ]
        return Response("".join(json.dumps(line) + "\n" for line in lines), content_type="application/x-ndjson")

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(chat)
    near = dataclasses.replace(settings, ollama_host=httpserver.url_for("/").rstrip("/"))
    server, tools = mcp_server.build_server(near, store=handbook, answer_model="qwen2.5:7b-instruct")
    history = [
        {"role": "user", "content": "Where do I get lunch?"},
        {"role": "assistant", "content": "The cafeteria serves noodles [1]."},
    ]

    async def session():
        async with Client(server) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            answer = await client.call_tool(
                "ask_knowledge_base", {"question": "And the library?", "knowledge_base": KB, "history": history}
            )
            missing = await client.call_tool("ask_knowledge_base", {"question": "x", "knowledge_base": "nope"})
            return listed, answer, missing

    listed, answer, missing = anyio.run(session)
    assert list(listed) == READ_TOOLS + ["ask_knowledge_base"]
    ask = listed["ask_knowledge_base"]
    assert ask.annotations.read_only_hint is True and ask.input_schema == tools.input_schema("ask_knowledge_base")
    assert ask.input_schema["required"] == ["question", "knowledge_base"]
    assert not answer.is_error, texts(answer)
    out = answer.structured_content
    assert out["answer"] == "It closes at nine in the evening [1]. See also [5]."
    assert out["query"] == "Where do I get lunch in the library?" and out["model"] == "ollama:qwen2.5:7b-instruct"
    assert [c["n"] for c in out["citations"]] == [1] and out["unknown_citations"] == [5]
    assert out["citations"][0]["original_filename"] == "report.pdf" and out["citations"][0]["pages"] == [2]
    rewrite, last = [json.loads(r.get_data()) for r, _ in httpserver.log if r.path == "/api/chat"]
    assert "User: Where do I get lunch?" in rewrite["messages"][0]["content"]
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "user"]
    assert missing.is_error and texts(missing).startswith(
        "Error executing tool ask_knowledge_base: Search failed: no knowledge base named 'nope'"
    )
