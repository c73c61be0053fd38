"""File -> pages -> chunks -> embeddings -> rows, one document per transaction.

`ingest_files` is the one ingest path: `rag ingest` (through `ingest_paths`), `rag sync` and the Upload
page (its uploads as `Source`s holding what the preview parsed) all run it; `ingest_bytes` is the same
stages for one file, without the writer thread."""

from __future__ import annotations

import functools
import logging
import os
import queue
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag import chunking, documents, heap
from rag.chunking import ChunkSet, ChunkSettings
from rag.errors import RagError, failure_reason
from rag.ingest.readahead import (
    READ_AHEAD_BYTES,
    READ_AHEAD_FILES,
    READ_AHEAD_SUFFIXES,
    ReadAhead,
    Refused,
    StageCallback,
    chunked_document,
    parse,
    read_ahead,
)
from rag.ingest.resume import Kept, Resume, kept_after_stop, left_to_embed, prune_vector_cache
from rag.text import Text, chunks_text, pages_text

if TYPE_CHECKING:  # the store (psycopg) and the embedders are passed in, never built here
    from rag.embeddings import CancelSignal, Embedder
    from rag.settings import Settings
    from rag.store import Store, StoredDocument

log = logging.getLogger(__name__)

STAGES = ("parse", "chunk", "embed", "store")
STAGE_WORDS = {"parse": Text("parse"), "chunk": Text("chunk"), "embed": Text("embed"), "store": Text("store")}
"""The stages as words shown to a user (the Chinese of these is the Upload page's, in ui/zh.py)."""
STATUS_WORDS = {
    "stored": Text("stored"),
    "replaced": Text("replaced"),
    "unchanged": Text("unchanged"),
    "failed": Text("failed"),
    "stopped": Text("stopped"),
}
"""An `IngestResult.status` as a word shown to a user."""


def status_word(status: str) -> str:
    return STATUS_WORDS.get(status, status)


# (chunks about to be embedded, those kept from a stopped ingest left out, the seconds that should take:
# None when not worth estimating)
PlanCallback = Callable[[int, "float | None"], None]
IndexCallback = Callable[[str, int], None]
"""Told a knowledge base's name and chunks when its vector index starts being built in the background
(`ingest_files`)."""


@dataclass(frozen=True)
class IngestResult:
    filename: str
    status: str
    """`stored`, `replaced`, `unchanged`, `failed`, or `stopped` (by the user: nothing of it in the
    knowledge base, the vectors of the chunks it embedded kept for the next ingest, rag.ingest.resume)."""
    chunks: int = 0
    pages: int = 0
    reason: str = ""
    """Why it failed or stopped; for a file stored, a note (how many of its chunks a stopped ingest had
    embedded and this one reused)."""

    @property
    def ok(self) -> bool:
        """Whether the file is in the knowledge base as uploaded."""
        return self.status in ("stored", "replaced", "unchanged")

    def line(self) -> str:
        status = status_word(self.status)
        if self.status in ("failed", "stopped"):
            return Text("{filename}: {status}: {reason}", filename=self.filename, status=status, reason=self.reason)
        if self.status == "unchanged":
            return Text("{filename}: {status}", filename=self.filename, status=status)
        if self.reason:
            return Text(
                "{filename}: {status} ({pages}, {chunks}; {note})",
                filename=self.filename,
                status=status,
                pages=pages_text(self.pages),
                chunks=chunks_text(self.chunks),
                note=self.reason,
            )
        return Text(
            "{filename}: {status} ({pages}, {chunks})",
            filename=self.filename,
            status=status,
            pages=pages_text(self.pages),
            chunks=chunks_text(self.chunks),
        )


@dataclass(frozen=True)
class Prepared:
    """A parsed and chunked file, ready to embed: what the Upload page previews."""

    document: documents.Document
    chunk_set: ChunkSet
    data: bytes
    sha256: str


@dataclass(frozen=True)
class Loaded:
    """A parsed and tokenised file: what stays the same while chunk settings change."""

    document: documents.Document
    tokenized: chunking.TokenizedText | chunking.LongText
    """A long text's is a LongText: the tokens of the prefix the windows need, not all of them."""
    sha256: str


def load(data: bytes, filename: str, progress: documents.Progress | None = None) -> Loaded:
    """Parse and tokenise; `progress` hears each page of a PDF (OCR takes seconds a page)."""
    doc = documents.load_bytes(data, filename, progress)
    return Loaded(doc, chunking.tokens_for_split(doc.text), documents.sha256_hex(data))


def prepare(data: bytes, filename: str, settings: ChunkSettings, loaded: Loaded | None = None) -> Prepared:
    """Chunk a file for preview; pass `loaded` to re-chunk without parsing or tokenising again."""
    loaded = loaded or load(data, filename)
    chunk_set = chunking.split(loaded.tokenized, settings, loaded.document.pages_for_span)
    return Prepared(loaded.document, chunk_set, data, loaded.sha256)


def embedder_for_kb(store: Store, settings: Settings, knowledge: str) -> Embedder:
    """The embedder to ingest into `knowledge` with: under `auto` an existing knowledge base keeps the
    one it was built with, under `local` a local one (WordLlama bases stay WordLlama while new ones
    get e5); otherwise the configured one (a mismatch then fails)."""
    from rag import retrieve
    from rag.embeddings import keeps_built_embedder

    kb = store.get_knowledge_base(knowledge)
    if kb is not None and keeps_built_embedder(settings.embedder, kb.embedder):
        return retrieve.embedder_named(kb.embedder, settings)
    return retrieve.embedder_named_or_default(settings)


def unchanged(existing: StoredDocument | None, sha256: str, settings: ChunkSettings) -> bool:
    """Whether ingesting would skip the file: stored before with the same bytes, settings and splitter
    version (a document cut by an older version of the splitter is cut again)."""
    return existing is not None and existing.sha256 == sha256 and settings.cuts_as(existing.chunk_settings)


def validate_kb_name(name: str) -> str:
    cleaned = name.strip()
    if not cleaned:
        raise RagError(Text("the knowledge base name is empty: give it a name such as 'finance'"))
    if len(cleaned) > 200:
        raise RagError(Text("the knowledge base name is {n} characters long; 200 at most", n=len(cleaned)))
    return cleaned


def ingest_bytes(
    store: Store,
    embedder: Embedder,
    data: bytes,
    filename: str,
    knowledge: str,
    settings: ChunkSettings,
    *,
    path: str | None = None,
    on_stage: StageCallback | None = None,
    on_plan: PlanCallback | None = None,
    cancel: CancelSignal | None = None,
) -> IngestResult:
    """Parse, chunk, embed and store one file; any failure is a `failed` result, never a raise.
    `on_plan` hears how many chunks are about to be embedded and how long that should take (the chunks
    whose vectors a stopped ingest kept left out).
    Setting `cancel` stops the embedding before its next batch: `stopped`, nothing in the knowledge base,
    the chunks embedded by then kept for the next ingest (rag.ingest.resume), which embeds only the rest."""
    notify = on_stage or (lambda stage, fraction, message: None)
    ready = _embedded(store, embedder, data, filename, knowledge, settings, path, notify, on_plan, cancel)
    return ready if isinstance(ready, IngestResult) else _written(store, embedder, ready, settings, notify)


@dataclass(frozen=True)
class _Embedded:
    """A file read, chunked and embedded: what its one transaction writes."""

    knowledge: str
    filename: str
    path: str | None
    data: bytes
    sha256: str
    page_count: int
    chunk_set: ChunkSet
    extras: list[dict[str, object]]
    """Each chunk's metadata from its document (where it is, OCR): the document itself, which holds
    all its text once more, is not kept while the chunks are embedded and written."""
    vectors: object  # np.ndarray (numpy is not imported here)
    resume: Resume
    """Its vectors as the vector cache holds them: dropped there once the document is stored."""


def _embedded(
    store: Store,
    embedder: Embedder,
    data: bytes,
    filename: str,
    knowledge: str,
    settings: ChunkSettings,
    path: str | None,
    notify: StageCallback,
    on_plan: PlanCallback | None,
    cancel: CancelSignal | None,
    parsed: Prepared | None = None,
    ahead: Callable[[StageCallback], documents.Document | Refused | None] | None = None,
    looks: _Looks | None = None,
) -> _Embedded | IngestResult:
    """The parse, chunk and embed stages of one file, or its result when it ends there (unchanged, failed).
    `parsed`: the file as a preview parsed it (from these very bytes: `Source` checks), not parsed again;
    `ahead(notify)`: the file as the read-ahead worker parsed it, waited for, chunked here (None: the
    worker died, so it is parsed here); `looks`: what an ingest of many files looked up once, or ahead (`_Looks`)."""
    # One spelling of a name: macOS writes "é" as e + U+0301 (NFD), Windows and browsers as U+00E9 (NFC), and
    # the two looked like one document stored twice.
    filename = unicodedata.normalize("NFC", filename)
    try:
        knowledge = validate_kb_name(knowledge)
        looks = looks or _Looks(store, embedder, knowledge)
        looks.check_embedder()
        # Unchanged is told by the bytes' hash and the stored settings, before parsing: parsing an
        # unchanged scanned PDF only to skip it was seconds of OCR a page.
        sha = parsed.sha256 if parsed is not None else documents.sha256_hex(data)
        existing = looks.document(filename)
        if existing is not None and unchanged(existing, sha, settings):
            notify("store", 1.0, status_word("unchanged"))
            return IngestResult(filename, "unchanged", existing.chunk_count, existing.page_count)
        same: ChunkSet | None = None
        if parsed is not None:
            doc = parsed.document
            # The preview's chunks when they were cut with these settings (the page's always are).
            same = parsed.chunk_set if parsed.chunk_set.settings == settings else None
        else:
            notify("parse", 0.0, Text("reading pages"))
            outcome = ahead(notify) if ahead is not None else None
            if isinstance(outcome, Refused):
                if outcome.unexpected:
                    return _unexpected(filename, outcome)
                return IngestResult(filename, "failed", reason=outcome.reason)
            doc = outcome if outcome is not None else parse(data, filename, notify)
            del outcome
        notify("chunk", 0.1, pages_text(len(doc.pages)))
        chunked = chunked_document(doc, filename, settings, same)
        chunk_set, page_count, extras = chunked.chunk_set, chunked.page_count, chunked.extras
        del chunked, doc
        texts = [c.text for c in chunk_set.chunks]
        from rag.embeddings import EmbeddingCancelled, batches, expected_seconds

        if on_plan is not None:
            # Only what is left to embed: the chunks a stopped ingest kept cost nothing.
            left, _ = left_to_embed(store, embedder, texts)
            on_plan(len(left), expected_seconds(embedder, left))

        def embedded(done: int, total: int) -> None:
            if resume.reused:
                message = Text(
                    "{done}/{total} chunks embedded ({reused} kept from a stopped ingest)",
                    done=done,
                    total=total,
                    reused=resume.reused,
                )
            else:
                message = Text("{done}/{total} chunks embedded", done=done, total=total)
            notify("embed", 0.2 + 0.7 * done / max(total, 1), message)

        # The embed stage's first word: at once when no vector of this embedder is kept (nothing to
        # resume: the common case, one query), else once the lookup is done, so that a resumed ingest's bar
        # starts at the kept share (it sat at 20%, "N chunks", for the seconds the embedder took to plan
        # its input and look them up, then jumped there).
        announced = not looks.may_resume()
        if announced:
            notify("embed", 0.2, chunks_text(len(texts)))

        def found(reused: int) -> None:
            if reused:
                embedded(reused, len(texts))
            elif not announced:
                notify("embed", 0.2, chunks_text(len(texts)))

        # An ingest that began with no vector of this embedder kept, and has kept none since, has none to find: a
        # file's look was a round trip to a server busy with the writes, while this thread waited (200 a bench).
        resume = Resume(store, embedder, knowledge, filename, len(texts), on_found=found, look=looks.may_find())

        try:
            with batches.reusing(resume), resume.running():
                try:
                    vectors = embedder.embed(texts, progress=embedded, cancel=cancel)
                finally:
                    if resume.embedded:  # kept, whether the file's embedding ends, stops or fails
                        looks.kept_vectors()
        except EmbeddingCancelled:
            return IngestResult(filename, "stopped", reason=stop_reason("embed", resume.stopped()))
        except RagError as exc:
            kept = resume.stopped()
            if not kept.kept:
                raise
            reason = Text(
                "{reason}; {kept} of {total} chunks embedded are kept: ingest it again to resume from there",
                reason=failure_reason(exc),
                kept=f"{kept.kept:,}",
                total=f"{kept.total:,}",
            )
            return IngestResult(filename, "failed", reason=reason)
        return _Embedded(knowledge, filename, path, data, sha, page_count, chunk_set, extras, vectors, resume)
    except RagError as exc:
        return IngestResult(filename, "failed", reason=failure_reason(exc))


def _may_resume(store: Store, embedder: Embedder) -> bool:
    """Whether the vector cache may hold vectors of this embedder (a stopped ingest's); True when it cannot
    be read either (the embedding's own lookup then finds nothing)."""
    try:
        return store.vector_cache.holds(embedder.name)
    except RagError:
        return True


class _Looks:
    """What `_embedded` asks the database before a file's embedding, asked once an ingest where the answer is the
    knowledge base's (its embedder; whether the vector cache holds any of this embedder's vectors: only when the
    embed stage's first word is told hangs on it), and a file's stored document taken from the read-ahead's look
    where it asked already (`_Reader`). Asked for every file, these round trips to a server busy with the writes
    held the thread that chunks and embeds: the peers bench's 200 PDFs alone took 11.2-11.3 s with them, 10.9-11.2
    s with this (10.8 s with no look at all, the read-ahead's too)."""

    def __init__(self, store: Store, embedder: Embedder, knowledge: str) -> None:
        # As `validate_kb_name` gives it (" kb " is kb): `_embedded` validates it before asking.
        self._store, self._embedder, self._knowledge = store, embedder, knowledge.strip()
        self._checked: RagError | bool = False
        self._may_resume: bool | None = None
        self._kept = False
        self._documents: dict[str, StoredDocument | None] = {}

    def check_embedder(self) -> None:
        """`Store.check_embedder`, asked once (a failure is each file's again: the knowledge base refuses them all;
        one made meanwhile with another embedder is refused by the write, in its transaction)."""
        if self._checked is False:
            try:
                self._store.check_embedder(self._knowledge, self._embedder.name)
                self._checked = True
            except RagError as exc:
                self._checked = exc
        if isinstance(self._checked, RagError):
            raise self._checked

    def may_resume(self) -> bool:
        if self._may_resume is None:
            self._may_resume = _may_resume(self._store, self._embedder)
        return self._may_resume

    def may_find(self) -> bool:
        """Whether the vector cache may hold vectors of this embedder for a file: some were there when the ingest
        began, or it kept some since (a text of one file may be another's). Another ingest that stops meanwhile
        keeps its own for itself: this one embeds what it would have found."""
        return self._kept or self.may_resume()

    def kept_vectors(self) -> None:
        """This ingest kept vectors in the cache (a slow batch's, `batches.KEEP_AFTER_SECONDS_A_CHUNK`)."""
        self._kept = True

    def looked_up(self, filename: str, document: StoredDocument | None) -> None:
        """What the read-ahead found stored under `filename` (it asked to tell whether to parse the file)."""
        self._documents[filename] = document

    def document(self, filename: str) -> StoredDocument | None:
        """The stored document of `filename`: the read-ahead's look (taken once), else asked now."""
        if filename in self._documents:
            return self._documents.pop(filename)
        return self._store.find_document(self._knowledge, filename)


def _written(
    store: Store, embedder: Embedder, ready: _Embedded, settings: ChunkSettings, notify: StageCallback
) -> IngestResult:
    """The store stage: the document and its chunks in one transaction."""
    chunks = ready.chunk_set.chunks
    try:
        notify("store", 0.9, Text("writing"))
        result = store.write_document(
            knowledge=ready.knowledge,
            embedder=embedder.name,
            dimension=embedder.dimension,
            chunk_settings=settings.stored(),
            filename=ready.filename,
            path=ready.path,
            data=ready.data,
            sha256=ready.sha256,
            page_count=ready.page_count,
            chunks=chunks,
            embeddings=ready.vectors,
            extras=ready.extras,
        )
        ready.resume.stored()
        notify("store", 1.0, status_word(result.status))
        note = ""
        if ready.resume.reused:
            note = Text(
                "{reused} of {chunks} chunks were embedded by a stopped ingest and reused",
                reused=f"{ready.resume.reused:,}",
                chunks=f"{len(chunks):,}",
            )
        return IngestResult(ready.filename, result.status, len(chunks), ready.page_count, note)
    except RagError as exc:
        return IngestResult(ready.filename, "failed", reason=failure_reason(exc))


def stop_reason(stage: str, kept: Kept | None) -> Text:
    """What a stop during `stage` left of a file: nothing in the knowledge base, and the vectors of the
    chunks embedded by then, which the next ingest reuses (rag.ingest.resume)."""
    where = STAGE_WORDS.get(stage, stage)
    if kept is None or not kept.kept:
        return Text("stopped during {stage}: nothing of it was stored", stage=where)
    if not kept.settled:  # counted while the batch in flight was still being embedded
        return Text(
            "stopped during {stage}: at least {kept} of {total} chunks embedded are kept; press Ingest to resume "
            "from there",
            stage=where,
            kept=f"{kept.kept:,}",
            total=f"{kept.total:,}",
        )
    return Text(
        "stopped during {stage}: {kept} of {total} chunks embedded are kept; press Ingest to resume from there",
        stage=where,
        kept=f"{kept.kept:,}",
        total=f"{kept.total:,}",
    )


def after_stop(
    store: Store, knowledge: str, filename: str, data: bytes | None, settings: ChunkSettings, stage: str | None
) -> IngestResult:
    """What an ingest stopped during `stage` left: the file's transaction either committed before the
    stop (then it is stored, as a result says) or not (then the knowledge base holds what it held).
    `stage` None: the file was not started."""
    existing = store.find_document(knowledge, filename)
    if (
        existing is not None
        and data is not None
        and stage is not None
        and unchanged(existing, documents.sha256_hex(data), settings)
    ):
        return IngestResult(filename, "stored", existing.chunk_count, existing.page_count)
    kept = kept_after_stop(knowledge, filename)
    if stage is None:
        when = Text("not started")
    else:
        when = stop_reason(stage, kept)
    if existing is not None:
        when = Text("{reason}; the version stored before is kept", reason=when)
    return IngestResult(filename, "stopped", reason=when)


def results_after_stop(
    store: Store,
    knowledge: str,
    settings: ChunkSettings,
    sources: Sequence[Source],
    done: Sequence[IngestResult],
    reached: Mapping[str, str],
) -> list[IngestResult]:
    """What a stopped `ingest_files` of `sources` did, file by file: the results it gave (`done`), then
    for each other file what the stop left (`after_stop`). `reached` maps a file to the last stage its
    `on_stage` callback heard; a file not in it was not started."""
    given = {result.filename for result in done}
    results = list(done)
    for source in sources:
        if source.name in given:
            continue
        stage = reached.get(source.name)
        data = source.read() if stage is not None else None
        results.append(
            after_stop(store, knowledge, source.name, data if isinstance(data, bytes) else None, settings, stage)
        )
    return results


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Files as given, and the supported files inside given folders (sorted, recursive)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix.lower() in documents.SUPPORTED_EXTENSIONS:
                    yield child
        else:
            yield path


def document_name(folder: Path, path: Path) -> str:
    """The name of a document read from `path` inside `folder`: its path relative to the folder
    ('reports/q3.docx'), so that two files of one name in two subfolders stay two documents."""
    # NFC, as the ingest stores names (ingest_bytes): a macOS folder's NFD name would otherwise be "new" at
    # every sync and its stored document "missing".
    return unicodedata.normalize("NFC", path.relative_to(folder).as_posix())


def named_paths(paths: Iterable[str | os.PathLike[str]]) -> Iterator[tuple[str, Path]]:
    """`expand_paths` with each file's document name: a file given by itself is named by its file name, a
    file found in a given folder by its path inside that folder (`document_name`, as `rag sync` names it).
    By file name alone, `rag ingest t` stored t/a/r.txt and then replaced it with t/b/r.txt (issue 33)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in expand_paths([path]):
                yield document_name(path, child), child
        else:
            yield path.name, path


OVERLAP_BYTES = 64 << 20
"""`ingest_files` writes files while it reads the next unless they hold more bytes than this together: then
the writes are finished first, so that two big files (a 200 MB TXT's write holds its bytes, its chunks and
the COPY of them) are never in memory at once."""


@dataclass(frozen=True)
class Source:
    """One file for `ingest_files`: its bytes (an upload) or its path (read when its turn comes), and
    what a preview parsed and chunked of it (`parsed`), which is then not parsed again: a scanned PDF
    is OCR'd once. `name` is the document's name in the knowledge base (`rag sync` names a file by its
    path inside the folder); `path`, when given, is stored as the document's path."""

    name: str
    data: bytes | None = None
    path: Path | None = None
    parsed: Prepared | None = None

    def __post_init__(self) -> None:
        if self.data is None and self.path is None:
            raise ValueError(f"{self.name!r}: a source needs its bytes or its path")
        if self.parsed is not None:
            if self.data is None:
                raise ValueError(f"{self.name!r}: a parsed source needs the bytes it was parsed from")
            sha = documents.sha256_hex(self.data)
            if sha != self.parsed.sha256:
                # Another file's chunks stored under these bytes' hash would pass as unchanged for good.
                raise ValueError(
                    f"{self.name!r}: the parsed document was read from other bytes "
                    f"(sha256 {self.parsed.sha256[:12]}…, the file's {sha[:12]}…)"
                )

    @classmethod
    def upload(cls, name: str, data: bytes, parsed: Prepared | None = None) -> Source:
        """Bytes in memory, with the preview's parse of them when there is one."""
        return cls(name, data=data, parsed=parsed)

    @classmethod
    def file(cls, path: Path, name: str | None = None) -> Source:
        """A file on disk, named by its file name unless `name` is given."""
        return cls(name or path.name, path=path)

    def size(self) -> int:
        """Its bytes, without reading them (0 when the file cannot be read: `read` says why)."""
        if self.data is not None or self.path is None:
            return len(self.data or b"")
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def read(self) -> bytes | IngestResult:
        """Its bytes, or its `failed` result when the file cannot be read."""
        if self.data is not None or self.path is None:
            return self.data or b""
        try:
            return self.path.read_bytes()
        except OSError as exc:
            return IngestResult(
                self.name, "failed", reason=Text("cannot read the file ({cause})", cause=exc.strerror or str(exc))
            )


def _quiet(stage: str, fraction: float, message: str) -> None:
    return None


def _unexpected(filename: str, exc: Exception | Refused) -> IngestResult:
    """A file that failed in a way no stage foresaw (a bug, a parser's own exception), here or in the read-ahead
    worker (a `Refused` carrying its traceback): logged with its traceback and failed alone, so that the files
    after it go on."""
    if isinstance(exc, Refused):
        log.error("ingesting %r failed in the read-ahead worker: %s", filename, exc.reason)
        error = exc.reason.splitlines()[0]
    else:
        log.error("ingesting %r failed", filename, exc_info=exc)
        error = f"{type(exc).__name__}: {exc}"
    return IngestResult(filename, "failed", reason=Text("unexpected error: {error}", error=error))


class _Relay:
    """The writer threads' stage callbacks, called in the caller's thread: a UI draws only from its own
    thread (Streamlit drops what another thread draws, with a warning), and a stop that a callback raises
    (the Upload page's) must land in the thread that can handle it. The writers queue what they hear;
    the caller's thread calls it at its own next stage and while it waits for a write."""

    def __init__(self) -> None:
        # (write, callback, stage, fraction, message); a callback None: that write is over.
        self._heard: queue.SimpleQueue[tuple[int, StageCallback | None, str, float, str]] = queue.SimpleQueue()
        self._over: set[int] = set()
        self._writes = 0

    def here(self, notify: StageCallback) -> StageCallback:
        """`notify` for the caller's thread: what the writers heard first, then this."""

        def heard(stage: str, fraction: float, message: str) -> None:
            self._deliver(until=None)
            notify(stage, fraction, message)

        return heard

    def submit(
        self,
        writers: ThreadPoolExecutor,
        store: Store,
        embedder: Embedder,
        ready: _Embedded,
        settings: ChunkSettings,
        notify: StageCallback,
    ) -> _Write:
        """`_written` in a writer thread, its callbacks queued for the caller's."""
        key = self._writes
        self._writes += 1

        def write() -> IngestResult:
            def queued(stage: str, fraction: float, message: str) -> None:
                self._heard.put((key, notify, stage, fraction, message))

            try:
                return _written(store, embedder, ready, settings, queued)
            except Exception as exc:  # noqa: BLE001 - one file's surprise must not stop the others
                return _unexpected(ready.filename, exc)
            finally:
                self._heard.put((key, None, "", 0.0, ""))

        return _Write(key, writers.submit(write), len(ready.data))

    def result(self, write: _Write) -> IngestResult:
        """The write's result, once every callback it heard was called here."""
        self._deliver(until=write.key)
        self._over.discard(write.key)
        return write.future.result()

    def running(self, writes: Iterable[_Write]) -> int:
        """How many of `writes` are not over as far as this thread has heard (`drain` first)."""
        return sum(1 for w in writes if w.key not in self._over)

    def over(self, write: _Write) -> bool:
        return write.key in self._over

    def drain(self) -> None:
        """The callbacks heard so far, without waiting."""
        self._deliver(until=None)

    def wait_any(self) -> None:
        """The callbacks heard until one more write is over (call it while one runs)."""
        self._deliver(until=_ANY_WRITE)

    def _deliver(self, until: int | None) -> None:
        """The callbacks heard so far; with `until`, and then those heard until that write is over (`_ANY_WRITE`:
        until one more write is)."""
        while until is None or until not in self._over:
            try:
                key, notify, stage, fraction, message = self._heard.get(block=until is not None)
            except queue.Empty:
                return
            if notify is None:
                self._over.add(key)
                if until == _ANY_WRITE:
                    return
            else:
                notify(stage, fraction, message)


_ANY_WRITE = -1
"""`_Relay._deliver`'s `until` for whichever write is over next (keys count from 0)."""


@dataclass(frozen=True)
class _Write:
    key: int
    future: Future[IngestResult]
    size: int
    """The file's bytes, which the write holds."""


WRITERS = 2
"""Files written at once, each in its own transaction and connection: the database's share of an ingest
(tsvector, BM25 and GIN inserts) is one server process per connection, and one of them set the pace of a
whole ingest (23 of its 28 s on the peers bench's 200 PDFs, with the parse read ahead)."""


UNTOLD_WRITES = 64
"""Writes done or running whose results are not yet given (they come in the files' order): a file written
after a slow one waits for it this long at most."""


def ingest_files(
    store: Store,
    embedder: Embedder,
    sources: Iterable[Source],
    knowledge: str,
    settings: ChunkSettings,
    *,
    on_stage: Callable[[str], StageCallback] | None = None,
    on_plan: Callable[[str], PlanCallback] | None = None,
    cancel: CancelSignal | None = None,
    on_index: IndexCallback | None = None,
) -> Iterator[IngestResult]:
    """Ingest each source, results in order, the stages of several files at once: the files after this one
    (`READ_AHEAD_FILES`) are parsed in a worker process (`_Reader`, rag.ingest.readahead) while this one is
    chunked and embedded here, and the files before it are written by `WRITERS` threads, each file in its own
    transaction, while the database does its part (tsvector, BM25 and GIN inserts) in a server process per
    connection. Files of more than `OVERLAP_BYTES` together are not written while the next is read.

    A file stored before with the same bytes and settings is `unchanged`, told before it is parsed; a
    source's `parsed` document is used as it is. `on_stage(name)` and `on_plan(name)` give a file's
    callbacks, all called in the caller's thread (the store stage's too). Any failure of a file,
    foreseen or not, is its `failed` result and the others go on. `cancel` set: the embedding in
    progress stops before its next batch (that file is `stopped`: nothing of it in the knowledge base, the
    vectors of its chunks embedded by then kept, so that the next ingest embeds only the rest) and no file
    starts.
    Stopped otherwise (KeyboardInterrupt, an exception from a callback, the generator closed), the file
    being written is finished or rolled back whole before this returns, and the one being embedded keeps
    the batches done: `results_after_stop` tells which. After the last file, the knowledge base's vector index
    is built in the background once it has grown past exact search (`Store.build_graphs_later`), and
    `on_index(knowledge base, chunks)` told so."""
    relay = _Relay()
    looks = _Looks(store, embedder, knowledge)
    upcoming = _Upcoming(sources)
    reader = _Reader(store, embedder, knowledge, settings, looks, upcoming)
    # Its arrays from malloc's heaps, where the app maps large buffers of their own (rag.heap: ~10 % of this
    # process's CPU).
    with (
        heap.buffers_in_heap(),
        ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="rag-ingest-write") as writers,
    ):
        try:
            pending: deque[_Write] = deque()
            queued: deque[_Ahead] = deque()  # the files after this one, sent to the read-ahead worker
            while True:
                this = queued.popleft() if queued else _Ahead.of(upcoming.next())
                if this is None or (cancel is not None and cancel.is_set()):
                    break
                source = this.source
                while pending and sum(w.size for w in pending) + this.size > OVERLAP_BYTES:
                    yield relay.result(pending.popleft())
                notify = on_stage(source.name) if on_stage else _quiet
                data = this.data if this.data is not None else source.read()
                # The files after this one go to the read-ahead worker now: parsed there while this one is.
                while len(queued) < READ_AHEAD_FILES and sum(q.size for q in queued) < READ_AHEAD_BYTES:
                    following = reader.ahead(upcoming.next())
                    if following is None:
                        break
                    queued.append(following)
                ready: _Embedded | IngestResult
                if isinstance(data, IngestResult):
                    ready = data
                else:
                    try:
                        ready = _embedded(
                            store,
                            embedder,
                            data,
                            source.name,
                            knowledge,
                            settings,
                            None if source.path is None else str(source.path),
                            relay.here(notify),
                            on_plan(source.name) if on_plan else None,
                            cancel,
                            source.parsed,
                            reader.taker(this.key),
                            looks,
                        )
                    except Exception as exc:  # noqa: BLE001 - one file's surprise must not stop the others
                        ready = _unexpected(source.name, exc)
                # Results in order: a file that ends here waits for the writes before it. The next file waits for
                # a writer, not for the oldest write: one slow write (the one that moves the keyword index's
                # pending list, several seconds on the peers bench, or one waiting for a lock) no longer holds up
                # the embedding and the other writer. On the peers bench's 200 PDFs the machine's idle time went
                # from 4.2-5.0 to 1.7-2.1 CPU s, its wall time no shorter on two cores (the server's share grew
                # as much: its writes then overlap the index's move).
                relay.drain()
                while pending and (
                    isinstance(ready, IngestResult) or len(pending) >= UNTOLD_WRITES or relay.over(pending[0])
                ):
                    yield relay.result(pending.popleft())
                while relay.running(pending) >= WRITERS:
                    relay.wait_any()
                    while pending and relay.over(pending[0]):
                        yield relay.result(pending.popleft())
                if isinstance(ready, IngestResult):
                    yield ready
                else:
                    pending.append(relay.submit(writers, store, embedder, ready, settings, notify))
                del data, ready, this  # the writer holds them: nothing of this file stays once it is written
            while pending:
                yield relay.result(pending.popleft())
            try:
                # A knowledge base grown past exact search gets its graph, built in bulk over all its rows (an ingest
                # writes none row by row: rag.store.graphs), in the background once the ingest is done: its rows are
                # searched exactly meanwhile (12 ms over the peers bench's 11,630 chunks). Waited for, the build was
                # the last second of that bench's 15-second ingest, both cores busy with it and nothing else.
                for name, chunks in store.build_graphs_later([knowledge], (embedder.name, embedder.embed_queries)):
                    if on_index is not None:
                        on_index(name, chunks)
            finally:
                # What this ingest left pending of the BM25 statistics is merged in the background once it is
                # done: searches read the pending counts too (exact, only slower: keyword p50 225-260 ms over the
                # peers bench's 2.36 million, 12-16 ms merged), so waiting for the merge made the knowledge base
                # searchable no sooner. That bench's 200 PDFs leave fewer than MERGE_TERMS, merged at once in
                # 1.25 s of one server process, where merges during the ingest and the last one waited for took
                # ~2.3 s of the server's CPU within it: the ingest alone 18.6-18.8 s against 20.6-24.4 s. The keyword
                # index's pending list is merged then too (schema.GIN_PENDING_KB).
                store.merge_bm25_later()
                prune_vector_cache(store)
        finally:
            reader.close()


LOOKED_UP_TOGETHER = 32
"""Files after the one read ahead whose stored documents are asked with its own (`_Reader._lookup`): what is found
is at most that many files old when its file's turn comes."""


class _Upcoming:
    """The sources not yet taken, with a look at the next ones (`peek`) without taking them."""

    def __init__(self, sources: Iterable[Source]) -> None:
        self._sources = iter(sources)
        self._seen: deque[Source] = deque()

    def next(self) -> Source | None:
        return self._seen.popleft() if self._seen else next(self._sources, None)

    def peek(self, n: int) -> list[Source]:
        while len(self._seen) < n:
            source = next(self._sources, None)
            if source is None:
                break
            self._seen.append(source)
        return list(self._seen)[:n]


@dataclass(frozen=True)
class _Ahead:
    """A source whose turn is next: its bytes when they were read ahead, and its key in the read-ahead
    worker when it is being parsed there."""

    source: Source
    data: bytes | IngestResult | None = None
    key: int | None = None

    @classmethod
    def of(cls, source: Source | None) -> _Ahead | None:
        return None if source is None else cls(source)

    @functools.cached_property
    def size(self) -> int:
        """Its bytes (those read ahead, else the file's), asked once: the loop in `ingest_files` sums the queued
        files' sizes each time it sends one ahead, and a file's stat took 0.16 ms of the thread that chunks and
        embeds (1,393 of them, 0.22 s, for the peers bench's 200 PDFs)."""
        return len(self.data) if isinstance(self.data, bytes) else self.source.size()


class _Reader:
    """`ingest_files`' read-ahead: the next file's bytes read and sent to a worker process to parse
    (rag.ingest.readahead) while this one is chunked and embedded; not a file a preview parsed, one read in
    milliseconds (`READ_AHEAD_SUFFIXES`), one larger than `READ_AHEAD_BYTES`, or one that would not be
    parsed (unchanged, or the knowledge base refuses it)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        knowledge: str,
        settings: ChunkSettings,
        looks: _Looks,
        upcoming: _Upcoming,
    ) -> None:
        self._store, self._embedder, self._knowledge, self._settings = store, embedder, knowledge, settings
        self._looks, self._upcoming = looks, upcoming
        self._worker: ReadAhead | None = None
        self._stored: dict[str, StoredDocument | None] = {}
        """The stored documents of the files about to be read ahead, looked up together (`_lookup`)."""

    def ahead(self, source: Source | None) -> _Ahead | None:
        if (
            source is None
            or source.parsed is not None
            or not source.name.lower().endswith(READ_AHEAD_SUFFIXES)
            or source.size() > READ_AHEAD_BYTES
        ):
            return _Ahead.of(source)
        data = source.read()
        if isinstance(data, IngestResult) or not self._to_parse(source.name, data):
            return _Ahead(source, data)
        if self._worker is None:
            self._worker = read_ahead()
        return _Ahead(source, data, self._worker.submit(data, source.name))

    def _to_parse(self, name: str, data: bytes) -> bool:
        """Whether the file's turn will parse it (its `_embedded` checks the same first): not when it is stored
        unchanged. (A knowledge base of another embedder refuses every file at its turn, before its parse is
        taken: not asked here, a round trip a file.)"""
        try:
            knowledge = validate_kb_name(self._knowledge)
            filename = unicodedata.normalize("NFC", name)
            existing = self._lookup(knowledge, filename)
        except RagError:
            return False
        self._looks.looked_up(filename, existing)  # its turn asks no more
        return not unchanged(existing, documents.sha256_hex(data), self._settings)

    def _lookup(self, knowledge: str, filename: str) -> StoredDocument | None:
        """The stored document of `filename`, asked with those of the next `LOOKED_UP_TOGETHER` files: one round
        trip a file, to a server busy with the writes while the embedding thread waited, was 0.46 s of the peers
        bench's ingest."""
        if filename not in self._stored:
            names = [filename, *(unicodedata.normalize("NFC", s.name) for s in self._upcoming.peek(LOOKED_UP_TOGETHER))]
            found = self._store.find_documents(knowledge, names)
            self._stored = {name: found.get(name) for name in names}
        return self._stored.pop(filename)

    def taker(self, key: int | None) -> Callable[[StageCallback], documents.Document | Refused | None] | None:
        """What `_embedded` calls for the file of `key` (None: not read ahead, parse it there)."""
        if key is None or self._worker is None:
            return None
        return functools.partial(self._worker.take, key)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None


def ingest_path(
    store: Store,
    embedder: Embedder,
    path: Path,
    knowledge: str,
    settings: ChunkSettings,
    *,
    on_stage: StageCallback | None = None,
    on_plan: PlanCallback | None = None,
    cancel: CancelSignal | None = None,
) -> IngestResult:
    data = Source.file(path).read()
    if isinstance(data, IngestResult):
        return data
    return ingest_bytes(
        store,
        embedder,
        data,
        path.name,
        knowledge,
        settings,
        path=str(path),
        on_stage=on_stage,
        on_plan=on_plan,
        cancel=cancel,
    )


def ingest_paths(
    store: Store,
    embedder: Embedder,
    paths: Iterable[Path | tuple[str, Path]],
    knowledge: str,
    settings: ChunkSettings,
    *,
    on_stage: Callable[[str], StageCallback] | None = None,
    on_plan: Callable[[str], PlanCallback] | None = None,
) -> Iterator[IngestResult]:
    """`ingest_files` of files on disk, each named by its file name or by the name paired with it
    (`named_paths`): what `rag ingest` runs."""
    sources = (Source.file(p) if isinstance(p, Path) else Source.file(p[1], p[0]) for p in paths)
    return ingest_files(store, embedder, sources, knowledge, settings, on_stage=on_stage, on_plan=on_plan)
