"""Agent turns: the model calls tools (the knowledge base search, MCP servers' tools) within a budget.

Started and finished by `rag.generate.engine`; the passages its knowledge base searches returned
become the turn's sources, numbered in the order found, so the page shows them like a chat's.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rag.errors import RagError
from rag.generate.conversation import Live, Turn
from rag.generate.prompt import Source, number_sources
from rag.llms.stream import Runner
from rag.llms.types import ChatModel, Message

if TYPE_CHECKING:
    from rag.agent import Step
    from rag.generate.engine import Request
    from rag.settings import Settings
    from rag.store import Hit, Store

MAX_AGENT_SOURCES = 12


def start_agent(turn: Turn, request: Request, model: ChatModel, settings: Settings, store: Store,
                history: Sequence[Message], warn: Callable[[str], None]) -> Turn | Live:
    """The live agent turn, or the turn with the problem that kept the agent from starting."""
    from rag import agent
    from rag.mcp import client as mcp_client
    from rag.mcp.server import KnowledgeBaseTools

    try:
        manager = mcp_client.shared_manager()
    except mcp_client.McpConfigMissing:
        manager = None
    except RagError as exc:
        warn(f"MCP servers: {exc}")
        manager = None
    try:
        tools = agent.build_tools(KnowledgeBaseTools(settings, store=store), request.kbs, manager)
        runner = agent.Agent.for_model(model, tools, timeout=settings.ollama_timeout,
                                       temperature=request.temperature, num_ctx=request.num_ctx)
    except (RagError, ValueError) as exc:
        return dataclasses.replace(turn, problem=f"Agent mode cannot start: {exc}")
    question = turn.question
    return Live(turn, Runner(lambda stop: runner.events(question, history=history, stop_event=stop),
                             name="chat-agent"))


def finish_agent(turn: Turn, runner: Runner[Any], lookup: Callable[[str], Hit | None] | None = None) -> Turn:
    """The turn with the agent's steps and answer; sources are the passages its searches returned."""
    from rag import agent

    items = runner.items()
    steps = tuple(i for i in items if isinstance(i, agent.Step))
    result = next((i for i in items if isinstance(i, agent.AgentResult)), None)
    sources = agent_sources(steps, lookup) if lookup is not None else ()
    if result is None:
        return dataclasses.replace(turn, steps=steps, sources=sources, error=runner.error,
                                   stopped=runner.stop_requested)
    summary = (f"{len(result.steps)} tool call{'' if len(result.steps) == 1 else 's'} · "
               f"{result.calls_used}/{result.budget} of the budget · {result.rounds} model "
               f"request{'' if result.rounds == 1 else 's'}")
    return dataclasses.replace(
        turn, answer=result.answer, thinking=result.thinking, steps=result.steps, sources=sources,
        stopped=result.stop_reason == "stopped" or runner.stop_requested, error=runner.error,
        agent_summary=summary,
    )


def agent_sources(steps: Sequence[Step], lookup: Callable[[str], Hit | None]) -> tuple[Source, ...]:
    """The passages the agent's knowledge base searches returned, numbered in the order found."""
    from rag.agent import KB_SOURCE

    hits = []
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
