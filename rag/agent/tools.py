"""The tools an agent may call: the knowledge-base search in-process, and the MCP servers' tools.

Each is an `AgentTool`: a name, a description, a JSON schema of its arguments and `call`; Ollama gets
them as /api/chat `tools` entries with the full schema untouched (`ollama_tool_spec`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rag.agent.mcp_client import McpManager, ToolInfo

KB_SOURCE = "knowledge base"


class SearchOutcome(Protocol):
    """What a knowledge-base search returns (`rag.generate.kb_tools.SearchResults`)."""

    @property
    def query(self) -> str: ...

    @property
    def knowledge_base(self) -> str: ...

    @property
    def hits(self) -> Sequence[object]: ...

    def model_dump(self) -> dict[str, Any]: ...


class KnowledgeBaseSearch(Protocol):
    """What the in-process search tool needs of the knowledge-base tools: their `search_knowledge_base`, and its
    schema and description as MCP clients see them. `rag.generate.kb_tools.KnowledgeBaseTools` is one; it
    is named by this protocol only, because `rag.generate` builds on the agent, not the other way round."""

    def input_schema(self, name: str) -> dict[str, Any]: ...

    def description(self, name: str) -> str: ...

    def search_knowledge_base(
        self,
        query: str,
        knowledge_base: str,
        top_k: int = ...,
        filter: str | None = ...,  # noqa: A002 - the tool's parameter
    ) -> SearchOutcome: ...


@dataclass(frozen=True)
class ToolOutput:
    text: str
    """What the model reads."""
    is_error: bool = False
    data: Mapping[str, Any] | None = None
    """The structured result, when the tool gave one (e.g. search hits, for citations)."""


class AgentTool(Protocol):
    """A tool the model may call. `call` may raise (RagError, anything): the agent reports it."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """JSON schema of the arguments (an object schema)."""
        ...

    @property
    def source(self) -> str:
        """'knowledge base' or the MCP server's name (shown with each step)."""
        ...

    @property
    def read_only(self) -> bool:
        """It changes nothing (MCP's readOnlyHint): agent mode runs any other tool only where the user allowed it."""
        ...

    def call(self, arguments: Mapping[str, Any], timeout: float) -> ToolOutput: ...


def compact(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


class KnowledgeBaseSearchTool:
    """`search_knowledge_base`, called in-process (the same function and schema as the MCP tool)."""

    name = "search_knowledge_base"
    source = KB_SOURCE
    read_only = True

    def __init__(self, tools: KnowledgeBaseSearch, knowledge_bases: Sequence[str] = ()) -> None:
        self._tools = tools
        self.knowledge_bases = tuple(dict.fromkeys(knowledge_bases))
        schema = json.loads(json.dumps(tools.input_schema(self.name)))
        if self.knowledge_bases:
            schema["properties"]["knowledge_base"]["enum"] = list(self.knowledge_bases)
        self.parameters: Mapping[str, Any] = schema
        description = tools.description(self.name)
        if self.knowledge_bases:
            description += " Knowledge bases: " + ", ".join(self.knowledge_bases) + "."
        self.description = description

    def call(self, arguments: Mapping[str, Any], timeout: float) -> ToolOutput:
        result = self._tools.search_knowledge_base(**arguments)
        data = result.model_dump()
        if not result.hits:
            return ToolOutput(f"No passages found in {result.knowledge_base!r} for {result.query!r}.", data=data)
        return ToolOutput(compact(data), data=data)


class McpTool:
    """A tool of a running MCP server, called through the manager."""

    def __init__(self, manager: McpManager, info: ToolInfo, name: str | None = None) -> None:
        self._manager = manager
        self.info = info
        self.name = name or info.name
        self.description = info.description or f"Tool {info.name} of the MCP server {info.server}."
        self.parameters: Mapping[str, Any] = info.input_schema or {"type": "object", "properties": {}}
        self.source = info.server
        self.read_only = info.read_only

    def call(self, arguments: Mapping[str, Any], timeout: float) -> ToolOutput:
        result = self._manager.call_tool(self.info.server, self.info.name, arguments, timeout=timeout)
        structured = dict(result.structured) if isinstance(result.structured, Mapping) else None
        text = result.text
        if structured is not None and not result.is_error:
            text = compact(structured)
        return ToolOutput(text, is_error=result.is_error, data=structured)


def build_tools(
    kb_tools: KnowledgeBaseSearch | None,
    knowledge_bases: Sequence[str] = (),
    manager: McpManager | None = None,
) -> list[AgentTool]:
    """The knowledge-base search tool (if `kb_tools`) and every running MCP server's tools.

    Names stay as the servers give them; a name already taken (by our search tool or an earlier
    server) becomes '<server>__<tool>'."""
    from rag.agent.mcp_client import qualified_name

    tools: list[AgentTool] = []
    if kb_tools is not None:
        tools.append(KnowledgeBaseSearchTool(kb_tools, knowledge_bases))
    if manager is not None:
        taken = {t.name for t in tools}
        for info in manager.tools():
            name = info.name if info.name not in taken else qualified_name(info.server, info.name)
            taken.add(name)
            tools.append(McpTool(manager, info, name))
    return tools


def ollama_tool_spec(tool: AgentTool) -> dict[str, Any]:
    """The tool as Ollama's /api/chat `tools` entry (the full JSON schema, untouched)."""
    parameters = dict(tool.parameters) if tool.parameters else {}
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    }
