"""Text embedders: Ollama over HTTP, or WordLlama running in-process with weights shipped in its wheel.

Every embedder returns float32 rows of unit length, so cosine similarity is a plain dot product and
vectors from different runs of the same embedder are comparable. Every failure is an EmbedderError
whose message is one line a user can act on.

Modules: local (WordLlama), ollama (OllamaEmbedder, on rag.llms.ollama), vectors (what both do to
their rows). The embedders are imported on first use, so importing this package loads no HTTP client.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from rag.errors import EmbedderError
from rag.lazy import lazy_exports
from rag.settings import DEFAULT_OLLAMA_EMBED_MODEL, Settings

if TYPE_CHECKING:
    from rag.embeddings.local import LocalEmbedder
    from rag.embeddings.ollama import OllamaEmbedder

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
"""Called after each batch with (texts done, total)."""

_LAZY = {
    "LocalEmbedder": "rag.embeddings.local",
    "OllamaEmbedder": "rag.embeddings.ollama",
    "ollama_models": "rag.llms.ollama.admin",
    "ollama_has_model": "rag.llms.ollama.admin",
}

__all__ = ["DEFAULT_OLLAMA_EMBED_MODEL", "Embedder", "ProgressCallback", "embedder_for_name",
           "resolve_embedder", *_LAZY]


__getattr__ = lazy_exports(__name__, _LAZY)


# Deliberately not runtime_checkable: on Python 3.11 isinstance() would read `dimension`, which
# for Ollama can mean a network round trip.
class Embedder(Protocol):
    @property
    def name(self) -> str:
        """Stable identity stored with a knowledge base, e.g. 'ollama:nomic-embed-text'."""
        ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_input_tokens(self) -> int | None:
        """Longest input the model reads whole, for UI warnings; None when unknown or unbounded."""
        ...

    def embed(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        """float32 array of shape (len(texts), dimension) with L2-normalised rows."""
        ...


def _ollama_embedder(settings: Settings, model: str) -> OllamaEmbedder:
    from rag.embeddings.ollama import OllamaEmbedder

    return OllamaEmbedder(
        settings.ollama_host,
        model,
        batch_size=settings.embed_batch_size,
        timeout=settings.ollama_timeout,
    )


def resolve_embedder(settings: Settings) -> Embedder:
    """The embedder `settings.embedder` asks for; 'auto' prefers Ollama and falls back to local."""
    from rag.embeddings.local import LocalEmbedder
    from rag.llms.ollama.admin import ollama_has_model, ollama_models
    from rag.llms.ollama.errors import display_host
    choice = settings.embedder.strip()
    if choice == "local":
        return LocalEmbedder()
    if choice.startswith("ollama:") and choice != "ollama:":
        # No probing: an explicit choice should fail loudly on use, not silently fall back.
        return _ollama_embedder(settings, choice.removeprefix("ollama:"))
    if choice != "auto":
        raise EmbedderError(
            f"RAG_EMBEDDER={choice!r} is not understood: use 'auto', 'local' or 'ollama:<model>'"
        )
    models = ollama_models(settings.ollama_host)
    where = display_host(settings.ollama_host)
    if models is None:
        log.info("Embedding locally: Ollama is not reachable at %s", where)
        return LocalEmbedder()
    if not ollama_has_model(models, DEFAULT_OLLAMA_EMBED_MODEL):
        log.info(
            "Embedding locally: Ollama at %s has no %s (run 'ollama pull %s' to use it)",
            where, DEFAULT_OLLAMA_EMBED_MODEL, DEFAULT_OLLAMA_EMBED_MODEL,
        )
        return LocalEmbedder()
    log.info("Embedding with Ollama at %s using %s", where, DEFAULT_OLLAMA_EMBED_MODEL)
    return _ollama_embedder(settings, DEFAULT_OLLAMA_EMBED_MODEL)


def embedder_for_name(name: str, settings: Settings) -> Embedder:
    """Rebuild the embedder a knowledge base recorded as its `name`."""
    from rag.embeddings.local import LocalEmbedder
    if name.startswith("ollama:") and name != "ollama:":
        return _ollama_embedder(settings, name.removeprefix("ollama:"))
    if name == LocalEmbedder.NAME:
        return LocalEmbedder()
    if name.startswith("local:"):
        raise EmbedderError(
            f"This knowledge base was built with local embedder '{name}', which this version "
            f"does not provide (it has '{LocalEmbedder.NAME}'): rebuild the knowledge base"
        )
    raise EmbedderError(
        f"Unknown embedder '{name}' recorded for this knowledge base: rebuild the knowledge base"
    )
