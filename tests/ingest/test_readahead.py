"""`ingest_files` reads the next PDF in a worker process while this one is embedded (rag.ingest.readahead): the
same chunks as when every file is read here, a file the worker cannot read fails alone with the reason it
would have had here, its pages' progress reaches the caller, and a worker that dies leaves the rest to be
read here. The worker is a real spawned process running the real parser."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from collections import defaultdict
from pathlib import Path

import psutil
import pytest

from rag.chunking import ChunkSettings
from rag.documents import Document
from rag.embeddings.local import LocalEmbedder
from rag.ingest import Source, ingest_bytes, ingest_files, pipeline, readahead
from rag.store import Store
from tests.conftest import PYTHON, ROOT
from tests.docgen import make_pdf

SETTINGS = ChunkSettings(chunk_size=60, min_chunk_size_chars=0)


def _pdf(topic: str, pages: int) -> bytes:
    return make_pdf(
        [
            f"{topic}, page {n}. The harbour master counted {n * 7} ships and wrote their flags down. "
            f"Each {topic.lower()} entry names the captain, the cargo and the berth."
            for n in range(1, pages + 1)
        ]
    )


FILES = {"a.pdf": _pdf("Grain", 3), "b.pdf": _pdf("Timber", 4), "c.pdf": _pdf("Coal", 2)}


def _stored(store: Store, kb: str) -> dict[str, list[tuple[str, object]]]:
    """Each document's chunks as stored: text and where they are."""
    out: dict[str, list[tuple[str, object]]] = defaultdict(list)
    for hit in store.iter_chunks(kb):
        out[hit.original_filename].append((hit.content, hit.metadata.get("location")))
    return {name: sorted(chunks, key=str) for name, chunks in out.items()}


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files sent to the read-ahead worker, by name."""
    names: list[str] = []
    submit = readahead.ReadAhead.submit

    def counting(self: readahead.ReadAhead, data: bytes, filename: str) -> int | None:
        names.append(filename)
        return submit(self, data, filename)

    monkeypatch.setattr(readahead.ReadAhead, "submit", counting)
    return names


def test_pdfs_read_ahead_are_stored_as_when_read_here(
    store: Store, submitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    heard: dict[str, list[tuple[str, str]]] = defaultdict(list)

    def on_stage(name: str) -> pipeline.StageCallback:
        return lambda stage, fraction, message: heard[name].append((stage, message))

    sources = [Source.upload(name, data) for name, data in FILES.items()]
    ahead = list(ingest_files(store, LocalEmbedder(), sources, "ahead", SETTINGS, on_stage=on_stage))
    assert [(r.filename, r.status, r.pages) for r in ahead] == [
        ("a.pdf", "stored", 3),
        ("b.pdf", "stored", 4),
        ("c.pdf", "stored", 2),
    ]
    assert submitted == ["b.pdf", "c.pdf"]  # the first is read here while the worker starts
    # the worker's pages reach the caller, then the chunking and the rest of the stages
    assert ("parse", "page 4 of 4") in heard["b.pdf"] and ("chunk", "4 pages") in heard["b.pdf"]
    assert heard["a.pdf"][heard["a.pdf"].index(("parse", "page 3 of 3")) + 1] == ("chunk", "3 pages")  # read here
    assert [stage for stage, _ in heard["c.pdf"]][-1] == "store"

    monkeypatch.setattr(pipeline, "READ_AHEAD_SUFFIXES", ())  # nothing read ahead
    here = list(ingest_files(store, LocalEmbedder(), sources, "here", SETTINGS))
    assert [r.chunks for r in here] == [r.chunks for r in ahead]
    assert submitted == ["b.pdf", "c.pdf"]
    assert _stored(store, "ahead") == _stored(store, "here")


def test_the_worker_is_given_several_files_ahead_and_results_stay_in_order(store: Store, submitted: list[str]) -> None:
    """With one file ahead the worker idled whenever the embedding waited for a write: it is given
    `READ_AHEAD_FILES` files before the first is embedded."""
    ahead = readahead.READ_AHEAD_FILES
    names = [f"log-{i}.pdf" for i in range(ahead + 3)]
    seen_at_embed: dict[str, list[str]] = {}

    def on_stage(name: str) -> pipeline.StageCallback:
        def heard(stage: str, fraction: float, message: str) -> None:
            if stage == "embed" and name not in seen_at_embed:
                seen_at_embed[name] = list(submitted)

        return heard

    sources = [Source.upload(name, _pdf(f"Log {i}", 2 + i % 3)) for i, name in enumerate(names)]
    results = list(ingest_files(store, LocalEmbedder(), sources, "deep", SETTINGS, on_stage=on_stage))
    assert [(r.filename, r.status) for r in results] == [(name, "stored") for name in names]
    assert ahead > 1
    assert seen_at_embed["log-0.pdf"] == names[1 : 1 + ahead]  # read here, while the next ones are sent there
    assert seen_at_embed["log-1.pdf"] == names[1 : 2 + ahead]
    assert submitted == names[1:]


def test_the_worker_parses_and_this_process_chunks(
    store: Store, submitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker set the pace of an ingest while it also chunked (bench --only peers: busy 0.83-0.93 of a core,
    this process waiting ~5 s for it): it sends the parsed document back, and the chunking runs here, where the
    embedding waited for it."""
    from rag import chunking

    split, cut = chunking.split, []

    def counted(text: str, *args: object, **kwargs: object) -> chunking.ChunkSet:
        cut.append(text[:12])
        return split(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(chunking, "split", counted)
    sources = [Source.upload(name, data) for name, data in FILES.items()]
    results = list(ingest_files(store, LocalEmbedder(), sources, "here", SETTINGS))
    assert [r.status for r in results] == ["stored"] * 3 and submitted == ["b.pdf", "c.pdf"]
    assert cut == ["Grain, page ", "Timber, page", "Coal, page 1"]


def test_a_pdf_the_worker_cannot_read_fails_alone_with_the_reason_it_has_here(
    store: Store, submitted: list[str]
) -> None:
    broken = b"%PDF-1.7\n" + b"\x00garbage" * 200
    sources = [Source.upload("a.pdf", FILES["a.pdf"]), Source.upload("broken.pdf", broken)]
    sources.append(Source.upload("c.pdf", FILES["c.pdf"]))
    results = list(ingest_files(store, LocalEmbedder(), sources, "docs", SETTINGS))
    assert [r.status for r in results] == ["stored", "failed", "stored"]
    assert submitted == ["broken.pdf", "c.pdf"]
    here = ingest_bytes(store, LocalEmbedder(), broken, "broken.pdf", "docs", SETTINGS)
    assert here.status == "failed" and results[1].reason == here.reason
    assert "broken.pdf" not in {d.original_filename for d in store.list_documents("docs")}


def test_a_worker_that_dies_leaves_the_rest_to_be_read_here(
    store: Store, submitted: list[str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    submit = readahead.ReadAhead.submit

    def then_killed(self: readahead.ReadAhead, data: bytes, filename: str) -> int | None:
        key = submit(self, data, filename)
        self._process.kill()  # the OOM killer, say, before the worker read its first file
        self._process.join()
        return key

    monkeypatch.setattr(readahead.ReadAhead, "submit", then_killed)
    sources = [Source.upload(name, data) for name, data in FILES.items()]
    results = list(ingest_files(store, LocalEmbedder(), sources, "docs", SETTINGS))
    assert [(r.status, r.pages) for r in results] == [("stored", 3), ("stored", 4), ("stored", 2)]
    assert "the read-ahead worker stopped" in caplog.text  # b.pdf, given to it, was read here
    assert len({r.chunks for r in results}) > 1 and all(r.chunks for r in results)


def test_ctrl_c_ends_the_worker_with_the_ingest_and_prints_no_traceback_of_it(
    tmp_path: Path, cli_env: dict[str, str], store: Store
) -> None:
    """Ctrl+C reaches the terminal's whole process group, the read-ahead worker too: the CLI's own line and
    exit code only, and no worker left behind. A process of its own: the signal and the processes are the point."""
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for i in range(12):
        (folder / f"log-{i:02d}.pdf").write_bytes(_pdf(f"Log {i}", 6))
    proc = subprocess.Popen(
        [PYTHON, "-m", "rag", "ingest", str(folder), "--kb", "logs", "--chunk-size", "60"],
        cwd=ROOT,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a shell gives a command
        # Ctrl+C reaches a command in the terminal's foreground: a test suite started in the background of a shell
        # without job control (`make test &`) runs with SIGINT ignored, which its children inherit (this test then
        # saw every file stored and exit code 0).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    children = psutil.Process(proc.pid).children(recursive=True)
    commands = [" ".join(child.cmdline()) for child in children]
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert first.startswith("log-00.pdf: stored"), first + err
    assert any("spawn_main" in command for command in commands), commands  # the worker was running
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    _, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, commands


def test_a_worker_whose_main_process_was_killed_ends(cli_env: dict[str, str]) -> None:
    """A main process killed outright (the OOM killer, kill -9) runs no clean-up: its worker, waiting for a file
    on a pipe it holds open itself, waited for ever; a worker kept between ingests is idle most of its life."""
    code = textwrap.dedent("""
        import time
        from rag.ingest import readahead

        worker = readahead.read_ahead()
        key = worker.submit(b"Harbour log. The keeper lit the lamp at dusk.", "log.txt")
        deadline = time.monotonic() + 60
        while worker._begun.value < 1 and time.monotonic() < deadline:  # started: waits for a file once it is done
            time.sleep(0.01)
        assert worker.take(key, lambda *told: None) is not None
        print(worker._process.pid, flush=True)
        time.sleep(120)
        """)
    proc = subprocess.Popen([PYTHON, "-c", code], cwd=ROOT, env=cli_env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    worker = psutil.Process(int(proc.stdout.readline()))
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if worker.status() == psutil.STATUS_ZOMBIE:  # ended; its new parent may not reap it at once
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    else:
        worker.kill()
        raise AssertionError("the worker outlived its killed main process")


def test_pages_read_are_told_at_most_twenty_a_second_but_the_last_and_an_ocr_start_always(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A message a page cost the worker 5 % of its time on a bench of 6,172 pages: they are thinned out, but
    the page a slow OCR starts on and the last page are always told."""
    from rag import documents

    real = documents.load_bytes

    def load(data: bytes, filename: str, progress):
        for done in range(40):
            progress(done, 40, f"page {done} of 40")
            if done == 20:
                progress(20, 40, "OCR of page 21 of 40")
        progress(40, 40, "page 40 of 40")
        return real(data, filename)

    monkeypatch.setattr(documents, "load_bytes", load)
    heard: list[str] = []
    readahead.parse(_pdf("Ships", 2), "s.pdf", lambda stage, f, message: heard.append(message))
    assert heard[0] == "page 0 of 40" and "OCR of page 21 of 40" in heard and heard[-1] == "page 40 of 40"
    assert len(heard) < 10  # 42 page messages within milliseconds


def test_files_the_starting_worker_has_not_begun_are_parsed_here_and_skipped_there() -> None:
    """The spawned worker takes ~0.35 s to start: the main process waited for the second file meanwhile (0.15 s
    at the start of the peers bench's ingest). A file it has not begun is left to be parsed here (None, as for a
    dead worker), and the worker, once started, skips it and parses the next."""
    worker = readahead.ReadAhead()
    try:
        first = worker.submit(FILES["a.pdf"], "a.pdf")
        second = worker.submit(FILES["b.pdf"], "b.pdf")
        assert first is not None and second is not None
        assert worker.take(first, lambda *told: None) is None and worker.parsed_here == 1  # still starting
        deadline = time.monotonic() + 30
        while worker._begun.value < 2 and time.monotonic() < deadline:  # started: it begins the second
            time.sleep(0.01)
        heard: list[str] = []
        doc = worker.take(second, lambda stage, fraction, message: heard.append(message))
        assert isinstance(doc, Document) and doc.page_count == 4 and "page 4 of 4" in heard
        assert worker.parsed_here == 1
        assert first not in worker._done  # never parsed there
    finally:
        worker.stop()
    assert not worker._process.is_alive() and worker._process.exitcode == 0  # told to end, not terminated


def _until_begun(worker: readahead.ReadAhead, files: int) -> None:
    deadline = time.monotonic() + 30
    while worker._begun.value < files and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_worker_is_kept_for_the_next_ingest_and_ends_once_kept_long_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker of an ingest that took every file it was given is kept for the next ingest (a new one is an
    interpreter importing PyMuPDF: ~0.35 s before it parses), which goes on with it, and told to end once it was kept
    `KEPT_SECONDS`; one left with a file not taken (a stopped ingest) is not kept."""
    monkeypatch.setattr(readahead, "KEPT_SECONDS", 1.0)
    worker = readahead.read_ahead()
    try:
        key = worker.submit(FILES["a.pdf"], "a.pdf")
        _until_begun(worker, 1)  # there, not here
        assert isinstance(worker.take(key, lambda *told: None), Document)
        worker.close()
        pid = worker._process.pid
        assert worker._process.is_alive()
        again = readahead.read_ahead()
        assert again is worker  # kept: no new process
        key = again.submit(FILES["b.pdf"], "b.pdf")
        _until_begun(again, 2)
        doc = again.take(key, lambda *told: None)
        assert isinstance(doc, Document) and doc.page_count == 4 and again._process.pid == pid
        again.close()
        deadline = time.monotonic() + 30
        while again._process.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert again._process.exitcode == 0  # told to end once kept a second, not terminated
        assert readahead.read_ahead() is not again
    finally:
        readahead.drop_kept()
    stopped = readahead.ReadAhead()
    stopped.submit(FILES["a.pdf"], "a.pdf")
    stopped.close()  # its file not taken: a stopped ingest's
    assert not stopped._process.is_alive()
    fresh = readahead.read_ahead()
    try:
        assert fresh is not stopped
    finally:
        fresh.stop()
