"""Ollama's administrative calls: what is pulled, what is loaded, pulling and unloading models."""
from __future__ import annotations

import httpx
import ollama

from rag.errors import ModelError


def unload_model(host: str, model: str, timeout: float = 10.0) -> None:
    """Ask Ollama to unload `model` now (POST /api/generate with keep_alive 0); ModelError if it cannot."""
    model = model.strip()
    if not model:
        raise ModelError("No model to unload given")
    try:
        with ollama.Client(host=host, timeout=timeout) as client:
            client.generate(model=model, keep_alive=0)
    except ollama.ResponseError as exc:
        text = " ".join(str(exc.error).split()) or f"HTTP {exc.status_code}"
        if exc.status_code == 404:
            raise ModelError(f"Ollama has no model '{model}' to unload ({text})") from exc
        raise ModelError(f"Ollama could not unload '{model}': {text}") from exc
    except (ConnectionError, httpx.TransportError) as exc:
        raise ModelError(
            f"Ollama is not reachable at {host} ({type(exc).__name__}): start it with 'ollama serve' or set OLLAMA_HOST"
        ) from exc
