"""The default embedder's batches are kept for a resume as they are, with nothing patched: the other resume tests
keep every batch of WordLlama (`batches.KEEP_AFTER_SECONDS_A_CHUNK` set to 0) "as e5's would be", and when e5 grew
fast enough to run a batch in under the second that rule asked of a batch, nothing of it was kept any more while the
Upload page still promised that a resume would not embed the chunks again (a Chromium walk: stopped at 58 of 177
chunks, the resume began at 6 of 177)."""

from __future__ import annotations

import threading

from rag.chunking import ChunkSettings
from rag.embeddings import batches, timing
from rag.embeddings.e5 import E5Embedder
from rag.ingest import Source, ingest_files
from rag.store import Store
from tests.ingest.test_resume import stop_after

TEXT = " ".join(
    f"Night {n}: the keeper of light {n % 7} logged wind {n * 13 % 29} knots from bearing {n * 37 % 360} "
    f"and {n % 5} ships passing the reef before the tide turned at the harbour wall."
    for n in range(400)
).encode()
STOP_AFTER = 10


def test_a_stopped_e5_ingest_keeps_what_it_embedded_and_the_resume_reuses_it(store: Store) -> None:
    timing.RATES.clear()
    cancel = threading.Event()
    embedder = E5Embedder()
    source = Source.upload("harbour-log.txt", TEXT)
    [stopped] = ingest_files(
        store, embedder, [source], "e5-resume", ChunkSettings(), on_stage=stop_after(cancel, STOP_AFTER), cancel=cancel
    )
    assert stopped.status == "stopped"
    rate = timing.RATES.rate(E5Embedder.NAME)
    assert rate is not None and rate.batches >= 2
    kept = store.vector_cache.count()
    if 1 / rate.texts_per_second < batches.KEEP_AFTER_SECONDS_A_CHUNK:  # a machine fast enough to embed again
        assert kept == 0 and "nothing of it was stored" in stopped.reason
        return
    assert kept >= STOP_AFTER and f"{kept:,} of " in stopped.reason  # "10 of 38 chunks embedded are kept"
    [resumed] = ingest_files(store, embedder, [Source.upload("harbour-log.txt", TEXT)], "e5-resume", ChunkSettings())
    assert resumed.status == "stored"
    assert resumed.reason.startswith(f"{kept:,} of {resumed.chunks:,} chunks were embedded by a stopped ingest")
    assert store.vector_cache.count() == 0  # the stored document's rows are dropped
