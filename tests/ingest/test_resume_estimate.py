"""The time an ingest should take counts only the chunks still to embed: those whose vectors a stopped
ingest kept (rag.store.vector_cache) cost nothing, and the note says how many there are."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from rag.embeddings import batches
from rag.ingest import Source, duration_note, ingest_files
from rag.ingest.resume import already_embedded, left_to_embed
from rag.store import Store
from tests.ingest.test_resume import BATCH, KB, LOG, SETTINGS, Counting, stop_after, stored_vectors_of


class Paced(Counting):
    """WordLlama claiming e5's way of timing: a rate in tokens, tokens counted as words."""

    tokens_per_second = 100.0

    def count_tokens(self, texts: Sequence[str]) -> int:
        return sum(len(t.split()) for t in texts)


@pytest.fixture(autouse=True)
def keep_every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, "KEEP_AFTER_SECONDS_A_CHUNK", 0.0)


def test_the_estimate_leaves_out_the_chunks_a_stopped_ingest_kept(store: Store) -> None:
    texts = stored_vectors_of(store, LOG)
    probe = Counting()
    assert already_embedded(store, probe, texts) == [False] * len(texts)  # nothing kept: no key worked out
    cancel = threading.Event()
    [stopped] = ingest_files(
        store,
        Counting(),
        [Source.upload("log.txt", LOG)],
        KB,
        SETTINGS,
        on_stage=stop_after(cancel, 2 * BATCH),
        cancel=cancel,
    )
    assert stopped.status == "stopped" and store.vector_cache.count() == 2 * BATCH

    left, embedded = left_to_embed(store, probe, texts)
    assert embedded == 2 * BATCH and left == texts[2 * BATCH :]
    assert probe.seen == []  # looking embeds nothing

    planned: list[tuple[int, float | None]] = []
    paced = Paced()
    [resumed] = ingest_files(
        store,
        paced,
        [Source.upload("log.txt", LOG)],
        KB,
        SETTINGS,
        on_plan=lambda name: lambda chunks, seconds: planned.append((chunks, seconds)),
    )
    assert resumed.status == "stored" and paced.seen == texts[2 * BATCH :]
    assert planned == [(len(texts) - 2 * BATCH, paced.count_tokens(texts[2 * BATCH :]) / 100.0)]


def test_the_note_says_how_many_chunks_are_already_embedded() -> None:
    assert duration_note("local:e5", 180.0, 104, embedded=536) == (
        "536 of 640 chunks are already embedded (kept from a stopped ingest). "
        "Embedding 104 chunks with local:e5 should take about 3 min on this machine."
    )
    # The rest too quick to mention: what is kept is still said.
    assert duration_note("local:e5", 2.0, 4, embedded=1200) == (
        "1,200 of 1,204 chunks are already embedded (kept from a stopped ingest)."
    )
    assert duration_note("local:e5", 2.0, 4) is None


def test_a_file_the_knowledge_base_holds_unchanged_adds_nothing_to_embed(store: Store) -> None:
    from rag.documents import sha256_hex
    from rag.embeddings import LocalEmbedder
    from rag.ingest import prepare
    from rag.ingest.preview import chunks_to_embed

    [stored] = ingest_files(store, LocalEmbedder(), [Source.upload("log.txt", LOG)], KB, SETTINGS)
    assert stored.ok
    prepared = prepare(LOG, "log.txt", SETTINGS)
    chunks = [c.text for c in prepared.chunk_set.chunks]
    sha = sha256_hex(LOG)
    assert chunks_to_embed(store, KB, [("log.txt", sha, prepared)], SETTINGS) == []  # ingested as it is
    assert chunks_to_embed(store, KB, [("other.txt", sha, prepared)], SETTINGS) == chunks  # another name: new
    assert chunks_to_embed(store, None, [("log.txt", sha, prepared)], SETTINGS) == chunks  # a new knowledge base
    changed = prepare(LOG + b"\nOne more line.", "log.txt", SETTINGS)
    assert chunks_to_embed(store, KB, [("log.txt", "0" * 64, changed)], SETTINGS) == [
        c.text for c in changed.chunk_set.chunks
    ]
    assert chunks_to_embed(store, KB, [("broken.pdf", sha, None)], SETTINGS) == []  # fails: nothing embedded
