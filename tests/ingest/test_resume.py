"""A stopped or killed ingest keeps the vectors it embedded (rag.store.vector_cache), so the next Ingest of
the file embeds only the rest and stores what an uninterrupted ingest stores; the document itself stays
atomic in the knowledge base. The embedder is the real WordLlama, counted around its model call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from rag.chunking import ChunkSettings
from rag.embeddings import batches
from rag.embeddings.local import LocalEmbedder
from rag.ingest import Source, ingest_files
from rag.store import Store
from rag.store.vector_cache import VectorCache, embedder_key
from tests.conftest import ROOT

SETTINGS = ChunkSettings(chunk_size=40, min_chunk_size_chars=0)
BATCH = 8
LOG = " ".join(
    f"Night {n}: the keeper of light {n % 7} logged wind {n * 13 % 29} knots from bearing {n * 37 % 360} "
    f"and {n % 5} ships passing the reef."
    for n in range(120)
).encode()
KB = "harbour"


@pytest.fixture(autouse=True)
def keep_every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """WordLlama embeds a batch in milliseconds, under the time from which a batch is worth keeping: here
    every batch is kept, to see the cache at work (the last test checks the threshold itself)."""
    monkeypatch.setattr(batches, "KEEP_AFTER_SECONDS_A_CHUNK", 0.0)


class Counting(LocalEmbedder):
    """WordLlama in batches of BATCH, noting every text its model is given."""

    def __init__(self) -> None:
        super().__init__(batch_size=BATCH)
        self.seen: list[str] = []

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        self.seen.extend(batch)
        return super()._embed_batch(batch)


def stored_vectors(uri: str, knowledge: str) -> list[tuple[str, np.ndarray]]:
    """Each stored chunk's text and vector, in the document's order."""
    with psycopg.connect(uri) as conn:
        register_vector(conn)
        rows = conn.execute(
            "SELECT content, embedding FROM vector_store WHERE metadata->>'knowledge' = %s "
            "ORDER BY (metadata->>'chunk_index')::int",
            (knowledge,),
        ).fetchall()
    return [(content, np.asarray(vector, dtype=np.float32)) for content, vector in rows]


def stop_after(cancel: threading.Event, chunks: int):
    """`on_stage` that sets the real cancel signal once `chunks` chunks are embedded (as a Stop would)."""

    def on_stage(name: str):
        def heard(stage: str, fraction: float, message: str) -> None:
            if stage == "embed" and getattr(message, "values", {}).get("done", 0) >= chunks:
                cancel.set()

        return heard

    return on_stage


def test_a_stopped_ingest_resumes_where_it_stopped_and_stores_what_an_uninterrupted_one_does(
    store: Store, pg_uri: str
) -> None:
    first, cancel = Counting(), threading.Event()
    [stopped] = ingest_files(
        store,
        first,
        [Source.upload("log.txt", LOG)],
        KB,
        SETTINGS,
        on_stage=stop_after(cancel, 2 * BATCH),
        cancel=cancel,
    )
    total = len(stored_vectors_of(store, LOG))
    assert total > 4 * BATCH and len(first.seen) == 2 * BATCH  # stopped before its third batch
    assert (stopped.status, stopped.reason) == (
        "stopped",
        f"stopped during embed: {2 * BATCH} of {total} chunks embedded are kept; press Ingest to resume from there",
    )
    # Atomic: nothing of the document in the knowledge base, its vectors kept beside it.
    assert store.find_document(KB, "log.txt") is None and stored_vectors(pg_uri, KB) == []
    assert store.vector_cache.count() == 2 * BATCH

    heard: list[tuple[float, str]] = []
    resumed = Counting()
    [result] = ingest_files(
        store,
        resumed,
        [Source.upload("log.txt", LOG)],
        KB,
        SETTINGS,
        on_stage=lambda name: lambda stage, fraction, message: heard.append((fraction, message)),
    )
    assert result.status == "stored" and result.chunks == total
    assert result.line() == (
        f"log.txt: stored (1 page, {total} chunks; {2 * BATCH} of {total} chunks were embedded by a stopped "
        "ingest and reused)"
    )
    # Only the missing chunks reached the model, each once; the bar moved at once for the reused ones.
    texts = [text for text, _ in stored_vectors(pg_uri, KB)]
    assert resumed.seen == texts[2 * BATCH :]
    embed_messages = [m for _, m in heard if "chunks embedded" in m]
    assert embed_messages[0] == f"{2 * BATCH}/{total} chunks embedded ({2 * BATCH} kept from a stopped ingest)"
    assert store.vector_cache.count() == 0  # the document is stored: its rows are dropped

    whole = Counting()
    [again] = ingest_files(store, whole, [Source.upload("log.txt", LOG)], "uninterrupted", SETTINGS)
    assert again.status == "stored" and whole.seen == texts and again.reason == ""
    resumed_rows, whole_rows = stored_vectors(pg_uri, KB), stored_vectors(pg_uri, "uninterrupted")
    assert [t for t, _ in resumed_rows] == [t for t, _ in whole_rows]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(resumed_rows, whole_rows))


def stored_vectors_of(store: Store, data: bytes) -> list[str]:
    """The chunk texts `data` is cut into under SETTINGS (what the ingest embeds)."""
    from rag.ingest import prepare

    return [c.text for c in prepare(data, "log.txt", SETTINGS).chunk_set.chunks]


def test_a_killed_ingest_keeps_the_batches_it_finished(store: Store, pg_uri: str, tmp_path: Path) -> None:
    """A process killed with SIGKILL mid-embed: the batches committed before stay, the next ingest reuses them.
    The child's model blocks in its third batch, so it is killed there, whatever the machine's speed."""
    script = tmp_path / "child.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import threading, sys
            from rag.chunking import ChunkSettings
            from rag.embeddings import batches
            from rag.embeddings.local import LocalEmbedder
            from rag.ingest import Source, ingest_files
            from rag.store import Store

            class Hanging(LocalEmbedder):
                calls = 0

                def _embed_batch(self, batch):
                    Hanging.calls += 1
                    if Hanging.calls == 3:
                        threading.Event().wait()  # killed here
                    return super()._embed_batch(batch)

            batches.KEEP_AFTER_SECONDS_A_CHUNK = 0.0  # WordLlama's batches are fast: keep them all here
            store = Store(sys.argv[1])
            settings = ChunkSettings(chunk_size={SETTINGS.chunk_size}, min_chunk_size_chars=0)
            data = open(sys.argv[2], "rb").read()
            list(ingest_files(store, Hanging(batch_size={BATCH}), [Source.upload("log.txt", data)], "{KB}", settings))
            """
        )
    )
    (tmp_path / "log.txt").write_bytes(LOG)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, str(script), pg_uri, str(tmp_path / "log.txt")], env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while store.vector_cache.count() < 2 * BATCH:  # both batches committed: the child is in its third
            assert child.poll() is None, "the child ended before it was killed"
            assert time.monotonic() < deadline, "the child kept nothing within 120 s"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert store.find_document(KB, "log.txt") is None and store.vector_cache.count() == 2 * BATCH

    resumed = Counting()
    [result] = ingest_files(store, resumed, [Source.upload("log.txt", LOG)], KB, SETTINGS)
    texts = stored_vectors_of(store, LOG)
    assert result.status == "stored" and resumed.seen == texts[2 * BATCH :]


class Listed:
    """A `batches.BatchCache` in memory, to see what `embed_in_batches` asks and keeps."""

    def __init__(self, kept: dict[bytes, np.ndarray] | None = None) -> None:
        self.kept = dict(kept or {})

    def found(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        return {key: self.kept[key] for key in keys if key in self.kept}

    def keep(self, keys: Sequence[bytes], rows: np.ndarray) -> None:
        self.kept.update(zip(keys, rows))


def test_the_batches_reuse_what_the_cache_holds_wherever_it_lies_and_key_the_input_read() -> None:
    texts = [f"Entry {n}: the tide stood at {n} feet." for n in range(20)]
    embedder = Counting()
    cache = Listed()
    with batches.reusing(cache):
        whole = embedder.embed(texts)
    assert len(cache.kept) == 20 and set(cache.kept) == {batches.input_key(t) for t in texts}
    scattered = Listed({k: v for i, (k, v) in enumerate(cache.kept.items()) if i % 3 == 0})  # 7 of 20
    again, heard = Counting(), []
    with batches.reusing(scattered):
        rows = again.embed(texts, lambda done, total: heard.append(done))
    assert again.seen == [t for i, t in enumerate(texts) if i % 3]
    assert np.array_equal(rows, whole) and heard[0] == 7 and heard[-1] == 20
    assert batches.input_key("a", "passage: ") == batches.input_key("passage: a") != batches.input_key("a")
    # Outside `reusing` nothing is looked up or kept (the Chunk Lab, questions).
    outside = Counting()
    assert np.array_equal(outside.embed(texts), whole) and outside.seen == texts


def test_the_cache_is_bounded_by_age_and_by_rows_least_recently_used_first(store: Store, pg_uri: str) -> None:
    cache: VectorCache = store.vector_cache
    name = embedder_key("test:embedder", 3)
    keys = [bytes([n]) * 32 for n in range(6)]
    cache.keep(name, keys, np.eye(6, 3, dtype=np.float32))
    cache.keep(name, keys[:1], np.ones((1, 3), dtype=np.float32))  # kept already: the first row stays
    with psycopg.connect(pg_uri, autocommit=True) as conn:  # ages: key n last used n days ago
        for n, key in enumerate(keys):
            conn.execute(
                "UPDATE embedding_cache SET used_at = now() - make_interval(days => %s) WHERE text_sha256 = %s",
                (n, key),
            )
    found = cache.found(name, [keys[5], keys[0], b"missing"])  # a reuse renews the row (LRU)
    assert set(found) == {keys[5], keys[0]} and np.array_equal(found[keys[0]], [1, 0, 0])
    assert cache.prune(max_rows=3, max_age_days=4) == 3  # key 4 by age; keys 3 and 2 beyond the 3 rows
    assert set(cache.found(name, keys)) == {keys[0], keys[1], keys[5]}
    assert cache.drop(name, keys) == 3 and cache.count() == 0


def test_the_upload_page_says_what_a_stop_kept_and_its_next_ingest_resumes(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's Stop ends the script run inside a progress callback (StopException, not an Exception):
    here WordLlama's model raises it in its third batch of a file, once two are embedded and kept."""
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException
    from streamlit.testing.v1 import AppTest

    from rag.chunking.settings import DEFAULT
    from tests.pages.test_page_upload import APP, RUNNING_KEY, expected_chunks, run, table, upload

    embed_batch, seen = LocalEmbedder._embed_batch, []

    def stopping_third(self: LocalEmbedder, batch: list[str]) -> np.ndarray:
        seen.append(batch)
        if len(seen) == 3 and not getattr(self, "resumed", False):
            raise StopException
        return embed_batch(self, batch)

    monkeypatch.setattr(LocalEmbedder, "_embed_batch", stopping_third)
    monkeypatch.setattr(LocalEmbedder, "PADDED_CHARS", 1_200)  # small batches, so there are many
    app = run(AppTest.from_file(APP, default_timeout=120))
    upload(app, ("log.txt", LOG))
    app.text_input(key="upload_kb_new").set_value(KB)
    run(app)
    app.button(key="upload_ingest").click()
    run(app)  # the run the stop ended
    assert store.find_document(KB, "log.txt") is None and RUNNING_KEY in app.session_state
    kept = sum(len(batch) for batch in seen[:2])
    assert store.vector_cache.count() == kept
    run(app)  # the next run tells what the stopped one did
    [reason] = table(app, "upload_summary")["reason"]
    total = expected_chunks(LOG, "log.txt", DEFAULT)  # under the page's chunk settings
    assert (
        reason == f"stopped during embed: {kept} of {total} chunks embedded are kept; press Ingest to resume from there"
    )
    [info] = [i.value for i in app.info if "It was stopped" in i.value]
    assert "press **Ingest** to resume" in info

    monkeypatch.setattr(LocalEmbedder, "resumed", True, raising=False)
    seen.clear()
    app.button(key="upload_ingest").click()
    run(app)
    [note] = table(app, "upload_summary")["reason"]
    assert note == f"{kept} of {total} chunks were embedded by a stopped ingest and reused"
    document = store.find_document(KB, "log.txt")
    assert document is not None and document.chunk_count == total
    assert sum(len(batch) for batch in seen) == total - kept  # only the rest was embedded


def test_a_batch_faster_to_embed_again_than_to_keep_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"Entry {n}: the tide stood at {n} feet." for n in range(20)]
    monkeypatch.setattr(batches, "KEEP_AFTER_SECONDS_A_CHUNK", 60.0)
    fast, cache = Counting(), Listed()
    with batches.reusing(cache):
        fast.embed(texts)
    assert cache.kept == {} and fast.seen == texts

    class Slow(Counting):
        """Its first batch takes 125 ms a chunk (e5's take 40-135); the others are WordLlama's milliseconds."""

        def _embed_batch(self, batch: list[str]) -> np.ndarray:
            if not self.seen:
                time.sleep(0.125 * len(batch))
            return super()._embed_batch(batch)

    monkeypatch.setattr(batches, "KEEP_AFTER_SECONDS_A_CHUNK", 0.1)
    slow = Slow()
    with batches.reusing(cache):
        slow.embed(texts)
    assert set(cache.kept) == {batches.input_key(t) for t in texts[:BATCH]}


def test_an_ingest_looks_for_kept_vectors_only_where_some_may_be(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file's look in the vector cache was a round trip to a server busy with the writes (200 on the peers
    bench): an ingest that began with none of its embedder's vectors kept asks for none, until it keeps some
    itself, when a later file holding the same texts finds them."""
    looks: list[int] = []
    looked = threading.Event()
    real, real_drop = VectorCache.found, VectorCache.drop

    def counted(self: VectorCache, embedder: str, keys: Sequence[bytes]) -> dict:
        looks.append(len(keys))
        try:
            return real(self, embedder, keys)
        finally:
            looked.set()

    def drop_after_a_look(self: VectorCache, embedder: str, keys: Sequence[bytes]) -> int:
        # A stored document drops its kept vectors (its writer thread): twin-a's writer could do so before twin-b
        # looked (CI's timing), and twin-b then had nothing to find. Held until the look, 30 s at most.
        looked.wait(30.0)
        return real_drop(self, embedder, keys)

    monkeypatch.setattr(VectorCache, "found", counted)
    monkeypatch.setattr(VectorCache, "drop", drop_after_a_look)
    monkeypatch.setattr(batches, "KEEP_AFTER_SECONDS_A_CHUNK", 3600.0)  # a fast embedder: nothing is kept
    embedder = Counting()
    sources = [Source.upload(f"fast-{n}.txt", LOG + f" Log {n}.".encode()) for n in range(3)]
    assert all(r.ok for r in ingest_files(store, embedder, sources, "fast", SETTINGS))
    assert looks == []
    # Every batch kept (a slow embedder): the second file, holding the first's text, finds it all.
    monkeypatch.setattr(batches, "KEEP_AFTER_SECONDS_A_CHUNK", 0.0)
    embedder = Counting()
    twins = [Source.upload("twin-a.txt", LOG), Source.upload("twin-b.txt", LOG)]
    results = list(ingest_files(store, embedder, twins, "slow", SETTINGS))
    assert [r.status for r in results] == ["stored", "stored"] and len(looks) == 1
    chunks = results[0].chunks
    assert len(embedder.seen) == chunks  # the twin's chunks were found kept, not embedded again


def test_an_ingest_prunes_the_cache_once_at_its_end_and_drops_each_stored_documents_rows(
    store: Store, pg_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache is pruned to its bounds once an ingest is done, not after each document (two statements and a
    transaction each: 800 round trips of an ingest of 200 PDFs); each stored document's own rows still go as it is
    stored, and a row past its age goes at the ingest's end."""
    cache: VectorCache = store.vector_cache
    stale = embedder_key("test:stopped-long-ago", 3)
    cache.keep(stale, [b"\x01" * 32], np.ones((1, 3), dtype=np.float32))
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute("UPDATE embedding_cache SET used_at = now() - make_interval(days => 400)")
    prunes: list[int] = []
    real = VectorCache.prune

    def counted(self: VectorCache, *args: int, **kwargs: int) -> int:
        prunes.append(cache.count())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(VectorCache, "prune", counted)
    sources = [Source.upload(f"night-{n}.txt", LOG + f" Night log {n}.".encode()) for n in range(3)]
    assert [r.status for r in ingest_files(store, Counting(), sources, KB, SETTINGS)] == ["stored"] * 3
    assert prunes == [1]  # once, when only the stale row was left: every document's kept batches were dropped
    assert cache.count() == 0
