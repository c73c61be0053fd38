"""简体中文 of the messages rag.generate, rag.llms and rag.embeddings make as `rag.text.Text`."""
from __future__ import annotations

ZH: dict[str, str] = {
}
