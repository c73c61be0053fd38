"""Ollama's tool calling: a non-streamed POST /api/chat with `tools`, through the one client.

Sent as plain JSON rather than through the typed client: its `Tool` model keeps only
type/description/enum/items of each parameter, dropping `anyOf`, `default`, `minimum`, nested
`properties`..., which MCP tools' schemas rely on. Failures are worded as every other Ollama call's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag.errors import ModelError, one_line
from rag.llms.ollama.client import failure_message, post_json
from rag.llms.ollama.errors import QUERY_ERRORS, invalid_answer_message
from rag.model_ref import ModelRef
from rag.text import Text


class OllamaToolChat:
    """Non-streamed POST /api/chat with `tools`; errors are one-line ModelErrors."""

    def __init__(self, host: str, model: str, *, timeout: float = 120.0) -> None:
        self.host = host.rstrip("/")
        ref = ModelRef.parse_or_none(model, bare="ollama")
        if ref is None or not ref.is_ollama:
            raise ModelError(Text("No Ollama model given for agent mode: choose one with tool calling"))
        self.model = ref.name
        self.timeout = timeout

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        options: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Ollama's answer (its `message` holds the content and any `tool_calls`)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "stream": False,
            "options": dict(options),
        }
        if tools:
            body["tools"] = list(tools)
        try:
            data = post_json(self.host, "/api/chat", body, self.timeout)
        except QUERY_ERRORS as exc:
            raise ModelError(failure_message(exc, self.model, self.host, "/api/chat", self.timeout)) from exc
        if not isinstance(data.get("message"), dict):
            raise ModelError(invalid_answer_message(self.host, "/api/chat", ValueError("no message")))
        if data.get("error"):
            raise ModelError(
                Text(
                    "Ollama failed with '{model}': {error}", model=self.model, error=one_line(str(data["error"]), None)
                )
            )
        return data
