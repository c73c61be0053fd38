"""简体中文 of the messages rag.store, rag.retrieve, rag.evaluation, rag.gpu and rag.settings make as `rag.text.Text`."""
from __future__ import annotations

ZH: dict[str, str] = {
    "{filename}: {reason}": "{filename}：{reason}",
}
