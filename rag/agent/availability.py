"""Whether a chat model can run agent mode, in a sentence to show next to a disabled toggle."""

from __future__ import annotations

from typing import Any

from rag.errors import ModelError
from rag.llms.choice import default_local_name
from rag.llms.local import LocalChatModel
from rag.llms.ollama.names import SUGGESTED_OLLAMA_MODEL
from rag.model_ref import ModelRef
from rag.text import Text, text_of

SUGGESTED_TOOL_MODEL = SUGGESTED_OLLAMA_MODEL


def agent_available(model: Any, settings: Any = None) -> tuple[bool, str]:
    """Whether `model` (a ChatModel, or a name such as 'ollama:qwen2.5:7b-instruct' or 'local') can
    run agent mode, and why (a sentence to show next to a disabled toggle)."""
    name = model if isinstance(model, str) else getattr(model, "name", str(model))
    ref = ModelRef.parse_or_none(name, bare="ollama")
    if (ref is not None and ref.is_local) or isinstance(model, LocalChatModel):
        shown = str(ref) if ref is not None and ref.name else default_local_name()
        return False, Text(
            "The embedded model ({model}) cannot call tools: agent mode needs an Ollama model "
            "with tool calling, e.g. 'ollama pull {suggested}'",
            model=shown,
            suggested=SUGGESTED_TOOL_MODEL,
        )
    if isinstance(model, str):
        from rag.llms.ollama.chat import OllamaChatModel
        from rag.settings import get_settings

        settings = settings or get_settings()
        model = OllamaChatModel(
            settings.ollama_host, ref.name if ref is not None else name, timeout=settings.ollama_timeout
        )
    from rag.llms.ollama.admin import model_capabilities

    show = getattr(model, "show", None)
    if show is None:
        ok = bool(getattr(model, "supports_tools", False))
        return ok, Text("{model} supports tool calling", model=name) if ok else Text(
            "{model} cannot call tools", model=name
        )
    try:
        shown = show()
    except ModelError as exc:
        return False, Text("Cannot tell whether {model} can call tools: {error}", model=name, error=text_of(exc))
    capabilities = model_capabilities(shown)
    if "tools" in capabilities:
        return True, Text("{model} supports tool calling", model=name)
    if not capabilities:
        return False, Text(
            "{model} has no tool calling (its capabilities: none listed): choose an Ollama model "
            "with tools, e.g. {suggested}",
            model=name,
            suggested=SUGGESTED_TOOL_MODEL,
        )
    return False, Text(
        "{model} has no tool calling (its capabilities: {capabilities}): choose an Ollama model "
        "with tools, e.g. {suggested}",
        model=name,
        capabilities=", ".join(capabilities),
        suggested=SUGGESTED_TOOL_MODEL,
    )
