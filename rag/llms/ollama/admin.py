"""Ollama's administrative calls: what is pulled, what is loaded, what a model can do, pulling and
unloading models, and the server's version.

The listings answer None when Ollama cannot be asked (a sidebar or a fallback decides what then);
the calls that change something raise ModelError with one line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import ollama

from rag.errors import ModelError
from rag.llms.ollama.client import METADATA_TIMEOUT, client, failure_message, get_json
from rag.llms.ollama.errors import (
    QUERY_ERRORS,
    display_host,
    invalid_answer_message,
    log_unanswered,
    one_line,
    response_error_text,
    unreachable_message,
)
from rag.llms.ollama.names import SUGGESTED_OLLAMA_MODEL, same_model, strip_latest
from rag.llms.types import LoadedModel
from rag.text import Text

log = logging.getLogger(__name__)

_EMBEDDING_FAMILIES = {"bert", "nomic-bert", "xlm-roberta", "roberta"}


def _list_models(host: str, timeout: float) -> list[Any] | None:
    """GET /api/tags: the one listing of pulled models; None when Ollama cannot be asked."""
    try:
        with client(host, timeout) as c:
            return list(c.list().models)
    except QUERY_ERRORS as exc:
        log_unanswered(log, host, exc, "list its models")
    return None


def ollama_models(host: str, timeout: float = METADATA_TIMEOUT) -> list[str] | None:
    """Names of the models Ollama has pulled (GET /api/tags); None when it cannot be asked."""
    models = _list_models(host, timeout)
    return None if models is None else [m.model for m in models if m.model]


def list_ollama_chat_models(host: str, timeout: float = METADATA_TIMEOUT) -> list[str] | None:
    """Models Ollama has pulled (GET /api/tags) that can chat; None when Ollama cannot be asked.

    Embedding-only models are left out: names containing 'embed', and BERT-family models such as
    all-minilm or bge-m3. ':latest' tags are dropped ('llama3.2', not 'llama3.2:latest').
    """
    models = _list_models(host, timeout)
    if models is None:
        return None
    names: list[str] = []
    for m in models:
        if not m.model or "embed" in m.model.lower():
            continue
        family = (m.details.family or "").lower() if m.details is not None else ""
        if family in _EMBEDDING_FAMILIES:
            continue
        names.append(strip_latest(m.model))
    return names


def ollama_has_model(models: Sequence[str], model: str) -> bool:
    """Whether `model` is among `models`, with Ollama's rule that no tag means ':latest'."""
    return any(same_model(m, model) for m in models)


def ollama_loaded_models(host: str, timeout: float = METADATA_TIMEOUT) -> list[LoadedModel] | None:
    """Models Ollama holds in memory (GET /api/ps); None when Ollama cannot be asked."""
    try:
        with client(host, timeout) as c:
            running = c.ps()
    except QUERY_ERRORS as exc:
        log_unanswered(log, host, exc, "list running models")
        return None
    return [
        LoadedModel(
            name=strip_latest(m.model or m.name or ""),
            size=int(m.size or 0),
            size_vram=int(m.size_vram or 0),
            context_length=m.context_length,
            expires_at=m.expires_at,
        )
        for m in running.models
    ]


def ollama_version(host: str, timeout: float = METADATA_TIMEOUT) -> str | None:
    """The server's version (GET /api/version); None when it does not say."""
    try:
        version = get_json(host, "/api/version", timeout).get("version")
    except QUERY_ERRORS as exc:
        log_unanswered(log, host, exc, "tell its version")
        return None
    return str(version) if version else None


def show_model(host: str, model: str, timeout: float = METADATA_TIMEOUT) -> ollama.ShowResponse:
    """POST /api/show for `model`; ModelError when Ollama cannot say."""
    try:
        with client(host, timeout) as c:
            return c.show(model)
    except QUERY_ERRORS as exc:
        message = failure_message(exc, model, host, "/api/show", timeout)
        raise ModelError(message) from exc


def model_capabilities(shown: ollama.ShowResponse) -> list[str]:
    """What a model can do ('completion', 'tools', 'thinking', ...), from /api/show's answer."""
    if shown.capabilities is not None:
        return list(shown.capabilities)
    # Ollama before 0.6.4 has no capabilities; its templates tell about tools.
    return ["tools"] if ".Tools" in (shown.template or "") else []


PullProgress = Callable[[str, int | None, int | None], None]
"""Called for every line of a pull with (status, completed bytes, total bytes)."""


def pull_model(host: str, model: str, progress: PullProgress, *, timeout: float = 600.0) -> None:
    """Streamed POST /api/pull; returns when Ollama reports success, ModelError otherwise."""
    model = model.strip()
    if not model:
        raise ModelError(Text("No model to pull given: name one, e.g. {model}", model=SUGGESTED_OLLAMA_MODEL))
    succeeded = False
    try:
        with client(host, timeout) as c:
            for part in c.pull(model, stream=True):
                status = part.status or ""
                progress(status, part.completed, part.total)
                succeeded = succeeded or status == "success"
    except ollama.ResponseError as exc:
        text = one_line(str(exc.error)) or f"HTTP {exc.status_code}"
        raise ModelError(
            Text(
                "Ollama could not pull '{model}' ({text}): check the name on https://ollama.com/library",
                model=model,
                text=text,
            )
        ) from exc
    except (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise ModelError(unreachable_message(host, exc, timeout)) from exc
    except httpx.TransportError as exc:
        raise ModelError(
            Text(
                "The connection to Ollama at {host} broke while pulling '{model}' ({detail}): "
                "run 'ollama pull {model}' to resume",
                host=display_host(host),
                model=model,
                detail=one_line(str(exc), 160) or type(exc).__name__,
            )
        ) from exc
    except ValueError as exc:
        raise ModelError(invalid_answer_message(host, "/api/pull", exc)) from exc
    if not succeeded:
        raise ModelError(
            Text(
                "Ollama stopped pulling '{model}' before it finished: run 'ollama pull {model}' to resume", model=model
            )
        )


def unload_model(host: str, model: str, timeout: float = 10.0) -> None:
    """Ask Ollama to unload `model` now (POST /api/generate with keep_alive 0); ModelError if it cannot."""
    model = model.strip()
    if not model:
        raise ModelError(Text("No model to unload given"))
    try:
        with client(host, timeout) as c:
            c.generate(model=model, keep_alive=0)
    except ollama.ResponseError as exc:
        text = response_error_text(exc)
        if exc.status_code == 404:
            raise ModelError(Text("Ollama has no model '{model}' to unload ({text})", model=model, text=text)) from exc
        raise ModelError(Text("Ollama could not unload '{model}': {text}", model=model, text=text)) from exc
    except (ConnectionError, httpx.TransportError) as exc:
        raise ModelError(unreachable_message(host, exc, timeout)) from exc
