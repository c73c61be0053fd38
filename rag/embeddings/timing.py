"""How long embedding takes: the expected time before an ingest, and a throughput measure for the bench.

e5 reads 160-930 tokens/s on 2 cores, depending on their load (a 300-page book, ~600 chunks read
to 512 tokens: 6-30 minutes), so the Upload page says the expected time before it starts; WordLlama
(~200 passages/s even on loaded cores) and Ollama (its speed is the server's) have no estimate until
this process has timed some of their batches.

A static rate was wrong by a factor of two: RFC 2616 took 394 s against "about 3 min" at load 1-4.
So the estimate comes from the batches this process embedded last (`RATES`, fed by the embedders
through `rag.embeddings.batches.run`), and says when it is only a first guess and when the machine
is busy (`Load`).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rag.text import Text

if TYPE_CHECKING:
    from rag.embeddings import Embedder


@runtime_checkable
class Paced(Protocol):
    """An embedder whose time grows with tokens and that knows its rate (E5Embedder): `tokens_per_second`
    is the one it measured, or its prior before any batch (the first guess `estimate` falls back on)."""

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


RECENT_BATCHES = 16
"""How many of an embedder's latest batches its measured rate is taken over: enough to even out one
batch's luck (e5's are ~5-15 s each), few enough to follow the machine's load as it changes."""


@dataclass(frozen=True)
class Rate:
    """An embedder's throughput over its latest batches in this process."""

    texts_per_second: float
    tokens_per_second: float | None
    """None when its batches were not counted in tokens (WordLlama, Ollama)."""
    batches: int


class Rates:
    """The latest batches each embedder ran in this process (texts, tokens, wall seconds), thread-safe:
    an ingest records from its worker thread while the page reads for an estimate."""

    def __init__(self, keep: int = RECENT_BATCHES) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._batches: dict[str, deque[tuple[int, int | None, float]]] = {}

    def record(self, embedder: str, texts: int, seconds: float, tokens: int | None = None) -> None:
        """One batch of `texts` texts (`tokens` tokens, when counted) that took `seconds` of wall time."""
        if texts <= 0 or seconds <= 0:
            return  # nothing timed: would divide by nothing
        with self._lock:
            self._batches.setdefault(embedder, deque(maxlen=self._keep)).append((texts, tokens, seconds))

    def rate(self, embedder: str) -> Rate | None:
        """The rate over the latest batches (total over total, so a long batch weighs by its length);
        None before any was recorded."""
        with self._lock:
            recent = list(self._batches.get(embedder, ()))
        if not recent:
            return None
        counted = [(tokens, seconds) for _, tokens, seconds in recent if tokens is not None]
        per_token = sum(t for t, _ in counted) / sum(s for _, s in counted) if counted else None
        return Rate(sum(t for t, _, _ in recent) / sum(s for _, _, s in recent), per_token, len(recent))

    def clear(self) -> None:
        with self._lock:
            self._batches.clear()


RATES = Rates()
"""This process's record, which the embedders feed and the estimates read."""


def record_batch(embedder: str, texts: int, seconds: float, tokens: int | None = None) -> None:
    """Record one batch of `embedder` in this process's record (`RATES`)."""
    RATES.record(embedder, texts, seconds, tokens)


@dataclass(frozen=True)
class Estimate:
    """How long an embedding should take, and what that rests on."""

    seconds: float
    measured: bool
    """True: from this process's latest batches; False: a first guess (the embedder's prior rate),
    nothing having been embedded with it here yet."""
    per_second: float
    unit: str
    """What `per_second` counts: "tokens" or "chunks"."""


def estimate(embedder: Embedder, texts: Sequence[str], rates: Rates = RATES) -> Estimate | None:
    """How long `embedder` should take for `texts`: at the rate measured in this process (tokens/s
    for an embedder that counts tokens, else chunks/s), at its prior rate before any batch was
    measured; None when neither is known (WordLlama and Ollama before their first batch)."""
    measured = rates.rate(embedder.name)
    if measured is not None:
        if isinstance(embedder, Paced) and measured.tokens_per_second:
            per_second = measured.tokens_per_second
            return Estimate(estimate_seconds(embedder.count_tokens(texts), per_second), True, per_second, "tokens")
        per_second = measured.texts_per_second
        return Estimate(len(texts) / per_second, True, per_second, "chunks")
    if isinstance(embedder, Paced):
        prior = embedder.tokens_per_second
        return Estimate(estimate_seconds(embedder.count_tokens(texts), prior), False, prior, "tokens")
    return None


def steady(first: Estimate | None, now: Estimate | None) -> Estimate | None:
    """The estimate to show for the same texts as `first` (shown before, or None), now that `estimate` says
    `now`: a first guess stays the one shown first until a measured rate replaces it. The first guess shares the
    cores out by the load average, which the upload's own parsing raises: pressing Ingest redrew "about 56 s"
    as "about 66 s" (load 0.27 -> 0.65) for an ingest that took 45 s (the Chromium check of issue 29)."""
    if first is None or now is None or now.measured or first.measured:
        return now
    return first


def expected_seconds(embedder: Embedder, texts: Sequence[str]) -> float | None:
    """Seconds `embedder` should take for `texts` (see `estimate`; None: no estimate)."""
    found = estimate(embedder, texts)
    return found.seconds if found is not None else None


@dataclass(frozen=True)
class Load:
    """The machine's 1-minute load average beside the cores this process may use."""

    average: float
    cores: int

    @property
    def busy(self) -> bool:
        """More runnable work than cores: everything, embedding included, takes turns."""
        return self.average > self.cores


def machine_load(average: float | None = None, cores: int | None = None) -> Load | None:
    """The load now (`average`, `cores`: given, for a test; else os.getloadavg() and the usable
    cores); None where the system keeps no load average."""
    from rag.cores import usable_cores

    if average is None:
        try:
            average = os.getloadavg()[0]
        except (AttributeError, OSError):  # Windows
            return None
    return Load(average, cores if cores is not None else usable_cores())


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


def duration_text(seconds: float) -> str:
    """A duration as the estimates say it: seconds under 90, minutes under 90, hours beyond."""
    if seconds < 90:
        return Text("{n} s", n=max(round(seconds), 1))
    if seconds < 5400:
        return Text("{n} min", n=round(seconds / 60))
    return Text("{n} h", n=f"{seconds / 3600:.1f}")
