"""A long ingest: it says how long it should take before embedding, and one ended by the user (in the
app a click ends the script run inside a progress callback, with an exception that is not an
Exception) leaves the file whole or absent, and `after_stop` says which."""

from __future__ import annotations

import io

import pytest

from rag.chunking import ChunkSettings
from rag.embeddings import batches
from rag.embeddings.local import LocalEmbedder
from rag.ingest import after_stop, ingest_bytes

SETTINGS = ChunkSettings(chunk_size=100)
TEXT = ("Lighthouse keepers wrote the weather into a ledger every night. " * 40).encode()


@pytest.fixture(autouse=True)
def keep_every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """WordLlama embeds a batch in milliseconds, under the time from which a batch is worth keeping for a
    resume (`batches.KEEP_AFTER_SECONDS_A_CHUNK`): here every batch is kept, as e5's would be."""
    monkeypatch.setattr(batches, "KEEP_AFTER_SECONDS_A_CHUNK", 0.0)


class Ended(BaseException):
    """Stands for Streamlit's RerunException, raised where the page updates its progress bar."""


def stop_at(stage: str, fraction: float):
    def on_stage(reached: str, done: float, message: str) -> None:
        if reached == stage and done >= fraction:
            raise Ended

    return on_stage


@pytest.mark.parametrize(
    ("stage", "fraction", "kept", "vectors_kept"),
    [
        ("parse", 0.0, False, False),
        ("embed", 0.2, False, False),  # before the first batch
        ("embed", 0.5, False, True),  # after it (one batch: all 6 chunks)
        ("store", 0.9, False, True),
        ("store", 1.0, True, False),
    ],
)
def test_a_stop_leaves_the_file_whole_or_absent_and_after_stop_says_which(
    store, stage: str, fraction: float, kept: bool, vectors_kept: bool
) -> None:
    with pytest.raises(Ended):
        ingest_bytes(store, LocalEmbedder(), TEXT, "log.txt", "stop-kb", SETTINGS, on_stage=stop_at(stage, fraction))
    result = after_stop(store, "stop-kb", "log.txt", TEXT, SETTINGS, stage)
    stored = store.find_document("stop-kb", "log.txt")
    if kept:  # the stop landed after the commit
        assert (result.status, result.chunks) == ("stored", stored.chunk_count) and result.ok
    elif vectors_kept:  # nothing in the knowledge base, the vectors of the chunks embedded kept for a resume
        assert stored is None and not result.ok
        assert result.line() == (
            f"log.txt: stopped: stopped during {stage}: 6 of 6 chunks embedded are kept; "
            "press Ingest to resume from there"
        )
    else:
        assert stored is None and not result.ok
        assert result.line() == f"log.txt: stopped: stopped during {stage}: nothing of it was stored"
    # One row a distinct text (TEXT repeats itself: its 6 chunks are 2 texts); a stored document's are dropped.
    assert store.vector_cache.count() == (2 if vectors_kept else 0)


def test_a_stopped_replacement_keeps_the_version_before_and_files_not_started_say_so(store) -> None:
    first = ingest_bytes(store, LocalEmbedder(), TEXT, "log.txt", "stop-kb", SETTINGS)
    newer = TEXT + b" A storm came in the last night."
    with pytest.raises(Ended):
        ingest_bytes(store, LocalEmbedder(), newer, "log.txt", "stop-kb", SETTINGS, on_stage=stop_at("store", 0.9))
    result = after_stop(store, "stop-kb", "log.txt", newer, SETTINGS, "store")
    chunks = result.reason.values["reason"].values["total"]  # the newer version's (its vectors are kept)
    assert result.reason == (
        f"stopped during store: {chunks} of {chunks} chunks embedded are kept; press Ingest to resume from there; "
        "the version stored before is kept"
    )
    assert store.find_document("stop-kb", "log.txt").chunk_count == first.chunks
    later = after_stop(store, "stop-kb", "later.txt", b"Not read yet.", SETTINGS, None)
    assert (later.status, later.reason) == ("stopped", "not started")


class Paced(LocalEmbedder):
    """The fast local embedder, claiming e5's rate, so the estimate is long but the test is not."""

    tokens_per_second = 200.0

    def count_tokens(self, texts) -> int:
        return sum(len(t.split()) for t in texts)


def test_the_expected_time_is_heard_before_embedding_and_the_cli_says_it(store) -> None:
    from rag.cli import _Progress, _say_duration

    heard: list[tuple[str, object]] = []
    result = ingest_bytes(
        store,
        Paced(),
        TEXT,
        "log.txt",
        "plan-kb",
        SETTINGS,
        on_stage=lambda stage, fraction, message: heard.append(("stage", stage)),
        on_plan=lambda chunks, seconds: heard.append(("plan", (chunks, seconds))),
    )
    plan = [value for kind, value in heard if kind == "plan"]
    words = sum(len(c.split()) for c in (c.content for c in store.iter_chunks("plan-kb")))
    assert plan == [(result.chunks, words / 200.0)]
    assert heard.index(("plan", plan[0])) < heard.index(("stage", "embed"))  # said before it starts

    err = io.StringIO()
    _say_duration(err, _Progress(err, 1), "book.pdf", "local:e5", 600, 7 * 60.0)
    _say_duration(err, _Progress(err, 1), "note.txt", "local:e5", 2, 1.5)  # too short to mention
    assert err.getvalue() == (
        "book.pdf: Embedding 600 chunks with local:e5 should take about 7 min on this "
        "machine. Ctrl+C stops it; the files done by then stay.\n"
    )
