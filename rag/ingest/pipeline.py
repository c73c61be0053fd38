"""File -> pages -> chunks -> embeddings -> rows, one document per transaction."""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from rag import chunking, documents
from rag.chunking import ChunkSettings, ChunkSet
from rag.errors import RagError, one_line

if TYPE_CHECKING:  # the store (psycopg) and the embedders are passed in, never built here
    from rag.embeddings import CancelSignal, Embedder
    from rag.settings import Settings
    from rag.store import Store, StoredDocument

log = logging.getLogger(__name__)

STAGES = ("parse", "chunk", "embed", "store")

# (stage, fraction of the file done in [0, 1], a short message)
StageCallback = Callable[[str, float, str], None]
# (chunks about to be embedded, the seconds that should take: None when not worth estimating)
PlanCallback = Callable[[int, "float | None"], None]


@dataclass(frozen=True)
class IngestResult:
    filename: str
    status: str
    """`stored`, `replaced`, `unchanged`, `failed`, or `stopped` (by the user, nothing of it stored)."""
    chunks: int = 0
    pages: int = 0
    reason: str = ""

    @property
    def ok(self) -> bool:
        """Whether the file is in the knowledge base as uploaded."""
        return self.status in ("stored", "replaced", "unchanged")

    def line(self) -> str:
        if self.status in ("failed", "stopped"):
            return f"{self.filename}: {self.status}: {self.reason}"
        if self.status == "unchanged":
            return f"{self.filename}: unchanged"
        return f"{self.filename}: {self.status} ({self.pages} pages, {self.chunks} chunks)"


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
    tokenized: chunking.TokenizedText
    sha256: str


def load(data: bytes, filename: str, progress: documents.Progress | None = None) -> Loaded:
    """Parse and tokenise; `progress` hears each page of a PDF (OCR takes seconds a page)."""
    doc = documents.load_bytes(data, filename, progress)
    return Loaded(doc, chunking.tokenize(doc.text), documents.sha256_hex(data))


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
    return (existing is not None and existing.sha256 == sha256
            and settings.cuts_as(existing.chunk_settings))


def failure_reason(exc: RagError) -> str:
    """A failure as one line; a file's error without its filename (the result names the file)."""
    return one_line(getattr(exc, "reason", None) or exc, limit=None)


def validate_kb_name(name: str) -> str:
    cleaned = name.strip()
    if not cleaned:
        raise RagError("the knowledge base name is empty: give it a name such as 'finance'")
    if len(cleaned) > 200:
        raise RagError(f"the knowledge base name is {len(cleaned)} characters long; 200 at most")
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
    `on_plan` hears how many chunks are about to be embedded and how long that should take.
    Setting `cancel` stops the embedding before its next batch: `failed`, nothing stored."""
    notify = on_stage or (lambda stage, fraction, message: None)
    try:
        knowledge = validate_kb_name(knowledge)
        store.check_embedder(knowledge, embedder.name)
        notify("parse", 0.0, "reading pages")
        doc = documents.load_bytes(data, filename, lambda done, total, what: notify(
            "parse", 0.1 * done / max(total, 1), what))
        sha = documents.sha256_hex(data)
        existing = store.find_document(knowledge, filename)
        if unchanged(existing, sha, settings):
            notify("store", 1.0, "unchanged")
            return IngestResult(filename, "unchanged", existing.chunk_count, existing.page_count)
        notify("chunk", 0.1, f"{len(doc.pages)} pages")
        chunk_set = chunking.split(doc.text, settings, doc.pages_for_span)
        if not chunk_set.chunks:
            raise documents.DocumentError(filename, "no chunks: every piece was shorter than the "
                                          "minimum chunk length to embed")
        texts = [c.text for c in chunk_set.chunks]
        if on_plan is not None:
            from rag.embeddings import expected_seconds

            on_plan(len(texts), expected_seconds(embedder, texts))
        notify("embed", 0.2, f"{len(texts)} chunks")
        vectors = embedder.embed(
            texts,
            progress=lambda done, total: notify("embed", 0.2 + 0.7 * done / max(total, 1),
                                                f"{done}/{total} chunks embedded"),
            cancel=cancel,
        )
        notify("store", 0.9, "writing")
        result = store.write_document(
            knowledge=knowledge,
            embedder=embedder.name,
            dimension=embedder.dimension,
            chunk_settings=settings.stored(),
            filename=filename,
            path=path,
            data=data,
            sha256=sha,
            page_count=doc.page_count,
            chunks=chunk_set.chunks,
            embeddings=vectors,
            extras=[doc.chunk_extras(c.pages) for c in chunk_set.chunks],
        )
        notify("store", 1.0, result.status)
        return IngestResult(filename, result.status, len(chunk_set.chunks), doc.page_count)
    except RagError as exc:
        return IngestResult(filename, "failed", reason=failure_reason(exc))


def after_stop(store: Store, knowledge: str, filename: str, data: bytes | None, settings: ChunkSettings,
               stage: str | None) -> IngestResult:
    """What an ingest stopped during `stage` left: the file's transaction either committed before the
    stop (then it is stored, as a result says) or not (then the knowledge base holds what it held).
    `stage` None: the file was not started."""
    existing = store.find_document(knowledge, filename)
    if data is not None and stage is not None and unchanged(existing, documents.sha256_hex(data), settings):
        return IngestResult(filename, "stored", existing.chunk_count, existing.page_count)
    kept = "; the version stored before is kept" if existing is not None else ""
    when = "not started" if stage is None else f"stopped during {stage}: nothing of it was stored"
    return IngestResult(filename, "stopped", reason=when + kept)


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
    try:
        data = path.read_bytes()
    except OSError as exc:
        return IngestResult(path.name, "failed", reason=exc.strerror or str(exc))
    return ingest_bytes(store, embedder, data, path.name, knowledge, settings,
                        path=str(path), on_stage=on_stage, on_plan=on_plan, cancel=cancel)
