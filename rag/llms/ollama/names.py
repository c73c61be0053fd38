"""Ollama's model-name rules: 'x' and 'x:latest' are one model, and names compare without case.

No client import here: the pages and the prompt packer compare names without loading HTTP code.
"""

from __future__ import annotations

SUGGESTED_OLLAMA_MODEL = "qwen2.5:7b-instruct"
"""The model the messages tell people to pull when they have none (it chats and calls tools)."""


def strip_latest(model: str) -> str:
    """`model` without a ':latest' tag: 'x' and 'x:latest' are the same model to Ollama, and one
    spelling keeps names stable."""
    return model.strip().removesuffix(":latest")


def with_tag(name: str) -> str:
    """`name` in lower case with its tag, ':latest' when it has none."""
    name = name.strip().lower()
    # The tag follows the last ':' after the last '/', so registry hosts with ports stay intact.
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def same_model(a: str, b: str) -> bool:
    """Whether `a` and `b` name the same Ollama model, with Ollama's rule that no tag means ':latest'."""
    return with_tag(a) == with_tag(b)
