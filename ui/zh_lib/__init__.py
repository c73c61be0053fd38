"""简体中文 for the library's messages (`rag.text.Text` templates), one module per part of `rag/`.

Kept apart from ui/zh.py (the pages' own words) so that each part's messages sit beside each other;
`LIBRARY` is every part merged, and ui/zh.py adds it to `ZH`.
"""

from __future__ import annotations

from ui.zh_lib import agent, answers, documents, portable, store

LIBRARY: dict[str, str] = {}
for _part in (documents, answers, store, agent, portable):
    LIBRARY.update(_part.ZH)
