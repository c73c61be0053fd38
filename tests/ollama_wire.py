"""Ollama's documented wire format for the stand-ins (pytest-httpserver): /api/chat's NDJSON chunks."""

from __future__ import annotations

import json
from typing import Any

MODEL = "qwen2.5:7b-instruct"
CREATED = "2025-01-14T10:00:00.123456789Z"
NDJSON = "application/x-ndjson"


def chunk(content: str = "", thinking: str | None = None) -> dict[str, Any]:
    """One streamed /api/chat chunk (not the last)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    return {"model": MODEL, "created_at": CREATED, "message": message, "done": False}


def ndjson(*parts: dict[str, Any]) -> str:
    return "".join(json.dumps(p) + "\n" for p in parts)
