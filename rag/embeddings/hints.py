"""The hint for a knowledge base whose text is mostly Chinese but whose embedder is weak at it.

nomic-embed-text (Ollama's default here) was trained on English; bge-m3 is multilingual and suits
Chinese better. WordLlama is weak in Chinese too (hit@5 0.72 on zh_c3 against e5's 0.95).
"""

from __future__ import annotations

import re

from rag.model_ref import ModelRef
from rag.scripts import HAN
from rag.text import Text

MOSTLY = 0.5
"""The share of Chinese above which a text is 'mostly Chinese'."""

_HAN = re.compile(f"[{HAN}]")
_OTHER_WORD = re.compile(r"(?:(?![\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])[^\W\d_])+")

_CHINESE_OLLAMA_MODEL = "bge-m3"


def chinese_share(text: str) -> float:
    """The share of Chinese in `text`: Han characters among Han characters plus other words (a Han
    character carries about what a word does, so 'pgvector 的扩展' is 3 of 4); 0.0 without letters."""
    han = len(_HAN.findall(text))
    units = han + len(_OTHER_WORD.findall(text))
    return han / units if units else 0.0


def chinese_hint(embedder_name: str, text: str) -> str | None:
    """What to use instead when `text` (a knowledge base's, or a sample of it) is mostly Chinese and
    `embedder_name` is not made for Chinese; None otherwise."""
    if chinese_share(text) <= MOSTLY:
        return None
    ref = ModelRef.parse_or_none(embedder_name)
    if ref is None:
        return None
    if ref.is_ollama:
        model = ref.name.split(":", 1)[0]
        if model == _CHINESE_OLLAMA_MODEL:
            return None
        return Text(
            "This text is mostly Chinese: `{better}` suits Chinese better than `{model}`. "
            "Run `ollama pull {better}` and set RAG_EMBEDDER=ollama:{better} "
            "for a new knowledge base (an existing one keeps its embedder).",
            better=_CHINESE_OLLAMA_MODEL,
            model=model,
        )
    if ref.name.startswith("wordllama"):
        return Text(
            "This text is mostly Chinese: WordLlama is weak in Chinese; set RAG_EMBEDDER=local:e5 "
            "(embedded) or ollama:{better} for a new knowledge base.",
            better=_CHINESE_OLLAMA_MODEL,
        )
    return None
