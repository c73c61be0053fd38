"""Grounded answers: the prompt, citations, the context budget, the conversation and the one engine.

`engine.start` / `engine.ask` run a question through rewrite -> search -> fitted prompt -> streamed
answer -> checked citations, for the chat page, `rag ask` and the MCP tools alike; the modules
below it each do one step and can be used (and tested) alone.
"""
from __future__ import annotations

from rag.generate.budget import ANSWER_RESERVE, Budget, FittedPrompt, context_budget, fit_prompt
from rag.generate.citations import (
    CitationCheck, attribute_citations, check_citations, citation_numbers, cites_by_itself, marker_spans,
    replace_markers,
)
from rag.generate.conversation import (
    Live, Turn, conversation_markdown, export_markdown, history_from_json, history_messages, load_history,
)
from rag.generate.prompt import (
    SYSTEM_PROMPT_EN, SYSTEM_PROMPT_ZH, Source, build_messages, default_system_prompt, format_sources,
    is_default_prompt, number_sources,
)
from rag.generate.rewrite import REWRITE_PROMPT, Rewrite, clean_rewrite, rewrite_messages, rewrite_query

__all__ = [
    "ANSWER_RESERVE", "REWRITE_PROMPT", "SYSTEM_PROMPT_EN", "SYSTEM_PROMPT_ZH",
    "Budget", "CitationCheck", "FittedPrompt", "Live", "Rewrite", "Source", "Turn",
    "attribute_citations", "build_messages", "check_citations", "citation_numbers", "cites_by_itself",
    "clean_rewrite", "context_budget", "conversation_markdown", "default_system_prompt", "export_markdown",
    "fit_prompt", "format_sources", "history_from_json", "history_messages", "load_history", "is_default_prompt", "marker_spans", "number_sources",
    "replace_markers", "rewrite_messages", "rewrite_query",
]
