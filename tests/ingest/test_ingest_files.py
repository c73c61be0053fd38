"""`ingest_files`, the one ingest path (`rag ingest`, `rag sync` and the Upload page): an unchanged file is
told before it is parsed, a previewed file is not parsed again, one file's surprise fails it alone, and
a stop leaves every file whole or absent, which `results_after_stop` tells.

The parser and the OCR engine are the real ones; the spies only count their calls."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rag import chunking, documents, ingest
from rag.chunking import ChunkSettings
from rag.documents import ocr
from rag.embeddings.local import LocalEmbedder
from rag.ingest import Source, ingest_bytes, ingest_files, results_after_stop
from rag.store import graphs
from tests.docgen import make_scan_pdf
from ui.zh import ZH

SETTINGS = ChunkSettings(chunk_size=120, min_chunk_size_chars=0)
SCAN = make_scan_pdf(
    [
        "Margaret Elizabeth Thornton renewed the lease for the Antwerp depot in 2022.",
        "The depot holds forty pallets of Falcon X spare parts and two forklifts.",
    ]
)
LOG = ("Harbour log. The keeper lit the lamp at dusk and wrote the weather down. " * 60).encode()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each file was parsed (`parse:NAME`) and how many pages were OCR'd (`ocr`), counted around
    the real functions."""
    counted: Counter[str] = Counter()
    load_bytes, read_image = documents.load_bytes, ocr.read_image

    def counting_load(data: bytes, filename: str, progress=None):
        counted[f"parse:{filename}"] += 1
        return load_bytes(data, filename, progress)

    def counting_ocr(png: bytes, prefer=None):
        counted["ocr"] += 1
        return read_image(png, prefer)

    monkeypatch.setattr(documents, "load_bytes", counting_load)
    monkeypatch.setattr(ocr, "read_image", counting_ocr)
    return counted


def test_an_unchanged_scan_is_recognised_before_it_is_parsed_or_ocrd(store, calls: Counter[str]) -> None:
    first = ingest_bytes(store, LocalEmbedder(), SCAN, "lease.pdf", "scans", SETTINGS)
    assert first.status == "stored" and first.pages == 2
    assert calls == {"parse:lease.pdf": 1, "ocr": 2}  # the real OCR read both pages

    heard: list[str] = []
    again = ingest_bytes(
        store,
        LocalEmbedder(),
        SCAN,
        "lease.pdf",
        "scans",
        SETTINGS,
        on_stage=lambda stage, fraction, message: heard.append(stage),
    )
    assert (again.status, again.chunks, again.pages) == ("unchanged", first.chunks, 2)
    assert calls == {"parse:lease.pdf": 1, "ocr": 2}  # not parsed, not OCR'd again
    assert heard == ["store"]

    # The same through the pipeline, from the bytes and from the file.
    [from_bytes] = ingest_files(store, LocalEmbedder(), [Source.upload("lease.pdf", SCAN)], "scans", SETTINGS)
    assert from_bytes.status == "unchanged"
    assert calls == {"parse:lease.pdf": 1, "ocr": 2}


def test_an_unchanged_file_on_disk_is_not_parsed_again(store, calls: Counter[str], tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_bytes(LOG)

    def statuses(settings: ChunkSettings) -> list[str]:
        return [r.status for r in ingest.ingest_paths(store, LocalEmbedder(), [tmp_path / "log.txt"], "logs", settings)]

    assert statuses(SETTINGS) == ["stored"]
    assert statuses(SETTINGS) == ["unchanged"]
    assert calls["parse:log.txt"] == 1
    # Other settings cut it again: then it is parsed.
    assert statuses(dataclasses.replace(SETTINGS, chunk_size=200)) == ["replaced"]
    assert calls["parse:log.txt"] == 2


def test_a_previewed_scan_is_parsed_and_ocrd_once_and_stored_as_previewed(store, calls: Counter[str]) -> None:
    preview = ingest.prepare(SCAN, "lease.pdf", SETTINGS)  # what the Upload page shows
    assert calls == {"parse:lease.pdf": 1, "ocr": 2}

    [result] = ingest_files(store, LocalEmbedder(), [Source.upload("lease.pdf", SCAN, preview)], "scans", SETTINGS)

    assert (result.status, result.pages, result.chunks) == ("stored", 2, len(preview.chunk_set.chunks))
    assert calls == {"parse:lease.pdf": 1, "ocr": 2}  # the preview's parse was the only one
    stored = [c.content for c in store.iter_chunks("scans")]
    assert stored == [c.text for c in preview.chunk_set.chunks]
    assert "Antwerp depot" in stored[0]
    document = store.find_document("scans", "lease.pdf")
    assert (document.sha256, document.page_count) == (documents.sha256_hex(SCAN), 2)


def test_a_preview_cut_with_other_settings_is_cut_again_but_not_parsed_again(store, calls: Counter[str]) -> None:
    preview = ingest.prepare(LOG, "log.txt", ChunkSettings(chunk_size=400))
    [result] = ingest_files(store, LocalEmbedder(), [Source.upload("log.txt", LOG, preview)], "logs", SETTINGS)
    assert result.chunks == len(chunking.split(preview.document.text, SETTINGS).chunks) != len(preview.chunk_set.chunks)
    assert calls["parse:log.txt"] == 1


def test_a_source_must_have_its_bytes_and_be_parsed_from_them() -> None:
    preview = ingest.prepare(LOG, "log.txt", SETTINGS)
    with pytest.raises(ValueError, match=r"^'log.txt': the parsed document was read from other bytes \(sha256 "):
        Source.upload("log.txt", LOG + b" Edited.", preview)
    with pytest.raises(ValueError, match="needs its bytes or its path"):
        Source("log.txt")
    with pytest.raises(ValueError, match="needs the bytes it was parsed from"):
        Source("log.txt", path=Path("log.txt"), parsed=preview)


def test_a_file_that_fails_unexpectedly_fails_alone(store, monkeypatch: pytest.MonkeyPatch) -> None:
    load_bytes = documents.load_bytes

    def buggy(data: bytes, filename: str, progress=None):
        if filename == "b.txt":
            raise KeyError("page")  # what a parser's bug looks like: not a RagError
        return load_bytes(data, filename, progress)

    monkeypatch.setattr(documents, "load_bytes", buggy)
    sources = [Source.upload(name, LOG + name.encode()) for name in ("a.txt", "b.txt", "c.txt")]
    results = list(ingest_files(store, LocalEmbedder(), sources, "logs", SETTINGS))
    assert [r.status for r in results] == ["stored", "failed", "stored"]
    assert results[1].line() == "b.txt: failed: unexpected error: KeyError: 'page'"
    assert results[1].reason.template in ZH  # the Upload page says it in Chinese too
    assert [d.original_filename for d in store.list_documents("logs")] == ["a.txt", "c.txt"]


class Stopped(BaseException):
    """Stands for Streamlit's RerunException, which a click on Stop raises in the page's next callback."""


def test_a_stop_finishes_the_write_in_flight_and_results_after_stop_says_what_is_stored(store) -> None:
    sources = [Source.upload(name, LOG + name.encode()) for name in ("a.txt", "b.txt", "c.txt")]
    done: list[ingest.IngestResult] = []
    reached: dict[str, str] = {}

    def on_stage(name: str):  # what the Upload page does: note the stage, and stop in b's embedding
        def heard(stage: str, fraction: float, message: str) -> None:
            reached[name] = stage
            if name == "b.txt" and stage == "embed":
                raise Stopped

        return heard

    with pytest.raises(Stopped):
        for result in ingest_files(store, LocalEmbedder(), sources, "logs", SETTINGS, on_stage=on_stage):
            done.append(result)

    # a.txt was being written while b.txt was embedded: its write was finished, not cut, before the stop
    # came out; its result was not given yet.
    assert done == []
    assert [d.original_filename for d in store.list_documents("logs")] == ["a.txt"]
    results = results_after_stop(store, "logs", SETTINGS, sources, done, reached)
    assert [r.line() for r in results] == [
        f"a.txt: stored (1 page, {store.find_document('logs', 'a.txt').chunk_count} chunks)",
        "b.txt: stopped: stopped during embed: nothing of it was stored",
        "c.txt: stopped: not started",
    ]


def test_a_slow_write_holds_up_neither_the_next_files_nor_the_order_of_the_results(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write that moves the keyword index's pending list took ~2 s while the ingest waited for it with a
    core idle: the next files are embedded and written by the other writer meanwhile, their results given
    after the slow one's."""
    import threading

    write_document = type(store).write_document
    third_written = threading.Event()
    finished: list[str] = []

    def write(self, **kwargs):
        if kwargs["filename"] == "log-0.txt":
            third_written.wait(20)  # as long as the files after it need (never, had they waited for it)
        result = write_document(self, **kwargs)
        finished.append(kwargs["filename"])
        if kwargs["filename"] == "log-3.txt":
            third_written.set()
        return result

    monkeypatch.setattr(type(store), "write_document", write)
    names = [f"log-{i}.txt" for i in range(6)]
    sources = [Source.upload(name, LOG + name.encode()) for name in names]
    results = list(ingest_files(store, LocalEmbedder(), sources, "logs", SETTINGS))
    assert [(r.filename, r.status) for r in results] == [(name, "stored") for name in names]
    assert third_written.is_set() and finished.index("log-3.txt") < finished.index("log-0.txt")


def test_two_files_are_written_at_once_and_the_results_come_in_order(store, monkeypatch: pytest.MonkeyPatch) -> None:
    """`WRITERS` transactions at once (the database's share of an ingest is one server process per
    connection), never more, each file whole; the results in the order of the files."""
    import threading
    import time

    from rag.ingest import pipeline

    write_document = type(store).write_document
    lock, in_flight, most = threading.Lock(), [0], [0]

    def slow_write(self, **kwargs):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            time.sleep(0.3)
            return write_document(self, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(type(store), "write_document", slow_write)
    names = [f"log-{i}.txt" for i in range(5)]
    sources = [Source.upload(name, LOG + name.encode()) for name in names]
    results = list(ingest_files(store, LocalEmbedder(), sources, "logs", SETTINGS))
    assert [(r.filename, r.status) for r in results] == [(name, "stored") for name in names]
    assert most[0] == pipeline.WRITERS == 2
    assert sorted(d.original_filename for d in store.list_documents("logs")) == names


def test_an_ingest_that_takes_a_knowledge_base_past_exact_search_builds_its_graph_after_it_in_the_background(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No chunk goes into a graph row by row (rag.store.graphs): the base's graph is built once, over all its
    rows, after the ingest that took it past graph_rows, in the background, and the caller is told (the Upload
    page says so with the results). A build that cannot start (another holds the base's build lock) holds up
    neither the ingest nor a search, which reads every row meanwhile; `close` waits for it. The next ingest
    builds none: its rows went into the graph as they came."""
    monkeypatch.setattr(graphs, "graph_rows", lambda dimension: 12)
    told: list[tuple[str, int]] = []
    embedder = LocalEmbedder()

    def run(names: list[str]) -> list[ingest.IngestResult]:
        sources = [Source.upload(name, LOG + name.encode()) for name in names]
        return list(
            ingest_files(store, embedder, sources, "harbour", SETTINGS, on_index=lambda *told_: told.append(told_))
        )

    def graphed() -> bool:
        with store.connection() as conn:
            return graphs.bases(conn, ["harbour"], embedder.dimension)[0][0].graphed

    first = run(["a.txt"])
    assert first[0].status == "stored" and 0 < first[0].chunks < 12 and told == []
    assert not graphed()
    second: list[ingest.IngestResult] = []
    with store.connection() as holder:
        key = holder.execute("SELECT hashtext('harbour')").fetchone()[0]
        holder.execute("SELECT pg_advisory_lock(%s, %s)", (graphs.BUILD_LOCK, key))
        try:
            ingesting = threading.Thread(target=lambda: second.extend(run(["b.txt", "c.txt"])))
            ingesting.start()
            ingesting.join(timeout=60)
            done = not ingesting.is_alive()
            building = graphed()
            hits = store.search(embedder.embed_queries(["keeper lit the lamp"])[0], ["harbour"], top_k=3)
        finally:
            holder.execute("SELECT pg_advisory_unlock(%s, %s)", (graphs.BUILD_LOCK, key))
    ingesting.join(timeout=60)
    assert done, "the ingest waited for the graph"
    chunks = sum(r.chunks for r in first + second)
    assert told == [("harbour", chunks)] and not building and len(hits) == 3
    store.wait_for_graphs()
    assert graphed()
    run(["d.txt"])
    assert told == [("harbour", chunks)]


def test_closing_the_store_waits_for_the_graph_an_ingest_left_being_built(
    store, pg_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rag ingest` closes its store at exit, which stops the embedded server: the graph its ingest left being
    built (here held up for a second by another holder of the base's build lock) is waited for, not cut off."""
    import psycopg

    from rag.store import Store

    monkeypatch.setattr(graphs, "graph_rows", lambda dimension: 12)
    sources = [Source.upload(name, LOG + name.encode()) for name in ("a.txt", "b.txt")]
    with psycopg.connect(pg_uri, autocommit=True) as holder:
        key = holder.execute("SELECT hashtext('harbour')").fetchone()[0]
        holder.execute("SELECT pg_advisory_lock(%s, %s)", (graphs.BUILD_LOCK, key))
        results = list(ingest_files(store, LocalEmbedder(), sources, "harbour", SETTINGS))
        release = threading.Timer(
            1.0, lambda: holder.execute("SELECT pg_advisory_unlock(%s, %s)", (graphs.BUILD_LOCK, key))
        )
        release.start()
        store.close()
        release.join()
    assert [r.status for r in results] == ["stored", "stored"]
    with Store(pg_uri) as after, after.connection() as conn:
        assert graphs.bases(conn, ["harbour"], LocalEmbedder().dimension)[0][0].graphed


def test_an_ingest_is_done_before_the_merge_of_its_bm25_counts_which_follows_it(store) -> None:
    """The BM25 counts an ingest leaves pending are merged in the background once it is done (searches read them
    pending, exact), and the keyword index's pending list after them: a merge that cannot start (another holds the
    merges' lock) holds up neither the ingest nor a search, and `close` waits for it."""
    from rag.store.bm25_stats import LOCK_NAMESPACE

    sources = [Source.upload(name, LOG + name.encode()) for name in ("a.txt", "b.txt")]
    results: list[ingest.IngestResult] = []
    with store.connection() as holder:
        holder.execute("SELECT pg_advisory_lock(%s, 0)", (LOCK_NAMESPACE,))
        try:
            ingesting = threading.Thread(
                target=lambda: results.extend(ingest_files(store, LocalEmbedder(), sources, "harbour", SETTINGS))
            )
            ingesting.start()
            ingesting.join(timeout=60)
            done = not ingesting.is_alive()
            with store.connection() as conn:
                pending = conn.execute("SELECT count(*) FROM bm25_pending").fetchone()[0]
            hits = store.keyword_search("keeper lit the lamp", ["harbour"], top_k=2)
        finally:
            holder.execute("SELECT pg_advisory_unlock(%s, 0)", (LOCK_NAMESPACE,))
    ingesting.join(timeout=60)
    assert done, "the ingest waited for the merge"
    assert [r.status for r in results] == ["stored", "stored"] and pending == 2
    assert len(hits) == 2 and all(h.score > 0 for h in hits)
    merging = store._merging
    assert merging is not None
    merging.join(timeout=60)
    with store.connection() as conn:
        assert conn.execute("SELECT count(*) FROM bm25_pending").fetchone()[0] == 0
    merged = store.keyword_search("keeper lit the lamp", ["harbour"], top_k=2)
    assert [(h.content, round(h.score, 9)) for h in merged] == [(h.content, round(h.score, 9)) for h in hits]
    # The keyword index's pending list, which held the ingest's terms, was merged into the index with them.
    with store.connection() as conn:
        assert conn.execute("SELECT gin_clean_pending_list('vector_store_fts_idx'::regclass)").fetchone()[0] == 0


def test_an_ingest_asks_the_knowledge_bases_facts_once_and_each_files_document_once(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its embedder and whether the vector cache holds any of this embedder's vectors were asked for every file,
    and a read-ahead file's stored document twice (to tell whether to parse it, and at its turn): round trips
    that held the thread that chunks and embeds (10.8 s against 11.2 s on the peers bench)."""
    from tests.docgen import make_pdf

    asked: Counter[str] = Counter()
    looked_up: list[str] = []
    for name in ("check_embedder", "find_document", "find_documents"):
        real = getattr(store, name)

        def counting(*args: object, _real: Any = real, _name: str = name) -> Any:
            asked[_name] += 1
            asked[f"{_name} in {args[0]!r}"] += 1
            if _name.startswith("find_document"):
                looked_up.extend([args[1]] if isinstance(args[1], str) else args[1])  # type: ignore[list-item]
            return _real(*args)

        monkeypatch.setattr(store, name, counting)
    from rag.store.vector_cache import VectorCache

    holds = VectorCache.holds
    monkeypatch.setattr(VectorCache, "holds", lambda self, name: asked.update(["holds"]) or holds(self, name))
    pdfs = [Source.upload(f"note-{i}.pdf", make_pdf([f"Note {i}. The depot {i} opens at dawn."])) for i in range(6)]

    results = list(ingest_files(store, LocalEmbedder(), pdfs, "notes", SETTINGS))

    assert [r.status for r in results] == ["stored"] * 6
    assert asked == {
        "check_embedder": 1,
        "check_embedder in 'notes'": 1,
        "holds": 1,
        # The first file's at its turn; the others', read ahead, in one look (each file's document once).
        "find_document": 1,
        "find_document in 'notes'": 1,
        "find_documents": 1,
        "find_documents in 'notes'": 1,
    }
    assert sorted(looked_up) == [p.name for p in pdfs]
    # Again: all unchanged, told by the same looks.
    asked.clear()
    assert [r.status for r in ingest_files(store, LocalEmbedder(), pdfs, "notes", SETTINGS)] == ["unchanged"] * 6
    assert asked["find_document"] + asked["find_documents"] == 2 and asked["check_embedder"] == 1
    # The name as typed with spaces around it is the same knowledge base, looked up as such (a text file is not
    # read ahead: its turn asks).
    log = [Source.upload("log.txt", LOG)]
    assert [r.status for r in ingest_files(store, LocalEmbedder(), log, "notes", SETTINGS)] == ["stored"]
    asked.clear()
    assert [r.status for r in ingest_files(store, LocalEmbedder(), log, " notes ", SETTINGS)] == ["unchanged"]
    assert asked["find_document in 'notes'"] == 1 and asked["check_embedder in 'notes'"] == 1
