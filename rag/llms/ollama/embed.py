"""POST /api/embed: one batch of texts to vectors, with failures worded as the other Ollama calls are."""

from __future__ import annotations

from collections.abc import Sequence

import ollama

from rag.errors import EmbedderError
from rag.llms.ollama.client import client, failure_message
from rag.llms.ollama.errors import QUERY_ERRORS
from rag.text import Text


def embed_failed(model: str, status: int) -> str:
    """How an error answer to an embedding request begins."""
    return Text("Ollama failed to embed with '{model}'", model=model)


class OllamaEmbedClient:
    """One kept-open client for the batches of an embedder (connections are reused between them)."""

    def __init__(self, host: str, model: str, timeout: float) -> None:
        self._host = host
        self._model = model
        self._timeout = timeout
        self._client: ollama.Client = client(host, timeout)

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """The vectors Ollama answers for `texts`, unchecked; EmbedderError when it cannot."""
        try:
            return self._client.embed(model=self._model, input=list(texts)).embeddings
        except QUERY_ERRORS as exc:
            # ValueError: invalid JSON or a body without `embeddings`: something other than Ollama answered.
            message = failure_message(exc, self._model, self._host, "/api/embed", self._timeout, embed_failed)
            raise EmbedderError(message) from exc
