"""What a retrieval check will embed, and about how long that takes, said before it starts.

Three settings of RFC 2616 were 1,437 texts to embed, ~2 h of e5 on a loaded CPU, with nothing said
first. `plan_check` counts the texts the check still needs vectors for after everything that can be
reused is in the in-memory cache: the vectors this process embedded before, the chunks a knowledge base
already holds under the same embedder (a document stored under the same settings: all of its chunks),
and the vectors a stopped ingest kept (rag.store.vector_cache). Keyword ranking needs none.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from rag.chunking import ChunkSet
from rag.embeddings import Embedder, EmbeddingCancelled, batches
from rag.embeddings.timing import Estimate, Load, duration_text, estimate, machine_load
from rag.errors import RagError, one_line
from rag.evaluation.cache import EmbeddingCache
from rag.evaluation.questions import Question
from rag.evaluation.ranking import texts_to_embed
from rag.text import Text

if TYPE_CHECKING:
    from rag.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckPlan:
    """The texts a check has left to embed, where the others came from, and the expected time."""

    mode: str
    embedder: str
    to_embed: tuple[str, ...]
    """The distinct texts still without a vector, in the order the check embeds them."""
    cached: int
    """Distinct texts embedded before in this process."""
    stored: int
    """Distinct texts whose vectors came from the database (stored chunks, a stopped ingest's vectors)."""
    estimate: Estimate | None
    """How long embedding `to_embed` should take (None: nothing to embed, or no rate known yet)."""
    load: Load | None

    @property
    def message(self) -> str:
        """What to tell the user before the check starts (a `Text`)."""
        if self.mode == "keyword":
            return Text("Nothing to embed: keyword ranking (BM25) needs no vectors.")
        reused = self.cached + self.stored
        if not self.to_embed:
            return Text(
                "Nothing to embed: the vectors of all {reused} texts are at hand ({stored} from the knowledge base).",
                reused=reused,
                stored=self.stored,
            )
        values = {"n": len(self.to_embed), "embedder": self.embedder, "reused": reused, "stored": self.stored}
        if self.estimate is None:
            note = Text(
                "{n} texts to embed with {embedder} ({reused} reused, {stored} of them from the knowledge base); "
                "no estimate of the time yet: this embedder has not been timed in this process.",
                **values,
            )
        else:
            note = Text(
                "{n} texts to embed with {embedder} ({reused} reused, {stored} of them from the knowledge base): "
                "about {duration}.",
                duration=duration_text(self.estimate.seconds),
                **values,
            )
            if not self.estimate.measured:
                note = Text("{first} {second}", first=note, second=Text("A first guess: nothing was timed here yet."))
        if self.load is not None and self.load.busy:
            load = {"load": f"{self.load.average:.1f}", "cores": self.load.cores}
            busy = (
                Text("The machine is busy (load {load} on {cores} core): this may take longer.", **load)
                if self.load.cores == 1
                else Text("The machine is busy (load {load} on {cores} cores): this may take longer.", **load)
            )
            note = Text("{first} {second}", first=note, second=busy)
        return note


def plan_check(
    chunk_set_by_label: Mapping[str, ChunkSet],
    questions: Sequence[Question],
    embedder: Embedder,
    cache: EmbeddingCache,
    mode: str,
    *,
    store: Store | None = None,
) -> CheckPlan:
    """Fill `cache` with every vector of the check's texts that `store` already holds (chunks stored by
    `embedder`, a stopped ingest's vectors) and say what is left to embed and how long that should take.
    Keyword mode looks nothing up and calls no embedder. A database that cannot be read costs the reuse,
    not the check (logged)."""
    texts = texts_to_embed(chunk_set_by_label, questions, mode)
    if not texts:
        return CheckPlan(mode, embedder.name, (), 0, 0, None, None)
    # The questions are embedded as queries, the chunks as passages (rag.evaluation.ranking.embed_check):
    # the cache keeps the two apart, and only passages can come from the database.
    queries, passages = texts[: len(questions)], texts[len(questions) :]
    missing_queries = cache.missing(embedder.name, queries, queries=True)
    missing = cache.missing(embedder.name, passages)
    cached = len(set(queries)) - len(missing_queries) + len(set(passages)) - len(missing)
    stored = 0
    if store is not None and missing:
        try:
            found = found_in_store(store, embedder, missing)
        except RagError as exc:
            log.warning("cannot read the stored vectors to reuse: %s", one_line(exc, None))
            found = {}
        stored = cache.fill(embedder.name, found)
        missing = [t for t in missing if t not in found]
    missing = missing_queries + missing
    expected = estimate_texts(embedder, missing) if missing else None
    return CheckPlan(mode, embedder.name, tuple(missing), cached, stored, expected, machine_load() if missing else None)


SAMPLED = 128
"""Texts whose tokens the estimate counts at most, the rest scaled by characters: e5 counted 1,569 texts
(three settings of a 500 KB text) in 4.7 s on 2 loaded cores, a wait at every change of a setting."""


def estimate_texts(embedder: Embedder, texts: Sequence[str]) -> Estimate | None:
    """`timing.estimate` for `texts`, over an evenly spaced sample of them when they are many (`SAMPLED`)."""
    if len(texts) <= SAMPLED:
        return estimate(embedder, texts)
    step = len(texts) / SAMPLED
    sample = [texts[int(i * step)] for i in range(SAMPLED)]
    found = estimate(embedder, sample)
    if found is None:
        return None
    scale = sum(map(len, texts)) / max(sum(map(len, sample)), 1)
    return replace(found, seconds=found.seconds * scale)


def found_in_store(store: Store, embedder: Embedder, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Text -> vector for each of `texts` that the database holds for `embedder`: as a stored chunk of a
    knowledge base it built (by exact text: the ingest embeds `chunk.text` as the check does), then among
    the vectors stopped ingests kept (by the key the ingest uses, `batches.input_key` of what the model
    read, found by the embedder itself: see `_kept`)."""
    if not texts:
        return {}
    dimension = embedder.dimension
    found = store.stored_vectors(embedder.name, dimension, texts)
    rest = [t for t in texts if t not in found]
    if rest:
        found.update(_kept(store, embedder, dimension, rest))
    return found


class _Cancelled:
    """A cancel signal that is always set: the embedder stops before its first batch."""

    def is_set(self) -> bool:
        return True


class _Reader:
    """A `batches.BatchCache` that only reads the stopped ingests' vectors, remembering the keys asked for."""

    def __init__(self, store: Store, embedder_key: str) -> None:
        self._cache = store.vector_cache
        self._embedder = embedder_key
        self.keys: list[bytes] = []
        self.hits: dict[bytes, np.ndarray] = {}

    def found(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        self.keys = list(keys)
        self.hits = self._cache.found(self._embedder, keys)
        return self.hits

    def keep(self, keys: Sequence[bytes], rows: np.ndarray) -> None:
        """Nothing: the check writes nothing to the database."""


def _kept(store: Store, embedder: Embedder, dimension: int, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """The vectors of `texts` a stopped ingest with `embedder` kept. Their key is the hash of what the model
    read (e5's "passage: " and the text cut to its window), which only the embedder knows how to make: so
    the embedder is asked to embed them within `batches.reusing` of a reader of that table, with a cancel
    that is already set. It looks its inputs up (one key per text, in order), and stops before embedding
    any, or returns when all were found. Only asked when the table holds rows of this embedder (the common
    case: none)."""
    from rag.store.vector_cache import embedder_key

    key = embedder_key(embedder.name, dimension)
    if not store.vector_cache.count(key):
        return {}
    reader = _Reader(store, key)
    try:
        with batches.reusing(reader):
            embedder.embed(texts, cancel=_Cancelled())
    except EmbeddingCancelled:
        pass
    if len(reader.keys) != len(texts):  # an embedder that does not embed through rag.embeddings.batches
        return {}
    return {text: reader.hits[k] for text, k in zip(texts, reader.keys) if k in reader.hits}
