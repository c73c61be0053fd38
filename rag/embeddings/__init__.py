"""Text embedders: Ollama over HTTP, or WordLlama running in-process with weights shipped in its wheel.

Every embedder returns float32 rows of unit length, so cosine similarity is a plain dot product and
vectors from different runs of the same embedder are comparable. Every failure is an EmbedderError
whose message is one line a user can act on.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import numpy as np
import ollama

from rag.errors import EmbedderError
from rag.llms.ollama.errors import (
    QUERY_ERRORS, display_host, invalid_answer_message, log_unanswered, not_found_message, one_line,
    response_error_text, strip_latest, unreachable_message, with_tag,
)
from rag.settings import DEFAULT_OLLAMA_EMBED_MODEL, Settings

if TYPE_CHECKING:
    from wordllama import WordLlamaInference

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
"""Called after each batch with (texts done, total)."""

# Context windows of the embedding models we know, as Ollama actually runs them. nomic-embed-text's
# GGUF was trained with 2048 tokens and Ollama clamps any larger num_ctx back to that, whatever the
# model card says about 8192. Unknown models get None: no warning is better than a wrong one.
_KNOWN_CONTEXT_TOKENS = {
    "nomic-embed-text": 2048,
    "mxbai-embed-large": 512,
}

_PROBE_TEXT = "dimension probe"


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


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # A text with no tokens pools to the zero vector; dividing would turn it into NaNs that poison
    # every similarity they touch, so it stays zero (it matches nothing).
    if np.any(norms == 0):
        log.warning("%d text(s) embedded to the zero vector (empty input?)", int(np.sum(norms == 0)))
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def _check_texts(texts: Sequence[str]) -> list[str]:
    # A bare string is a Sequence[str] too; embedding it character by character is never intended.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single string")
    return list(texts)


class OllamaEmbedder:
    """Batched POST /api/embed through the official client; `truncate` is left at Ollama's default."""

    def __init__(
        self,
        host: str,
        model: str = DEFAULT_OLLAMA_EMBED_MODEL,
        *,
        batch_size: int = 64,
        timeout: float = 120.0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        model = model.strip()
        if not model:
            raise EmbedderError("No Ollama embedding model given: use RAG_EMBEDDER=ollama:<model>")
        # One spelling of 'x' and 'x:latest' keeps the stored identity stable.
        self._model = strip_latest(model)
        self._host = host
        self._timeout = timeout
        self._batch_size = batch_size
        self._dimension: int | None = None
        self._client = ollama.Client(host=host, timeout=timeout)

    def __repr__(self) -> str:
        return f"OllamaEmbedder(host={self._host!r}, model={self._model!r})"

    @property
    def name(self) -> str:
        return f"ollama:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    @property
    def max_input_tokens(self) -> int | None:
        return _KNOWN_CONTEXT_TOKENS.get(self._model.split(":", 1)[0])

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            # Asked before any embedding (e.g. to create a table): one tiny request tells us.
            self._embed_batch([_PROBE_TEXT])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        items = _check_texts(texts)
        total = len(items)
        if total == 0:
            return np.empty((0, self.dimension), dtype=np.float32)
        parts: list[np.ndarray] = []
        for start in range(0, total, self._batch_size):
            parts.append(self._embed_batch(items[start : start + self._batch_size]))
            if progress is not None:
                progress(min(start + self._batch_size, total), total)
        return _l2_normalise(np.concatenate(parts))

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        try:
            response = self._client.embed(model=self._model, input=batch)
        except ollama.ResponseError as exc:
            raise self._response_error(exc) from exc
        except (ConnectionError, httpx.TransportError) as exc:
            raise EmbedderError(unreachable_message(self._host, exc, self._timeout)) from exc
        except ValueError as exc:
            # Invalid JSON or a body without `embeddings`: something other than Ollama answered.
            raise EmbedderError(invalid_answer_message(self._host, "/api/embed", exc)) from exc
        return self._validate(response.embeddings, len(batch))

    def _response_error(self, exc: ollama.ResponseError) -> EmbedderError:
        text = response_error_text(exc)
        if exc.status_code == 404:
            return EmbedderError(not_found_message(text, self._model, self._host, "/api/embed"))
        return EmbedderError(f"Ollama failed to embed with '{self._model}': {text}")

    def _validate(self, embeddings: Sequence[Sequence[float]], expected: int) -> np.ndarray:
        if len(embeddings) != expected:
            raise EmbedderError(
                f"Ollama returned {len(embeddings)} embeddings for {expected} texts with "
                f"'{self._model}': is '{self._model}' an embedding model?"
            )
        sizes = sorted({len(row) for row in embeddings})
        if len(sizes) != 1 or sizes[0] == 0:
            raise EmbedderError(
                f"Ollama returned embeddings of inconsistent dimensions {sizes} with '{self._model}'"
            )
        if self._dimension is not None and sizes[0] != self._dimension:
            # Happens when the model was re-pulled or replaced while we were running.
            raise EmbedderError(
                f"Ollama returned {sizes[0]}-dimensional embeddings with '{self._model}' "
                f"after {self._dimension}-dimensional ones: was the model replaced?"
            )
        vectors = np.asarray(embeddings, dtype=np.float32)
        if not np.isfinite(vectors).all():
            raise EmbedderError(f"Ollama returned non-finite numbers in embeddings with '{self._model}'")
        self._dimension = sizes[0]
        return vectors


class LocalEmbedder:
    """WordLlama (l2_supercat, 256-d): static token embeddings, mean-pooled, no network ever."""

    CONFIG = "l2_supercat"
    DIMENSION = 256
    NAME = f"local:wordllama-{CONFIG}-{DIMENSION}"

    def __init__(self, *, batch_size: int = 256) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._batch_size = batch_size
        self._model: WordLlamaInference | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalEmbedder(name={self.NAME!r})"

    @property
    def name(self) -> str:
        return self.NAME

    @property
    def dimension(self) -> int:
        return self.DIMENSION

    @property
    def max_input_tokens(self) -> int | None:
        return None  # mean pooling reads every token; there is no window to overflow

    def embed(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        items = _check_texts(texts)
        total = len(items)
        if total == 0:
            return np.empty((0, self.DIMENSION), dtype=np.float32)
        model = self._load()
        parts: list[np.ndarray] = []
        for start in range(0, total, self._batch_size):
            batch = items[start : start + self._batch_size]
            try:
                parts.append(np.asarray(model.embed(batch, norm=False, batch_size=len(batch))))
            except Exception as exc:  # noqa: BLE001 - the library raises assorted types
                raise EmbedderError(
                    f"The local embedder failed ({type(exc).__name__}: {one_line(str(exc), 200)}): "
                    f"reinstall wordllama or use Ollama"
                ) from exc
            if progress is not None:
                progress(min(start + self._batch_size, total), total)
        return _l2_normalise(np.concatenate(parts))

    def _load(self) -> WordLlamaInference:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                self._model = _load_wordllama(self.CONFIG, self.DIMENSION)
        return self._model


def _load_wordllama(config: str, dim: int) -> WordLlamaInference:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    except ImportError as exc:
        raise EmbedderError(
            "The local embedder needs the 'wordllama' package: run 'pip install wordllama'"
        ) from exc
    finally:
        # wordllama calls logging.basicConfig(level=INFO) on import, which would make every
        # library's INFO chatter appear on stderr; undo it when nobody had configured logging.
        if not handlers:
            for handler in root.handlers[:]:
                root.removeHandler(handler)
            root.setLevel(level)
    package_dir = Path(wordllama.__file__).parent
    try:
        # The weights ship inside the wheel; never let a missing file turn into a download.
        model = wordllama.WordLlama.load(
            config=config, dim=dim, cache_dir=package_dir, disable_download=True
        )
    except Exception as exc:  # noqa: BLE001 - FileNotFoundError, safetensors and tokenizer errors
        raise EmbedderError(
            f"The local embedder's weights could not be loaded from {package_dir} "
            f"({one_line(str(exc), 200)}): run 'pip install --force-reinstall wordllama'"
        ) from exc
    log.info("Loaded WordLlama %s (%d-d) from %s", config, dim, package_dir)
    return model


def ollama_models(host: str, timeout: float = 3.0) -> list[str] | None:
    """Names of the models Ollama has pulled (GET /api/tags); None when it cannot be asked."""
    try:
        with ollama.Client(host=host, timeout=timeout) as client:
            listing: Any = client.list()
    except QUERY_ERRORS as exc:
        log_unanswered(log, host, exc, "list its models")
        return None
    return [m.model for m in listing.models if m.model]


def ollama_has_model(models: Sequence[str], model: str) -> bool:
    """Whether `model` is among `models`, with Ollama's rule that no tag means ':latest'."""
    wanted = with_tag(model)
    return any(with_tag(m) == wanted for m in models)


def _ollama_embedder(settings: Settings, model: str) -> OllamaEmbedder:
    return OllamaEmbedder(
        settings.ollama_host,
        model,
        batch_size=settings.embed_batch_size,
        timeout=settings.ollama_timeout,
    )


def resolve_embedder(settings: Settings) -> Embedder:
    """The embedder `settings.embedder` asks for; 'auto' prefers Ollama and falls back to local."""
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
