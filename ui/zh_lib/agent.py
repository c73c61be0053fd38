"""简体中文 of the messages rag.agent and rag.mcp make as `rag.text.Text`."""
from __future__ import annotations

ZH: dict[str, str] = {
}
