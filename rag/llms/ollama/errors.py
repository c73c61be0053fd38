"""The words for Ollama's failures, shared by everything that asks Ollama.

The functions that word an error return the message text; each caller wraps it in its own error
class (EmbedderError, ModelError), so every message reads the same whichever module raised it.
"""

from __future__ import annotations

import logging

import httpx
import ollama

from rag.errors import one_line
from rag.text import Text

QUERY_ERRORS: tuple[type[Exception], ...] = (
    ConnectionError,
    httpx.TransportError,
    ollama.ResponseError,
    ValueError,
)
"""What a small request through the ollama client raises when Ollama cannot be asked or answers oddly."""


def display_host(host: str) -> str:
    """The URL the ollama client really contacts (it fills in a missing scheme and port 11434)."""
    try:
        from ollama._client import _parse_host  # private, hence the fallback

        return str(_parse_host(host))
    except Exception:  # noqa: BLE001 - only cosmetic
        return host


def not_reachable_message(where: str, detail: str) -> str:
    """The message for a connection to Ollama at `where` that failed with `detail`."""
    reason = Text("connection refused") if "refused" in detail.lower() else detail
    return Text(
        "Ollama is not reachable at {host} ({reason}): start it with 'ollama serve' or set OLLAMA_HOST",
        host=where,
        reason=reason,
    )


def unreachable_message(host: str, exc: BaseException, timeout: float | None) -> str:
    """The message for a request through the ollama client that never reached Ollama."""
    where = display_host(host)
    if isinstance(exc, httpx.TimeoutException):
        return Text(
            "Ollama is not reachable at {host} (no answer within {seconds} s): start it with "
            "'ollama serve' or set OLLAMA_HOST; if it is busy loading a model, raise RAG_OLLAMA_TIMEOUT",
            host=where,
            seconds=f"{timeout:g}",
        )
    # The ollama client replaces httpx.ConnectError with a generic ConnectionError but keeps the
    # original as __context__, which says whether the port was closed or the name did not resolve
    # (its streaming path lets the httpx error through as is).
    cause = exc.__context__ if isinstance(exc.__context__, httpx.TransportError) else exc
    return not_reachable_message(where, one_line(str(cause)) or type(cause).__name__)


def invalid_answer_message(host: str, endpoint: str, exc: BaseException) -> str:
    """The message for an answer to `endpoint` that is not what Ollama sends (bad JSON, fields missing)."""
    return Text(
        "{host} did not answer {endpoint} like Ollama does ({detail}): check OLLAMA_HOST",
        host=display_host(host),
        endpoint=endpoint,
        detail=one_line(str(exc), 120),
    )


def missing_model_message(model: str) -> str:
    """The message for a model that Ollama has not pulled."""
    return Text("Ollama has no model '{model}': run 'ollama pull {model}'", model=model)


def response_error_text(exc: ollama.ResponseError) -> str:
    """The error Ollama answered with, on one line; its HTTP status when the body was empty."""
    return one_line(str(exc.error)) or Text("HTTP {status} with an empty body", status=exc.status_code)


def not_found_message(text: str, model: str, host: str, endpoint: str) -> str:
    """The message for an HTTP 404 from `endpoint` whose error is `text`."""
    # Ollama's own 404 names the model; a bare "404 page not found" means no such endpoint.
    if "model" in text.lower():
        return missing_model_message(model)
    return Text(
        "{host} has no {endpoint} ({text}): upgrade Ollama or check OLLAMA_HOST",
        host=display_host(host),
        endpoint=endpoint,
        text=text,
    )


def log_unanswered(log: logging.Logger, host: str, exc: BaseException, failed: str) -> None:
    """Log at INFO why Ollama did not answer a request that may fail quietly (one of QUERY_ERRORS):
    it was not reachable, or it did not `failed` (e.g. 'list its models')."""
    if isinstance(exc, (ConnectionError, httpx.TransportError)):
        log.info("Ollama is not reachable at %s: %s", display_host(host), one_line(str(exc)))
    else:
        log.info("Ollama at %s did not %s: %s", display_host(host), failed, one_line(str(exc)))
