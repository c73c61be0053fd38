"""简体中文 of the messages rag.documents, rag.ingest and rag.chunking make as `rag.text.Text`."""
from __future__ import annotations

ZH: dict[str, str] = {
}
