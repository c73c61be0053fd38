"""Agent mode: a loop over Ollama's tool calling, with one tool budget shared by every tool in a turn.

The model gets the knowledge-base search tool (called in-process) and the tools of the configured MCP
servers, and web search through a search-enabled sub-model when configured. Modules: loop (Agent, its
steps and result), tools (AgentTool, the KB and MCP tools, their specs), websearch (the web_search
tool), routes (which tools and budget a question gets), arguments (checking a call's arguments),
budget (ToolBudget and its refusals), availability (whether a model can run it), mcp_client (the
configured MCP servers as child processes, their tools and calls). The tool chat itself is
rag.llms.ollama.tools; the knowledge-base tools are rag.generate.kb_tools, which the agent knows only
as the `KnowledgeBaseSearch` protocol.
"""

from __future__ import annotations

from rag.agent.arguments import validate_arguments
from rag.agent.availability import SUGGESTED_TOOL_MODEL, agent_available
from rag.agent.budget import DEFAULT_TOOL_BUDGET, HARD_STOP_AFTER_REFUSALS, ToolBudget, refusal_text
from rag.agent.loop import (
    DEFAULT_MAX_ROUNDS,
    DEFAULT_SYSTEM,
    DEFAULT_TOOL_TIMEOUT,
    FINAL_INSTRUCTION,
    NO_TOOLS_SYSTEM,
    STEP_STATUSES,
    Agent,
    AgentResult,
    Step,
)
from rag.agent.tools import (
    KB_SOURCE,
    AgentTool,
    KnowledgeBaseSearchTool,
    McpTool,
    ToolOutput,
    build_tools,
    ollama_tool_spec,
)
from rag.llms.ollama.tools import OllamaToolChat

__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_SYSTEM",
    "DEFAULT_TOOL_BUDGET",
    "DEFAULT_TOOL_TIMEOUT",
    "FINAL_INSTRUCTION",
    "HARD_STOP_AFTER_REFUSALS",
    "KB_SOURCE",
    "NO_TOOLS_SYSTEM",
    "STEP_STATUSES",
    "SUGGESTED_TOOL_MODEL",
    "Agent",
    "AgentResult",
    "AgentTool",
    "KnowledgeBaseSearchTool",
    "McpTool",
    "OllamaToolChat",
    "Step",
    "ToolBudget",
    "ToolOutput",
    "agent_available",
    "build_tools",
    "ollama_tool_spec",
    "refusal_text",
    "validate_arguments",
]
