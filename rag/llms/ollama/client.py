"""The private Ollama client every request goes through, and the one mapping of its failures to a line.

Two transports share one host spelling, one TLS context and one error vocabulary: the official typed
client for what it models well (chat streams, embed, tags, ps, show, pull), and plain JSON for what
it cannot carry (tool schemas, whose `anyOf`, `default`, nested `properties`... its typed `Tool`
drops; /api/version, which it does not offer). The plain path raises what the typed client raises
(`ollama.ResponseError`, httpx transport errors, ValueError), so `failure_message` words both.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable
from typing import Any

import httpx
import ollama

from rag.errors import one_line
from rag.llms.ollama.errors import (
    display_host,
    invalid_answer_message,
    not_found_message,
    response_error_text,
    unreachable_message,
)
from rag.llms.ollama.names import SUGGESTED_OLLAMA_MODEL
from rag.text import Text

METADATA_TIMEOUT = 3.0
"""For the small requests (/api/show, /api/ps, /api/tags) that a UI makes while drawing a page."""

Failed = Callable[[str, int], str]
"""How an error answer to a request begins, made from the model's name and the HTTP status."""


def answer_failed(model: str, status: int) -> str:
    """How an error answer to a request for `model` begins, unless the caller words its own."""
    return Text("Ollama could not answer with '{model}' (HTTP {status})", model=model, status=status)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # httpx builds (and loads certifi into) a new SSL context for every client, which costs more
    # than a whole local request; our clients are short-lived, so they share one.
    return httpx.create_ssl_context()


def client(host: str, timeout: float | None, **kwargs: Any) -> ollama.Client:
    """The typed client for `host` (extra keywords go to httpx, e.g. event_hooks)."""
    return ollama.Client(host=host, timeout=timeout, verify=_ssl_context(), **kwargs)


def post_json(host: str, endpoint: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """POST `body` to `endpoint` and the JSON object answered; raises as the typed client does."""
    return _json(host, "POST", endpoint, timeout, body)


def get_json(host: str, endpoint: str, timeout: float) -> dict[str, Any]:
    """GET `endpoint` and the JSON object answered; raises as the typed client does."""
    return _json(host, "GET", endpoint, timeout, None)


def _json(host: str, method: str, endpoint: str, timeout: float, body: dict[str, Any] | None) -> dict[str, Any]:
    with httpx.Client(base_url=display_host(host), timeout=timeout, verify=_ssl_context()) as http:
        response = http.request(method, endpoint, json=body)
    if response.status_code != 200:
        try:
            text = str(response.json().get("error", ""))
        except (ValueError, AttributeError):  # not JSON, or JSON that is not an object
            text = response.text
        raise ollama.ResponseError(text, response.status_code)
    try:
        data = response.json()
    except ValueError as exc:
        raise ValueError("not JSON") from exc
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def response_message(
    exc: ollama.ResponseError, model: str, host: str, endpoint: str, failed: Failed = answer_failed
) -> str:
    """One line for an HTTP error Ollama answered about `model` before any output; `failed(model, status)`
    begins the message for an error with no advice of its own."""
    text = response_error_text(exc)
    low = text.lower()
    if exc.status_code == 404:
        return not_found_message(text, model, host, endpoint)
    if "does not support thinking" in low:
        return Text("'{model}' does not support thinking: turn thinking off for this model", model=model)
    if "does not support tools" in low:
        return Text(
            "'{model}' does not support tool calling: choose a model with tools, e.g. {suggested}",
            model=model,
            suggested=SUGGESTED_OLLAMA_MODEL,
        )
    return Text("{failed}: {text}", failed=failed(model, exc.status_code), text=text)


def failure_message(
    exc: BaseException, model: str, host: str, endpoint: str, timeout: float | None, failed: Failed = answer_failed
) -> str:
    """One line for a request that failed before any output (one of QUERY_ERRORS): Ollama answered
    an error, could not be reached, or answered what Ollama does not send."""
    if isinstance(exc, ollama.ResponseError):
        return response_message(exc, model, host, endpoint, failed)
    if isinstance(exc, (ConnectionError, httpx.TransportError)):
        return unreachable_message(host, exc, timeout)
    if isinstance(exc, ValueError):
        return invalid_answer_message(host, endpoint, exc)
    return one_line(exc, with_type=True)
