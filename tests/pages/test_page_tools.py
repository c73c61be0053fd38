"""The Tools page through Streamlit's AppTest, with a temporary mcp-servers.json naming our own MCP
server (a real child process over stdio) and a server that cannot start."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag import ingest
from rag.agent import mcp_client
from rag.chunking import SPRING_DEFAULT
from rag.settings import Settings
from rag.store import Store
from tests.conftest import PYTHON, ROOT

PAGE = str(ROOT / "pages" / "tools.py")
KB = "handbook"
NOTES = "The library closes at nine in the evening on weekdays.\n"


@pytest.fixture(autouse=True)
def fresh_manager() -> Iterator[None]:
    mcp_client.close_shared()
    yield
    mcp_client.close_shared()


def run(at: AppTest) -> AppTest:
    at.run(timeout=90)
    assert not at.exception, [e.value for e in at.exception]
    return at


def write_config(path: Path, servers: dict) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def test_servers_tools_and_a_call_by_hand(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    embedder = ingest.embedder_for_kb(store, settings, KB)
    assert ingest.ingest_bytes(store, embedder, NOTES.encode(), "notes.txt", KB, SPRING_DEFAULT).ok
    config = write_config(
        tmp_path / "mcp.json",
        {
            "kb": {"command": PYTHON, "args": ["-m", "rag.mcp.server"], "cwd": str(ROOT)},
            "ghost": {"command": str(tmp_path / "no-such-program"), "args": ["--stdio"]},
            "crash": {"command": PYTHON, "args": ["-c", "import sys; sys.exit('boom: FILES_TOKEN is not set')"]},
            "later": {"command": "npx", "args": ["-y", "some-server"], "disabled": True},
        },
    )
    monkeypatch.setenv(mcp_client.CONFIG_ENV, str(config))

    at = run(AppTest.from_file(PAGE, default_timeout=90))

    assert f"Config: `{config}`" in at.caption[0].value
    assert "**1 of 4 servers running**" in [m.value for m in at.markdown]
    kb = at.container(key="server_kb")
    assert kb.markdown[0].value.startswith("🟢 **kb** · running · rag-knowledge-lab")
    assert kb.markdown[0].value.endswith("· 3 tools")
    labels = [e.label for e in kb.expander]
    assert labels == [
        "`list_knowledge_bases` — List the knowledge bases that can be searched, with their "
        "number of documents and chunks.",
        "`search_knowledge_base` — Search a knowledge base for the passages closest to a query "
        "(hybrid vector and keyword search).",
        "`get_chunk` — Read one stored passage in full, by the id a search returned.",
    ]
    search_schema = kb.expander[1].json[0].value
    assert json.loads(search_schema)["required"] == ["query", "knowledge_base"]
    ghost = at.container(key="server_ghost")
    assert ghost.markdown[0].value.startswith("🔴 **ghost** · failed")
    assert ghost.error[0].value == (
        f"cannot start '{tmp_path / 'no-such-program'}': no such program (check \"command\" and PATH)"
    )
    crash = at.container(key="server_crash")
    assert crash.error[0].value == (
        "exited or broke the connection before the MCP handshake (MCPError: "
        "Connection closed); its stderr ends with: boom: FILES_TOKEN is not set"
    )
    assert crash.expander[0].code[0].value == "boom: FILES_TOKEN is not set"
    assert at.container(key="server_later").markdown[0].value.startswith("⚪ **later** · disabled")
    at.button(key="restart_ghost").click()
    run(at)
    assert at.container(key="server_ghost").markdown[0].value.startswith("🔴 **ghost** · failed")
    assert at.container(key="server_kb").markdown[0].value.startswith("🟢 **kb** · running")

    # call search_knowledge_base by hand: the form starts from the schema's defaults
    assert at.selectbox(key="call_server").options == ["kb"]
    at.selectbox(key="call_tool").set_value("search_knowledge_base")
    run(at)
    assert json.loads(at.text_area(key="call_args").value) == {
        "query": "",
        "knowledge_base": "",
        "top_k": 5,
        "filter": None,
    }
    at.text_area(key="call_args").set_value(json.dumps({"query": "library", "knowledge_base": KB, "top_k": 1}))
    at.button(key="call_submit").click()
    run(at)
    result = at.container(key="call_result")
    assert result.success[0].value.startswith("Done in ")
    found = json.loads(result.json[0].value)
    assert found["hits"][0]["original_filename"] == "notes.txt"
    assert found["hits"][0]["text"] == NOTES.strip()

    # arguments that do not fit the schema are not sent
    at.text_area(key="call_args").set_value(json.dumps({"query": "library", "top_k": 0}))
    at.button(key="call_submit").click()
    run(at)
    assert at.container(key="call_result").error[0].value == (
        "Not sent: 'knowledge_base' is a required property; top_k: 0 is less than the minimum of 1"
    )

    # a tool error comes back as the tool's result
    at.text_area(key="call_args").set_value(json.dumps({"query": "x", "knowledge_base": "nope"}))
    at.button(key="call_submit").click()
    run(at)
    shown = at.container(key="call_result")
    assert shown.error[0].value.startswith("The tool reported an error")
    assert shown.code[0].value == (
        "Error executing tool search_knowledge_base: no knowledge base named 'nope' (existing: handbook)"
    )


def test_without_a_config_our_own_tools_can_be_tried(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    embedder = ingest.embedder_for_kb(store, settings, KB)
    assert ingest.ingest_bytes(store, embedder, NOTES.encode(), "notes.txt", KB, SPRING_DEFAULT).ok
    missing = tmp_path / "absent.json"
    monkeypatch.setenv(mcp_client.CONFIG_ENV, str(missing))

    at = run(AppTest.from_file(PAGE))

    assert at.info[0].value == (
        f"No MCP servers configured: {mcp_client.CONFIG_ENV} points to {missing}, which "
        f"does not exist; copy mcp-servers.example.json to mcp-servers.json and edit it "
        f"(see docs/mcp.md)"
    )
    assert not at.error
    # This app's own tools are there to try, with no config at all.
    assert at.selectbox(key="own_tool").options == ["list_knowledge_bases", "search_knowledge_base", "get_chunk"]
    at.button(key="own_submit").click()
    run(at)
    listed = json.loads(at.container(key="own_result").json[0].value)
    assert KB in [k["name"] for k in listed["knowledge_bases"]]
    at.selectbox(key="own_tool").set_value("search_knowledge_base")
    run(at)
    at.text_area(key="own_args").set_value(json.dumps({"query": "library", "knowledge_base": KB, "top_k": 1}))
    at.button(key="own_submit").click()
    run(at)
    (hit,) = json.loads(at.container(key="own_result").json[0].value)["hits"]
    assert hit["original_filename"] == "notes.txt" and hit["text"] == NOTES.strip()
    # get_chunk on the id the search gave
    at.selectbox(key="own_tool").set_value("get_chunk")
    run(at)
    at.text_area(key="own_args").set_value(json.dumps({"id": hit["id"]}))
    at.button(key="own_submit").click()
    run(at)
    assert json.loads(at.container(key="own_result").json[0].value)["text"] == NOTES.strip()
    # a tool error comes back as the tool's result, worded as an MCP client shows it
    at.text_area(key="own_args").set_value(json.dumps({"id": "not-a-uuid"}))
    at.button(key="own_submit").click()
    run(at)
    shown = at.container(key="own_result")
    assert shown.error[0].value.startswith("The tool reported an error")
    assert shown.code[0].value.startswith("Error executing tool get_chunk: ")


def test_the_client_snippet_starts_the_projects_own_venv_python(tmp_path: Path) -> None:
    from rag.mcp.server import client_config, project_python

    venv_python = tmp_path / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(Path(PYTHON).resolve())  # as venv makes it: a link to the base interpreter
    config = client_config(root=tmp_path)
    assert config["mcpServers"]["rag-knowledge-lab"]["command"] == str(venv_python)
    # Here too: the project's .venv (make test makes it) is named as it is, not the file it links to.
    assert project_python(ROOT) == str(ROOT / ".venv" / "bin" / "python")


def test_an_invalid_config_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    broken = tmp_path / "mcp.json"
    broken.write_text('{"mcpServers": {"kb": {"command": "x",}}}', encoding="utf-8")
    monkeypatch.setenv(mcp_client.CONFIG_ENV, str(broken))

    at = run(AppTest.from_file(PAGE))

    assert (
        at.error[0].value == f"{broken}: invalid JSON at line 1 column 39 (Expecting property name enclosed in "
        f"double quotes)"
    )


# ------------------------------------------------------------------------------------------------
# The config file (rag/mcp_client), as the page reports it


@pytest.mark.parametrize(
    "servers, message",
    [
        (
            [],
            'expected an object with "mcpServers", like {"mcpServers": {"name": {"command": "...", '
            '"args": [...], "env": {...}}}}',
        ),
        ({"mcpServers": {"a": "npx"}}, 'server \'a\' must be an object with "command", "args" and "env"'),
        ({"mcpServers": {"a": {"args": []}}}, 'server \'a\' needs a "command" (the program to start), e.g. "npx"'),
        (
            {"mcpServers": {"a": {"url": "http://x/mcp"}}},
            'server \'a\': only stdio servers ("command") are supported, not "url"',
        ),
        ({"mcpServers": {"a": {"command": "x", "args": "--stdio"}}}, "server 'a': \"args\" must be a list of strings"),
        (
            {"mcpServers": {"a": {"command": "x", "env": {"PORT": 80}}}},
            'server \'a\': "env" must map names to string values, e.g. {"KEY": "1"}',
        ),
        ({"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}, "server 'a': \"disabled\" must be true or false"),
    ],
)
def test_config_mistakes_are_one_line(tmp_path: Path, servers, message):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(servers), encoding="utf-8")
    with pytest.raises(mcp_client.McpConfigError) as info:
        mcp_client.load_config(path)
    assert str(info.value) == f"{path}: {message}"


def test_config_paths_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = write_config(
        tmp_path / "mcp.json",
        {
            "venv": {"command": ".venv/bin/python", "args": ["-m", "rag", "mcp"], "env": {"EXTRA": "1"}},
            "elsewhere": {"command": "npx", "cwd": "sub"},
        },
    )
    config = mcp_client.load_config(path)
    venv, elsewhere = config.servers
    # made absolute from the config's folder, without following the venv's python link
    assert (venv.command, venv.cwd, venv.args) == (str(tmp_path / ".venv/bin/python"), tmp_path, ("-m", "rag", "mcp"))
    assert (elsewhere.command, elsewhere.cwd) == ("npx", tmp_path / "sub")
    assert venv.command_line == f"{tmp_path / '.venv/bin/python'} -m rag mcp"
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    monkeypatch.setenv("RAG_CHAT_MODEL", "ollama:qwen")
    monkeypatch.setenv("DATABASE_URL", "postgresql://rag:S3cret@db/rag")
    monkeypatch.setenv("RAG_WEB_SEARCH_API_KEY", "sk-do-not-leak")
    assert mcp_client.is_own_server(venv.command, venv.args) and not mcp_client.is_own_server("npx", ("-y", "x"))
    env = mcp_client.child_environment(venv.env, own=True)
    assert env["EXTRA"] == "1" and env["RAG_CHAT_MODEL"] == "ollama:qwen" and env["PATH"]
    assert env["DATABASE_URL"] == "postgresql://rag:S3cret@db/rag"  # our own server shares the database
    assert "SECRET_TOKEN" not in env
    # Another server gets the SDK's defaults and its own config's env: no database password, no API key.
    other = mcp_client.child_environment({"ROOT": "/data"})
    assert other["ROOT"] == "/data" and other["PATH"]
    assert not {"DATABASE_URL", "RAG_WEB_SEARCH_API_KEY", "RAG_CHAT_MODEL", "SECRET_TOKEN"} & set(other)
    monkeypatch.setenv(mcp_client.CONFIG_ENV, str(path))
    assert mcp_client.config_path() == path
    monkeypatch.delenv(mcp_client.CONFIG_ENV)
    assert mcp_client.config_path() == ROOT / "mcp-servers.json"
    example = mcp_client.load_config(ROOT / "mcp-servers.example.json")
    assert [(s.name, s.disabled) for s in example.servers] == [("knowledge-base", False), ("filesystem", True)]
    assert example.servers[0].command == str(ROOT / ".venv" / "bin" / "python")


def test_example_arguments_follow_the_schema():
    schema = {
        "type": "object",
        "required": ["path", "mode", "depth", "tags"],
        "properties": {
            "path": {"type": "string"},
            "mode": {"enum": ["fast", "slow"]},
            "depth": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "tags": {"type": ["array", "null"]},
            "limit": {"type": "integer", "default": 10},
            "optional": {"type": "string"},
        },
    }
    assert mcp_client.example_arguments(schema) == {"path": "", "mode": "fast", "depth": 0, "tags": [], "limit": 10}


def test_web_search_is_explained_when_off_tried_when_on_and_the_routes_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, httpserver
) -> None:
    from rag.settings import get_settings

    monkeypatch.setenv(mcp_client.CONFIG_ENV, str(tmp_path / "absent.json"))
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    try:
        at = run(AppTest.from_file(PAGE))
        assert any(i.value.startswith("Web search is off. To give agent mode a `web_search` tool") for i in at.info)
        routes = at.container(key="tools_routes").dataframe[0].value
        assert routes["route"].tolist() == ["chit-chat", "default", "expert"]
        assert routes["budget"].tolist() == [0, 6, 12]

        httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(
            {
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "content": json.dumps(
                                [
                                    {
                                        "summary": "Revised in 2024.",
                                        "site": "gov.cn",
                                        "url": "https://www.gov.cn/a.htm",
                                        "date": "2024-07-01",
                                    }
                                ]
                            ),
                        }
                    }
                ]
            }
        )
        monkeypatch.setenv("RAG_WEB_SEARCH_URL", httpserver.url_for("/v1"))
        monkeypatch.setenv("RAG_WEB_SEARCH_MODEL", "qwen-plus")
        monkeypatch.setenv("RAG_WEB_SEARCH_API_KEY", "sk-tools-secret")
        (tmp_path / "routes.toml").write_text(
            '[routes.default]\ntools = ["web_search"]\nbudget = 2\n', encoding="utf-8"
        )
        get_settings.cache_clear()
        at = run(AppTest.from_file(PAGE))
        shown = "\n".join(m.value for m in at.markdown)
        assert "**Web search is on**: model `qwen-plus`" in shown and "API key set (never shown)" in shown
        assert "sk-tools-secret" not in shown
        assert at.container(key="tools_routes").dataframe[0].value["route"].tolist() == ["default"]
        at.text_input(key="web_try_query").set_value("劳动合同法 2024")
        run(at)
        at.button(key="web_try").click()
        run(at)
        assert any(m.value.startswith("[gov.cn](https://www.gov.cn/a.htm) 2024-07-01") for m in at.markdown)
        assert not at.exception
    finally:
        get_settings.cache_clear()
