"""The next files parsed in a worker process while this one is chunked, embedded and written.

PyMuPDF holds the GIL while it reads a page (two threads parsing took as long as one), so the parse
of file n+1 overlaps the embedding of file n only in another process. On two cores the stages then
share the machine: this process chunks and embeds, the worker parses, the database indexes what the writer
threads send (`rag bench --only peers`). One worker (a second one cost more CPU than it saved: 18.1-19.7 s
against 16.9-17.0 for that bench's ingest), up to `READ_AHEAD_FILES` files ahead: what it sends back is the
parsed document (its pages' text). It once chunked it too, and set the pace: on that bench's 200 PDFs it was
busy 0.83-0.93 of a core throughout (the rest it waited for one) and this process waited ~5 s for it; with the
chunking here (~2.5 of the worker's 13 CPU s) the ingest alone took 0.79-0.80 s per CPU second of this process
and the worker against 0.84-0.86 (15.7-17.9 s against 17.0-17.7 s, alternating; the machine's speed drifted).

The worker is started for an `ingest_files` that has a second file to parse (`read_ahead`), and kept for the next
one for `KEPT_SECONDS` when it ends (terminated if it ended early: a stopped ingest does not wait for the parse of a
file it will not store). A worker that dies is replaced by parsing here, file by file, as before."""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag.chunking import ChunkSet, ChunkSettings
from rag.errors import RagError, failure_reason
from rag.process import no_main_script
from rag.text import Text

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from rag.documents import Document

log = logging.getLogger(__name__)

# (stage, fraction of the file done in [0, 1], a short message)
StageCallback = Callable[[str, float, str], None]

READ_AHEAD_BYTES = 32 << 20
"""A file larger than this is parsed when its turn comes, not ahead: its bytes would be held twice
(here and in the worker) beside the file being embedded."""

READ_AHEAD_FILES = 6
"""Files sent to the worker ahead of the one being embedded (fewer when they hold `READ_AHEAD_BYTES`
together). One kept the worker idle whenever this process waited for a write (and this one idle for the
worker after a long file): on the peers bench's 200 PDFs the embedding waited 4.7 s of 17.8 for the parse.
Three still left it waiting 0.6-0.7 s in all; six 0.4-0.5, and that ingest took 10.5-10.8 s against 10.7-11.1
(four runs each, alternating; ten: no faster)."""

READ_AHEAD_SUFFIXES = (".pdf", ".epub", ".xps", ".docx", ".pptx", ".xlsx", ".xls")
"""The kinds read ahead: those whose reading costs (MuPDF's pages, OCR, Office's XML). A text, Markdown, CSV
or HTML file is read in milliseconds, less than the trip to the worker and back."""

PROGRESS_SECONDS = 0.05
"""How often the pages read are told at most (the last one always is): a message a page, sent from the worker,
cost it 0.4 of its 8.6 CPU s on the peers bench's 6,172 pages (8.1-8.2 s so)."""

POLL_SECONDS = 0.2
"""How often a wait for the worker looks whether it is still alive."""
PARENT_POLL_SECONDS = 1.0
"""How often an idle worker looks whether the main process is still alive: one killed (the OOM killer, kill -9)
left its worker waiting for a file for ever, the main process's end of the pipe held open by the worker itself,
and a worker kept between ingests (`KEPT_SECONDS`) is idle most of its life."""


@dataclass(frozen=True)
class Chunked:
    """A file parsed and chunked: what the embed and store stages need of it."""

    page_count: int
    chunk_set: ChunkSet
    extras: list[dict[str, object]]
    """Each chunk's metadata from its document (where it is, OCR)."""


@dataclass(frozen=True)
class Refused:
    """A file the worker could not parse: the reason, as `failure_reason` gives it (a `Text` survives the
    trip), or the traceback of an error no stage foresaw (`unexpected`)."""

    reason: str
    unexpected: bool = False


def chunked_document(
    doc: Document, filename: str, settings: ChunkSettings, chunk_set: ChunkSet | None = None
) -> Chunked:
    """`doc` cut into chunks with `settings` (or the `chunk_set` a preview cut with them), each with its
    metadata; a document that leaves no chunk to embed is refused."""
    from rag import chunking, documents

    if chunk_set is None:
        # A str (not a TokenizedText): a long one is split from the tokens of a prefix (chunking.LongText).
        chunk_set = chunking.split(doc.text, settings, doc.pages_for_span)
    if not chunk_set.chunks:
        raise documents.DocumentError(
            filename, Text("no chunks: every piece was shorter than the minimum chunk length to embed")
        )
    return Chunked(doc.page_count, chunk_set, [doc.chunk_extras(c.pages, c.start, c.end) for c in chunk_set.chunks])


def parse(data: bytes, filename: str, notify: StageCallback | None = None) -> Document:
    """Parse `data`; `notify` hears each page read (a stage callback: "parse", fraction of the file in [0, 0.1],
    message). Raises what parsing raises."""
    from rag import documents

    tell = notify or (lambda stage, fraction, message: None)
    last = {"told": -PROGRESS_SECONDS, "done": -1.0}

    def page_read(done: int, total: int, what: str) -> None:
        # Told: the last page, what starts on a page before it is read (OCR of it: seconds), else twenty a second.
        now = time.monotonic()
        if done >= total or done == last["done"] or now - last["told"] >= PROGRESS_SECONDS:
            last["told"] = now
            tell("parse", 0.1 * done / max(total, 1), what)
        last["done"] = done

    return documents.load_bytes(data, filename, page_read)


def _serve(tasks: multiprocessing.Queue[Any], results: multiprocessing.Queue[Any], begun: Any) -> None:
    """The worker: each task (key, bytes, name) parsed in turn; its pages' progress and then its `Document` or
    `Refused` put on `results`, tagged with its key. A task the main process has begun itself (`begun`, the
    number of keys begun by either, past it) is skipped. None ends it."""
    import signal

    from rag.chunking import cl100k

    # Ctrl+C reaches the whole process group: the main process handles it (and ends this one), so this
    # one does not print a KeyboardInterrupt traceback of its own under the CLI's one-line message.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cl100k.stay_single()  # this process is the other core's work already: no workers of its own
    # The readers loaded before the first task is begun: meanwhile (~0.2 s) this process's first files are parsed
    # by the main process, which would otherwise wait for them.
    from rag.documents import loading, mupdf  # noqa: F401

    parent = multiprocessing.parent_process()
    while True:
        try:
            task = tasks.get(timeout=PARENT_POLL_SECONDS)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return  # the main process was killed: nothing will take what this parses, nor tell it to end
            continue
        if task is None:
            return
        key, data, filename = task
        if not _begin(begun, key):
            continue  # parsed there while this process started

        def progress(stage: str, fraction: float, message: str, key: int = key) -> None:
            results.put(("progress", key, stage, fraction, message))

        outcome: Document | Refused
        try:
            outcome = parse(data, filename, progress)
        except RagError as exc:
            outcome = Refused(failure_reason(exc))
        except Exception as exc:  # noqa: BLE001 - told to the main process, which fails this file alone
            outcome = Refused(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}", unexpected=True)
        del data
        results.put(("done", key, outcome))


def _begin(begun: Any, key: int) -> bool:
    """Whether the file of `key` is still to be begun, marking it begun (by the caller) if so. Both processes take
    the files in their order, so the keys begun are those below `begun.value`."""
    with begun.get_lock():
        if begun.value > key:
            return False
        begun.value = key + 1
        return True


class ReadAhead:
    """One worker process parsing the files given to it (`submit`), in order; `take` waits for one, or has it
    parsed here when the worker has not begun it (while the worker starts)."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")  # not fork: the app's threads could leave a lock held
        self._tasks: multiprocessing.Queue[Any] = context.Queue()
        self._results: multiprocessing.Queue[Any] = context.Queue()
        self._begun = context.Value("q", 0)
        self._process: BaseProcess = context.Process(
            target=_serve, args=(self._tasks, self._results, self._begun), name="rag-read-ahead", daemon=True
        )
        with no_main_script():  # under `streamlit run` the worker would run the app's page again
            self._process.start()
        self._next = 0
        self._taken = 0
        self._done: dict[int, Document | Refused] = {}
        self._dead = False
        self.parsed_here = 0
        """Files `take` left to be parsed here because the worker had not begun them."""

    def submit(self, data: bytes, filename: str) -> int | None:
        """Queue a file; its key for `take`, or None when the worker is gone (parse it here)."""
        if self._dead or not self._process.is_alive():
            self._dead = True
            return None
        key = self._next
        self._next += 1
        self._tasks.put((key, data, filename))
        return key

    def take(self, key: int, notify: StageCallback) -> Document | Refused | None:
        """The outcome of file `key`, waited for, the progress of its pages told to `notify` meanwhile;
        None when the worker died before it was done, or had not begun it (parse it here).

        Spawned, the worker takes ~0.35 s to start (an interpreter, PyMuPDF) while this process has read the
        first file and is done with it: the files it has not begun are parsed here meanwhile, not waited for
        (this process waited 0.15 s for the second file of the peers bench's ingest; two are parsed here now)."""
        self._taken += 1
        if key not in self._done and self._process.is_alive() and _begin(self._begun, key):
            self.parsed_here += 1
            return None
        while key not in self._done:
            try:
                message = self._results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if not self._process.is_alive():
                    self._dead = True
                    log.warning("the read-ahead worker stopped (exit code %s): parsing here", self._process.exitcode)
                    return None
                continue
            kind, got, *rest = message
            if kind == "done":
                self._done[got] = rest[0]
            elif got == key:
                stage, fraction, text = rest
                notify(stage, fraction, text)
        return self._done.pop(key)

    def close(self) -> None:
        """Done with for this ingest: kept for the next (`KEPT_SECONDS`) when every file it was given was taken and
        it is alive, else stopped."""
        if not (self.idle() and _keep(self)):
            self.stop()

    def idle(self) -> bool:
        """Whether it is alive with nothing given it left to take: what a next ingest may use."""
        return self._taken == self._next and not self._dead and self._process.is_alive()

    def stop(self) -> None:
        """Stop the worker: told to end when every file it was given was taken, else terminated (a stopped
        ingest does not wait for the parse of a file it will not store)."""
        if self._taken == self._next and not self._dead:
            self._tasks.put(None)
            self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=5)
        for channel in (self._tasks, self._results):
            channel.cancel_join_thread()  # what was left in a pipe of a terminated worker is not waited for
            channel.close()


KEPT_SECONDS = 120.0
"""How long the worker of an ingest that ended is kept for the next one: a new worker is an interpreter that imports
PyMuPDF (~0.35 s before it parses, 0.5-0.6 CPU s), and a folder's sync (the Upload page's) often follows another
within minutes (files uploaded and previewed are parsed already: no worker). Kept idle, it holds its memory (92 MB
RSS after the peers bench's 200 PDFs, 92 at its start) that long, then ends."""

_kept_lock = threading.Lock()
_kept: ReadAhead | None = None
_kept_timer: threading.Timer | None = None


def read_ahead() -> ReadAhead:
    """A worker for an ingest: the one the last ingest kept (`KEPT_SECONDS`) when it is still there, else a new one.
    Two ingests at once (two sessions of the app) have one each."""
    kept = _claim()
    if kept is not None:
        if kept.idle():
            return kept
        kept.stop()
    return ReadAhead()


def _claim(worker: ReadAhead | None = None) -> ReadAhead | None:
    """The kept worker (only if it is `worker`, when given), no longer kept and its timer cancelled; None if none."""
    global _kept, _kept_timer
    with _kept_lock:
        kept = _kept
        if kept is None or (worker is not None and kept is not worker):
            return None
        _kept = None
        if _kept_timer is not None:
            _kept_timer.cancel()
            _kept_timer = None
    return kept


def _keep(worker: ReadAhead) -> bool:
    """Keep `worker` for the next ingest, unless one is kept already."""
    global _kept, _kept_timer
    if KEPT_SECONDS <= 0:
        return False
    with _kept_lock:
        if _kept is not None:
            return False
        _kept = worker
        _kept_timer = threading.Timer(KEPT_SECONDS, drop_kept, args=(worker,))
        _kept_timer.daemon = True
        _kept_timer.start()
    return True


def drop_kept(worker: ReadAhead | None = None) -> None:
    """Stop the kept worker (only if it is `worker`, when given): once it was kept `KEPT_SECONDS`, and at exit."""
    kept = _claim(worker)
    if kept is not None:
        kept.stop()


atexit.register(drop_kept)  # told to end before multiprocessing terminates what is left at exit
