"""OllamaEmbedder: batched POST /api/embed through the one Ollama client, every answer checked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag.embeddings import batches
from rag.errors import EmbedderError
from rag.llms.ollama.embed import OllamaEmbedClient
from rag.llms.ollama.names import strip_latest
from rag.model_ref import ModelRef
from rag.settings import DEFAULT_OLLAMA_EMBED_MODEL
from rag.text import Text

if TYPE_CHECKING:
    from rag.embeddings import ProgressCallback
    from rag.embeddings.batches import CancelSignal

# Context windows of the embedding models we know, as Ollama actually runs them. nomic-embed-text's
# GGUF was trained with 2048 tokens and Ollama clamps any larger num_ctx back to that, whatever the
# model card says about 8192. Unknown models get None: no warning is better than a wrong one.
_KNOWN_CONTEXT_TOKENS = {
    "nomic-embed-text": 2048,
    "mxbai-embed-large": 512,
}

_PROBE_TEXT = "dimension probe"


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
            raise EmbedderError(Text("No Ollama embedding model given: use RAG_EMBEDDER=ollama:<model>"))
        # One spelling of 'x' and 'x:latest' keeps the stored identity stable.
        self._model = strip_latest(model)
        self._host = host
        self._timeout = timeout
        self._batch_size = batch_size
        self._dimension: int | None = None
        self._client = OllamaEmbedClient(host, self._model, timeout)
        self.model = self._model
        self.name = str(ModelRef("ollama", self._model))
        self.max_input_tokens = _KNOWN_CONTEXT_TOKENS.get(self._model.split(":", 1)[0])

    def __repr__(self) -> str:
        return f"OllamaEmbedder(host={self._host!r}, model={self._model!r})"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            # Asked before any embedding (e.g. to create a table): one tiny request tells us.
            self._embed_batch([_PROBE_TEXT])
        assert self._dimension is not None
        return self._dimension

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, *, cancel: CancelSignal | None = None
    ) -> np.ndarray:
        return batches.embed_in_batches(
            texts,
            lambda: self.dimension,
            lambda items: (items, batches.by_count(len(items), self._batch_size)),
            self._embed_batch,
            progress,
            cancel,
        )

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The same as passages: /api/embed takes no query/passage distinction (a model that wants
        a prefix, such as nomic-embed-text's 'search_query: ', is used without one, as before)."""
        return self.embed(texts)

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        return self._validate(self._client.embed(batch), len(batch))

    def _validate(self, embeddings: Sequence[Sequence[float]], expected: int) -> np.ndarray:
        if len(embeddings) != expected:
            raise EmbedderError(
                Text(
                    "Ollama returned {count} embeddings for {expected} texts with '{model}': "
                    "is '{model}' an embedding model?",
                    count=len(embeddings),
                    expected=expected,
                    model=self._model,
                )
            )
        sizes = sorted({len(row) for row in embeddings})
        if len(sizes) != 1 or sizes[0] == 0:
            raise EmbedderError(
                Text(
                    "Ollama returned embeddings of inconsistent dimensions {sizes} with '{model}'",
                    sizes=str(sizes),
                    model=self._model,
                )
            )
        if self._dimension is not None and sizes[0] != self._dimension:
            # Happens when the model was re-pulled or replaced while we were running.
            raise EmbedderError(
                Text(
                    "Ollama returned {now}-dimensional embeddings with '{model}' after {before}-dimensional ones: "
                    "was the model replaced?",
                    now=sizes[0],
                    model=self._model,
                    before=self._dimension,
                )
            )
        vectors = np.asarray(embeddings, dtype=np.float32)
        if not np.isfinite(vectors).all():
            raise EmbedderError(
                Text("Ollama returned non-finite numbers in embeddings with '{model}'", model=self._model)
            )
        self._dimension = sizes[0]
        return vectors
