"""Agent turns: the model calls tools (the knowledge base search, web search, MCP servers' tools)
within the budget of the turn's route.

Started and finished by `rag.generate.engine`. The router picks the route (rag.agent.routes): its
tools are offered and its budget is the turn's. The passages the knowledge base searches returned
become the turn's sources, numbered in the order found, so the page shows them like a chat's; the
pages the web searches returned become its web sources.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.errors import RagError
from rag.generate.conversation import Live, Turn
from rag.generate.prompt import Source, number_sources
from rag.llms.stream import Keepalive, Runner
from rag.llms.types import ChatModel, Message
from rag.text import Text, text_of

if TYPE_CHECKING:
    from rag.agent import Step
    from rag.agent.routes import Route
    from rag.agent.websearch import WebItem
    from rag.generate.engine import Request
    from rag.settings import Settings
    from rag.store import Hit, Store

MAX_AGENT_SOURCES = 12


def start_agent(
    turn: Turn,
    request: Request,
    model: ChatModel,
    settings: Settings,
    store: Store,
    history: Sequence[Message],
    warn: Callable[[str], None],
    keepalive: Keepalive | None = None,
) -> Turn | Live:
    """The live agent turn, or the turn with the problem that kept the agent from starting; `keepalive`:
    how its runner is stopped when nobody follows it (rag.llms.stream.Watchdog)."""
    from rag import agent
    from rag.agent import mcp_client
    from rag.agent.routes import pick_route
    from rag.agent.websearch import WebSearchTool
    from rag.generate.kb_tools import KnowledgeBaseTools

    try:
        manager = mcp_client.shared_manager()
    except mcp_client.McpConfigMissing:
        manager = None
    except RagError as exc:
        warn(Text("MCP servers: {error}", error=text_of(exc)))
        manager = None
    try:
        choice = pick_route(turn.question, agent_routes(settings), request.route)
        offered = agent.build_tools(KnowledgeBaseTools(settings, store=store), request.kbs, manager)
        web = WebSearchTool.from_settings(settings)
        if web is not None:
            offered.append(web)
        tools = [t for t in offered if choice.route.offers(t.name)]
        runner = agent.Agent.for_model(
            model,
            tools,
            timeout=settings.ollama_timeout,
            budget=choice.route.budget,
            temperature=request.temperature,
            num_ctx=request.num_ctx,
            system=agent.DEFAULT_SYSTEM if tools else agent.NO_TOOLS_SYSTEM,
            allowed=request.allowed_tools,
        )
    except (RagError, ValueError) as exc:
        return dataclasses.replace(turn, problem=Text("Agent mode cannot start: {error}", error=text_of(exc)))
    turn = dataclasses.replace(
        turn,
        route=choice.route.name,
        route_reason=choice.reason,
        route_tools=tuple(t.name for t in tools),
        route_budget=choice.route.budget,
    )
    question = turn.question
    return Live(
        turn,
        Runner(
            lambda stop: runner.events(question, history=history, stop_event=stop),
            name="chat-agent",
            keepalive=keepalive,
        ),
    )


def tools_needing_consent() -> tuple[str, ...]:
    """The MCP tools agent mode would offer that may change things (not marked read-only), by the names
    the model sees: each runs only when the user allows it (Request.allowed_tools)."""
    from rag import agent
    from rag.agent import mcp_client

    try:
        manager = mcp_client.shared_manager()
    except RagError:  # no config, or a broken one (agent mode says why when it starts)
        return ()
    return tuple(t.name for t in agent.build_tools(None, (), manager) if not getattr(t, "read_only", False))


def agent_routes(settings: Settings) -> tuple[Route, ...]:
    """The routes agent mode chooses from (routes.toml, else the defaults); RagError for a bad file."""
    from rag.agent.routes import load_routes

    return load_routes(routes_path(settings))


def routes_path(settings: Settings) -> Path:
    """RAG_ROUTES_FILE, else routes.toml in the working folder (the defaults when neither exists)."""
    return settings.routes_file or Path("routes.toml")


def finish_agent(turn: Turn, runner: Runner[Any], lookup: Callable[[str], Hit | None] | None = None) -> Turn:
    """The turn with the agent's steps and answer; sources are the passages its searches returned."""
    from rag import agent

    items = runner.items()
    steps = tuple(i for i in items if isinstance(i, agent.Step))
    result = next((i for i in items if isinstance(i, agent.AgentResult)), None)
    sources = agent_sources(steps, lookup) if lookup is not None else ()
    web, warning = web_sources(steps)
    if result is None:
        return dataclasses.replace(
            turn,
            steps=steps,
            sources=sources,
            error=runner.error,
            stopped=runner.stop_requested,
            web_sources=web,
            web_warning=warning,
        )
    calls = len(result.steps)
    summary = Text(
        "{calls} · {used}/{budget} of the budget ({left} left) · {requests}",
        calls=Text("{n} tool call", n=calls) if calls == 1 else Text("{n} tool calls", n=calls),
        used=result.calls_used,
        budget=result.budget,
        left=result.budget - result.calls_used,
        requests=Text("{n} model request", n=result.rounds)
        if result.rounds == 1
        else Text("{n} model requests", n=result.rounds),
    )
    if result.refused:
        summary = Text("{summary} · {n} refused", summary=summary, n=result.refused)
    return dataclasses.replace(
        turn,
        answer=result.answer,
        thinking=result.thinking,
        steps=result.steps,
        sources=sources,
        stopped=result.stop_reason == "stopped" or runner.stop_requested,
        error=runner.error,
        agent_summary=summary,
        web_sources=web,
        web_warning=warning,
    )


def web_sources(steps: Sequence[Step]) -> tuple[tuple[WebItem, ...], str]:
    """The pages the agent's web searches returned (each URL once, in the order found), and a warning
    when a web search could not be made."""
    from rag.agent.websearch import WEB_SOURCE, WebItem

    items: list[WebItem] = []
    seen: set[str] = set()
    warning = ""
    for step in steps:
        if step.source != WEB_SOURCE or not step.data:
            continue
        if step.data.get("unavailable"):
            warning = Text(
                "Web search was unavailable ({reason}): the answer comes from the local knowledge.",
                reason=step.data["unavailable"],
            )
        for found in step.data.get("items") or []:
            url = str(found.get("url", ""))
            if url and url not in seen:
                seen.add(url)
                items.append(
                    WebItem(url, str(found.get("summary", "")), str(found.get("site", "")), str(found.get("date", "")))
                )
    return tuple(items), warning


def agent_sources(steps: Sequence[Step], lookup: Callable[[str], Hit | None]) -> tuple[Source, ...]:
    """The passages the agent's knowledge base searches returned, numbered in the order found."""
    from rag.agent import KB_SOURCE

    hits: list[Hit] = []
    seen: set[str] = set()
    for step in steps:
        if step.status != "ok" or not step.data or step.source != KB_SOURCE:
            continue
        for found in step.data.get("hits") or []:
            chunk_id = str(found.get("id", ""))
            if not chunk_id or chunk_id in seen or len(hits) >= MAX_AGENT_SOURCES:
                continue
            seen.add(chunk_id)
            try:
                hit = lookup(chunk_id)
            except (RagError, ValueError):
                hit = None
            if hit is not None:
                hits.append(dataclasses.replace(hit, score=float(found.get("score", hit.score))))
    return tuple(number_sources(hits))
