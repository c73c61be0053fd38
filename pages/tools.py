"""Tools: the configured MCP servers (status, tools, input schemas), and calling a tool by hand.

UI only: the config, the child processes and the calls are rag/mcp_client's; the agent's argument
check is rag/agent's. One manager serves the whole app (`mcp_client.shared_manager()`: thread-safe,
restarted when mcp-servers.json changes, servers stopped when the app exits).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from rag import agent, generate
from rag.agent import mcp_client
from rag.agent.arguments import parse_arguments
from rag.agent.websearch import WebSearchTool
from rag.errors import RagError
from rag.generate.agent_turn import routes_path
from rag.mcp import server as mcp_server
from ui import resources, widgets
from ui.format import first_line
from ui.i18n import _, count, tr

STATE_ICONS = {"running": "🟢", "starting": "🟡", "failed": "🔴", "stopped": "⚪", "disabled": "⚪"}


def load_manager() -> mcp_client.McpManager | None:
    path = mcp_client.config_path()
    st.caption(_("Config: `{path}` (set {env} to use another file)", path=path, env=mcp_client.CONFIG_ENV))
    try:
        with st.spinner(_("Starting the MCP servers…")):
            return mcp_client.shared_manager()
    except mcp_client.McpConfigMissing as exc:
        st.info(tr(exc), icon="ℹ️")
        st.code(
            json.dumps(
                {
                    "mcpServers": {
                        "filesystem": {
                            "command": "npx",
                            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/path/to/folder"],
                            "env": {},
                        }
                    }
                },
                indent=2,
            ),
            language="json",
        )
    except RagError as exc:
        st.error(tr(exc), icon="⚠️")
    return None


def server_panel(manager: mcp_client.McpManager, status: mcp_client.ServerStatus) -> None:
    with st.container(border=True, key=f"server_{status.name}"):
        head, action = st.columns([5, 1])
        with head:
            icon = STATE_ICONS.get(status.state, "⚪")
            info = f" · {status.server_info}" if status.server_info else ""
            st.markdown(f"{icon} **{status.name}** · {status.state}{info} · {count(len(status.tools), 'tool')}")
            st.code(status.command_line, language="bash")
        with action:
            if status.state != "disabled" and st.button(_("Restart"), key=f"restart_{status.name}"):
                with st.spinner(_("Restarting {name}…", name=status.name)):
                    manager.restart(status.name)
                st.rerun()
        if status.error:
            st.error(tr(status.error), icon="⚠️")
        if status.stderr_tail and status.state != "running":
            with st.expander(_("Server's stderr (last lines)")):
                st.code(status.stderr_tail)
        for tool in status.tools:
            with st.expander(f"`{tool.name}` — {first_line(tool.description)}"):
                if tool.description:
                    st.markdown(tool.description)
                st.caption(_("Input schema"))
                st.json(dict(tool.input_schema), expanded=True)
                if tool.output_schema:
                    st.caption(_("Output schema"))
                    st.json(dict(tool.output_schema), expanded=False)


def call_form(manager: mcp_client.McpManager) -> None:
    st.subheader(_("Call a tool by hand"))
    running = [s for s in manager.statuses() if s.ok and s.tools]
    if not running:
        st.info(_("No running server has tools to call."))
        return
    left, right = st.columns(2)
    server_name = left.selectbox(_("Server"), [s.name for s in running], key="call_server")
    status = next(s for s in running if s.name == server_name)
    tool_name = right.selectbox(_("Tool"), [t.name for t in status.tools], key="call_tool")
    tool = next(t for t in status.tools if t.name == tool_name)
    st.caption(first_line(tool.description))
    call_by_hand(
        "call",
        f"{server_name}/{tool_name}",
        tool.input_schema,
        lambda arguments: manager.call_tool(server_name, tool_name, arguments),
    )


def call_by_hand(
    key: str, which: str, schema: Any, call: Callable[[dict[str, Any]], mcp_client.ToolCallResult]
) -> None:
    """The arguments box (an example filled in for each tool), the Call button and the result."""
    result_key = f"{key}_result"
    if st.session_state.get(f"{key}_args_for") != which:
        st.session_state[f"{key}_args_for"] = which
        st.session_state[f"{key}_args"] = json.dumps(mcp_client.example_arguments(schema), indent=2)
        st.session_state.pop(result_key, None)
    st.text_area(_("Arguments (JSON object)"), key=f"{key}_args", height=160)
    if st.button(_("Call"), key=f"{key}_submit", type="primary"):
        text = st.session_state[f"{key}_args"]
        problem = agent.validate_arguments(schema, text or "{}")
        if problem:
            st.session_state[result_key] = {"error": f"Not sent: {problem}"}
        else:
            arguments, _problem = parse_arguments(text)  # valid: just checked
            try:
                with st.spinner(_("Calling {tool}…", tool=which)):
                    st.session_state[result_key] = {"result": call(arguments)}
            except RagError as exc:
                st.session_state[result_key] = {"error": tr(exc)}
    shown = st.session_state.get(result_key)
    if not shown:
        return
    with st.container(key=result_key):
        if "error" in shown:
            st.error(shown["error"], icon="⚠️")
            return
        result: mcp_client.ToolCallResult = shown["result"]
        if result.is_error:
            st.error(_("The tool reported an error ({s} s)", s=f"{result.duration:.2f}"), icon="⚠️")
        else:
            st.success(_("Done in {s} s", s=f"{result.duration:.2f}"), icon="✅")
        if result.structured is not None:
            st.json(dict(result.structured))
        st.code(result.text or "(no text content)", language=None, wrap_lines=True)


def own_tools_section() -> None:
    """This app's knowledge-base tools, tried in-process with no config: what `python -m rag mcp` serves."""
    st.subheader(_("This app's knowledge-base tools"))
    st.caption(
        _(
            "What `python -m rag mcp` serves to other agents (and what agent mode gives the model), "
            "called here on this app's database."
        )
    )
    try:
        tools = resources.kb_tools()
        names = tools.tool_names()
    except RagError as exc:
        st.error(tr(exc), icon="⚠️")
        return
    name = st.selectbox(_("Tool"), names, key="own_tool")
    described = tr(tools.described(name))  # the models read it in English; the user in the page's language
    with st.expander(f"`{name}` — {first_line(described)}"):
        if described.strip() != first_line(described).strip():  # the title holds a one-line description whole
            st.markdown(described)
        st.caption(_("Input schema"))
        st.json(tools.input_schema(name), expanded=True)
    call_by_hand("own", name, tools.input_schema(name), lambda arguments: tools.call(name, arguments))


def serve_section() -> None:
    with st.expander(_("Serve this knowledge base to other MCP clients (Claude Desktop, …)")):
        st.markdown(
            _(
                "`python -m rag mcp` serves the knowledge-base tools over stdio "
                "(`list_knowledge_bases`, `search_knowledge_base`, `get_chunk`; read-only); "
                "`--http --port 8765` serves them at `http://127.0.0.1:8765/mcp`; "
                "`--allow-ingest FOLDER` adds `ingest_file`, confined to that folder. "
                "Add this to the client's config (e.g. `claude_desktop_config.json`):"
            )
        )
        st.code(json.dumps(mcp_server.client_config(), indent=2), language="json")


def web_and_routes_section() -> None:
    """Web search (a search-enabled sub-model) and the routes that hand out the tools and budgets."""
    settings = resources.settings()
    st.subheader(_("Web search and routes"))
    web = WebSearchTool.from_settings(settings)
    if web is None:
        st.info(
            _(
                "Web search is off. To give agent mode a `web_search` tool, point it at an OpenAI-compatible "
                "endpoint whose model searches the web (Qwen on DashScope, for instance) and restart:\n\n"
                "`RAG_WEB_SEARCH_URL=https://…/compatible-mode/v1` · `RAG_WEB_SEARCH_MODEL=qwen-plus` · "
                "`RAG_WEB_SEARCH_API_KEY=…` · optional `RAG_WEB_SEARCH_EXTRA_BODY` (JSON merged into the "
                'request; default `{"enable_search": true}`).'
            ),
            icon="🌐",
        )
    else:
        key = _("set (never shown)") if settings.web_search_api_key else _("not set")
        st.markdown(
            "🌐 "
            + _(
                "**Web search is on**: model `{model}` at `{url}` · extra body `{body}` · API key {key}",
                model=web.model or _("(none)"),
                url=web.url,
                body=json.dumps(web.extra_body, ensure_ascii=False),
                key=key,
            )
        )
        query = st.text_input(_("Try a web search"), key="web_try_query", placeholder="劳动合同法 2024 修订")
        if st.button(_("Search the web"), key="web_try", disabled=not query.strip()):
            with st.spinner(_("Asking the search model…")):
                output = web.call({"query": query}, timeout=settings.web_search_timeout)
            data = output.data or {}
            if data.get("unavailable"):
                st.warning(_("Web search is unavailable: {reason}.", reason=data["unavailable"]), icon="🌐")
            elif not data.get("items"):
                st.info(output.text)
            for item in data.get("items") or []:
                st.markdown(
                    f"[{item.get('site') or item['url']}]({item['url']}) {item.get('date', '')}  \n"
                    f"{item.get('summary', '')}"
                )
    try:
        routes = generate.agent_routes(settings)
    except RagError as exc:
        st.error(tr(exc), icon="⚠️")
        return
    path = routes_path(settings)
    st.caption(
        _("Routes from `{path}`", path=path)
        if path.exists()
        else _(
            "The default routes (write `{path}` to change them; see `routes.example.toml`). Agent mode picks one "
            "per question: small talk gets no tools, a route's keyword takes that route, the rest the default; "
            "the chat's Route picker forces one.",
            path=path,
        )
    )
    widgets.table(
        "tools_routes",
        pd.DataFrame(
            [
                {
                    "route": r.name,
                    "tools": ", ".join(r.tools) or _("none"),
                    "budget": r.budget,
                    "keywords": ", ".join(r.keywords),
                    "what for": tr(r.description),
                }
                for r in routes
            ],
            columns=["route", "tools", "budget", "keywords", "what for"],
        ),
        hide_index=True,
        width="stretch",
    )


def main() -> None:
    st.title(_("🛠️ Tools"))
    st.markdown(
        _(
            "MCP servers from the config run as child processes of the app; in agent mode the chat gives the "
            "model their tools, the knowledge-base search and web search as the question's route allows, "
            "within the route's budget of tool calls per turn ({budget} on the default route).",
            budget=agent.DEFAULT_TOOL_BUDGET,
        )
    )
    manager = load_manager()
    if manager is not None:
        statuses = manager.statuses()
        running = sum(s.ok for s in statuses)
        st.markdown(_("**{running} of {total} servers running**", running=running, total=len(statuses)))
        for status in statuses:
            server_panel(manager, status)
        call_form(manager)
    own_tools_section()
    web_and_routes_section()
    serve_section()


main()
