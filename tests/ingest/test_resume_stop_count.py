"""What a stop says it kept is what the resume reuses, and a resumed ingest's bar starts at the kept share
(issue 29's follow-ups). The Upload page's Stop ends the script run at its next Streamlit call, while
Streamlit already starts the next run (fast reruns): that run counted the kept chunks while the stopped
one was still embedding a batch, which it then kept ("39 kept", 44 reused). WordLlama stands for e5 here."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from rag.embeddings import batches
from rag.ingest import Source, after_stop, ingest_files
from rag.store import Store
from tests.ingest.test_resume import BATCH, KB, LOG, SETTINGS, Counting, stop_after, stored_vectors_of


@pytest.fixture(autouse=True)
def keep_every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, "KEEP_AFTER_SECONDS_A_CHUNK", 0.0)  # every batch kept, as e5's are


class Ended(BaseException):
    """Stands for Streamlit's StopException, raised at the stopped run's next progress update."""


class Held(Counting):
    """Its third batch waits until released: the batch in flight when the user presses Stop."""

    def __init__(self) -> None:
        super().__init__()
        self.in_third = threading.Event()
        self.release = threading.Event()

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        if len(self.seen) == 2 * BATCH:
            self.in_third.set()
            assert self.release.wait(60), "the test never released the third batch"
        return super()._embed_batch(batch)


def test_a_stop_during_a_batch_counts_that_batch_as_the_resume_reuses_it(store: Store) -> None:
    embedder, stop = Held(), threading.Event()

    def on_stage(name: str):
        def heard(stage: str, fraction: float, message: str) -> None:
            if stop.is_set():
                raise Ended  # the stopped run's next Streamlit call

        return heard

    def stopped_run() -> None:
        try:
            list(ingest_files(store, embedder, [Source.upload("log.txt", LOG)], KB, SETTINGS, on_stage=on_stage))
        except Ended:
            pass

    thread = threading.Thread(target=stopped_run)
    thread.start()
    try:
        assert embedder.in_third.wait(60)
        stop.set()  # Stop pressed while the third batch is embedded; the next run starts now
        threading.Timer(0.5, embedder.release.set).start()  # the batch ends after the next run began
        told = after_stop(store, KB, "log.txt", LOG, SETTINGS, "embed")  # the next run's count
    finally:
        embedder.release.set()
        thread.join(60)
    total = len(stored_vectors_of(store, LOG))
    kept = 3 * BATCH  # the batch in flight was kept: counted too
    assert store.vector_cache.count() == kept
    assert told.reason == (
        f"stopped during embed: {kept} of {total} chunks embedded are kept; press Ingest to resume from there"
    )

    resumed = Counting()
    [result] = ingest_files(store, resumed, [Source.upload("log.txt", LOG)], KB, SETTINGS)
    assert result.reason == f"{kept} of {total} chunks were embedded by a stopped ingest and reused"
    assert len(resumed.seen) == total - kept


def test_a_count_that_cannot_wait_for_the_batch_says_at_least(store: Store) -> None:
    embedder, stop = Held(), threading.Event()

    def stopped_run() -> None:
        def heard(stage: str, fraction: float, message: str) -> None:
            if stop.is_set():
                raise Ended

        try:
            list(ingest_files(store, embedder, [Source.upload("log.txt", LOG)], KB, SETTINGS, on_stage=lambda n: heard))
        except Ended:
            pass

    thread = threading.Thread(target=stopped_run)
    thread.start()
    try:
        assert embedder.in_third.wait(60)
        stop.set()
        from rag.ingest.resume import kept_after_stop

        kept = kept_after_stop(KB, "log.txt", wait=0.2)  # the batch is still being embedded
    finally:
        embedder.release.set()
        thread.join(60)
    assert kept is not None and (kept.kept, kept.settled) == (2 * BATCH, False)
    from rag.ingest.pipeline import stop_reason

    assert str(stop_reason("embed", kept)).startswith(f"stopped during embed: at least {2 * BATCH} of ")


def test_a_resumed_ingests_first_embed_progress_counts_the_kept_chunks(store: Store) -> None:
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
    assert stopped.status == "stopped"
    total, kept = len(stored_vectors_of(store, LOG)), 2 * BATCH

    heard: list[tuple[str, float, str]] = []
    [result] = ingest_files(
        store,
        Counting(),
        [Source.upload("log.txt", LOG)],
        KB,
        SETTINGS,
        on_stage=lambda name: lambda stage, fraction, message: heard.append((stage, fraction, str(message))),
    )
    assert result.status == "stored"
    first = next(h for h in heard if h[0] == "embed")
    # Not 20% and "N chunks" while the embedder plans and looks the kept vectors up: the kept share at once.
    assert first == (
        "embed",
        pytest.approx(0.2 + 0.7 * kept / total),
        f"{kept}/{total} chunks embedded ({kept} kept from a stopped ingest)",
    )
    embeds = [fraction for stage, fraction, _ in heard if stage == "embed"]
    assert embeds == sorted(embeds)  # the bar never goes back

    # A first ingest still starts its bar at 20%, saying how many chunks it embeds.
    fresh: list[tuple[str, float, str]] = []
    list(
        ingest_files(
            store,
            Counting(),
            [Source.upload("log.txt", LOG)],
            "fresh",
            SETTINGS,
            on_stage=lambda name: lambda stage, fraction, message: fresh.append((stage, fraction, str(message))),
        )
    )
    assert next(h for h in fresh if h[0] == "embed") == ("embed", 0.2, f"{total} chunks")
