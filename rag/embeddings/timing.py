"""How long embedding takes: the expected time before an ingest, and a throughput measure for the bench.

e5 reads 160-700 tokens/s on 2 cores, depending on their load (a 300-page book, ~600 chunks read
to 512 tokens: 7-30 minutes), so the Upload page says the expected time before it starts; WordLlama
(~200 passages/s even on loaded cores) and Ollama (its speed is the server's) have no estimate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rag.embeddings import Embedder


@runtime_checkable
class Paced(Protocol):
    """An embedder whose time grows with tokens and that knows its rate (E5Embedder)."""

    @property
    def tokens_per_second(self) -> float: ...

    def count_tokens(self, texts: Sequence[str]) -> int: ...


def estimate_seconds(tokens: int, tokens_per_second: float) -> float:
    """Seconds to embed `tokens` tokens at `tokens_per_second`."""
    if tokens < 0:
        raise ValueError(f"the token count cannot be negative, got {tokens}")
    if not tokens_per_second > 0:
        raise ValueError(f"the embedding rate must be positive, got {tokens_per_second} tokens/s")
    return tokens / tokens_per_second


def expected_seconds(embedder: Embedder, texts: Sequence[str]) -> float | None:
    """Seconds `embedder` should take for `texts` at the rate it measured (None: no estimate,
    for embedders whose time is negligible or not theirs to know)."""
    if not isinstance(embedder, Paced):
        return None
    return estimate_seconds(embedder.count_tokens(texts), embedder.tokens_per_second)


@dataclass(frozen=True)
class Throughput:
    embedder: str
    texts: int
    seconds: float
    rss_mb: float
    """The process's resident memory after the run (the model included)."""

    @property
    def chunks_per_second(self) -> float:
        return self.texts / self.seconds if self.seconds > 0 else float("inf")


def throughput(embedder: Embedder, texts: Sequence[str]) -> Throughput:
    """Embed `texts` as passages once, after a one-text warm-up that loads the model, and time it."""
    import psutil

    items = list(texts)
    if not items:
        raise ValueError("throughput needs at least one text")
    embedder.embed(items[:1])
    started = time.perf_counter()
    embedder.embed(items)
    seconds = time.perf_counter() - started
    return Throughput(embedder.name, len(items), seconds, psutil.Process().memory_info().rss / 2**20)
