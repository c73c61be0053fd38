"""Grounded answers: the prompt, citations, the context budget, the conversation and the one engine.

`engine.start` / `engine.ask` run a question through rewrite -> search -> packed prompt -> streamed
answer -> checked citations, for the chat page, `rag ask` and the MCP tools alike; the modules
below it each do one step and can be used (and tested) alone.
"""

from __future__ import annotations

from rag.generate.agent_turn import agent_routes, tools_needing_consent
from rag.generate.budget import ANSWER_RESERVE, Budget, context_budget
from rag.generate.citations import (
    CitationCheck,
    Grounding,
    SentenceCheck,
    Status,
    annotate,
    attribute_citations,
    check_citations,
    check_grounding,
    citation_numbers,
    cited_page,
    cites_by_itself,
    marker_spans,
)
from rag.generate.conversation import (
    Live,
    Turn,
    cites_none,
    conversation_markdown,
    export_markdown,
    history_from_json,
    history_messages,
    load_history,
    memory_of,
    searched_queries,
)
from rag.generate.memory import Memory, summarize
from rag.generate.packing import Packed, PackLimits, best_part, pack_limits, pack_prompt
from rag.generate.prompt import (
    SYSTEM_PROMPT_EN,
    SYSTEM_PROMPT_ZH,
    Source,
    build_messages,
    default_system_prompt,
    format_sources,
    is_default_prompt,
    number_sources,
)
from rag.generate.records import turn_from_record, turn_record
from rag.generate.rewrite import REWRITE_PROMPT, Rewrite, clean_rewrite, rewrite_messages, rewrite_query
from rag.generate.saved import conversation_json, conversation_markdown_export, load_conversation, save_turn

__all__ = [
    "ANSWER_RESERVE",
    "REWRITE_PROMPT",
    "SYSTEM_PROMPT_EN",
    "SYSTEM_PROMPT_ZH",
    "Budget",
    "CitationCheck",
    "Grounding",
    "Live",
    "Memory",
    "PackLimits",
    "Packed",
    "Rewrite",
    "SentenceCheck",
    "Source",
    "Status",
    "Turn",
    "agent_routes",
    "annotate",
    "attribute_citations",
    "best_part",
    "build_messages",
    "check_citations",
    "check_grounding",
    "citation_numbers",
    "cited_page",
    "cites_by_itself",
    "cites_none",
    "clean_rewrite",
    "context_budget",
    "conversation_json",
    "conversation_markdown",
    "conversation_markdown_export",
    "default_system_prompt",
    "export_markdown",
    "format_sources",
    "history_from_json",
    "history_messages",
    "is_default_prompt",
    "load_conversation",
    "load_history",
    "marker_spans",
    "memory_of",
    "number_sources",
    "pack_limits",
    "pack_prompt",
    "rewrite_messages",
    "rewrite_query",
    "save_turn",
    "searched_queries",
    "summarize",
    "tools_needing_consent",
    "turn_from_record",
    "turn_record",
]
