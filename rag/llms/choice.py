"""What a chat-model choice names, and how it is shown: the rules a model picker and the prompt
packer share, so that no page keeps its own copy.

A choice is 'local' (the embedded model) or 'ollama:<model>'; it imports no client, so comparing
names costs nothing.
"""
from __future__ import annotations

from rag.llms.ollama.names import same_model, strip_latest

LOCAL = "local"
"""The choice that names the embedded model."""
LOCAL_MODEL_NAME = "local:gemma3-270m"
"""The embedded model's name (LocalChatModel.NAME)."""

__all__ = ["LOCAL", "LOCAL_MODEL_NAME", "cites_by_itself", "model_label", "normalise_choice", "same_model"]


def normalise_choice(value: str) -> str:
    """One spelling of a choice: 'local' for the embedded model, else 'ollama:<model>' without ':latest'
    (a bare name is an Ollama model; an empty one falls back to the embedded model)."""
    value = value.strip()
    if value in (LOCAL, LOCAL_MODEL_NAME):
        return LOCAL
    name = strip_latest(value.removeprefix("ollama:").strip())
    return f"ollama:{name}" if name else LOCAL


def model_label(choice: str) -> str:
    """How a normalised choice reads in a picker: 'gemma3-270m · embedded', 'qwen2.5:7b · Ollama'."""
    if choice == LOCAL:
        return f"{LOCAL_MODEL_NAME.removeprefix('local:')} · embedded"
    return f"{choice.removeprefix('ollama:')} · Ollama"


def cites_by_itself(model_name: str) -> bool:
    """Whether a model can be asked to cite: the embedded base model only completes text."""
    return not model_name.startswith("local:")
