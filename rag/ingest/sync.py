"""`rag sync FOLDER --kb NAME`: keep a knowledge base in step with a folder.

New files are stored, changed ones replaced, unchanged ones left; with `delete_missing` the
documents whose file is gone are deleted (only documents that came from this folder: an upload
of the same knowledge base is never touched). Documents are named by their path inside the
folder ('reports/q3.docx'), so two files of the same name in two subfolders stay two documents.
Each document is one transaction (`ingest_files`): a kill leaves every document whole or absent.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rag import documents
from rag.chunking import ChunkSettings
from rag.errors import RagError
from rag.ingest.pipeline import (
    IngestResult,
    Source,
    StageCallback,
    document_name,
    expand_paths,
    ingest_files,
    unchanged,
    validate_kb_name,
)
from rag.text import Text

if TYPE_CHECKING:
    from rag.embeddings import CancelSignal, Embedder
    from rag.store import Store, StoredDocument

# (document name, what happened: an IngestResult, or "deleted"/"would ..." lines in a dry run)
LineCallback = Callable[[str], None]


@dataclass(frozen=True)
class SyncPlan:
    """What a sync would do, before anything is read past the file's bytes."""

    folder: Path
    new: tuple[tuple[str, Path], ...]
    changed: tuple[tuple[str, Path], ...]
    unchanged: tuple[str, ...]
    missing: tuple[str, ...]
    """Documents from this folder whose file is gone (deleted only with delete_missing)."""


@dataclass
class SyncReport:
    folder: str
    knowledge: str
    results: list[IngestResult] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept_missing: list[str] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(1 for r in self.results if not r.ok)

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    def summary(self, dry_run: bool = False) -> str:
        counts = {
            "new": self.count("stored"),
            "replaced": self.count("replaced"),
            "unchanged": self.count("unchanged"),
            "deleted": len(self.deleted),
            "failed": self.failed,
        }
        if self.kept_missing:
            parts = Text(
                "{new} new, {replaced} replaced, {unchanged} unchanged, {deleted} deleted, {failed} failed, "
                "{kept} missing kept (--delete-missing removes them)",
                kept=len(self.kept_missing),
                **counts,
            )
        else:
            parts = Text(
                "{new} new, {replaced} replaced, {unchanged} unchanged, {deleted} deleted, {failed} failed", **counts
            )
        if dry_run:
            return Text(
                "would sync {folder} into '{knowledge}': {counts}",
                folder=self.folder,
                knowledge=self.knowledge,
                counts=parts,
            )
        return Text(
            "synced {folder} into '{knowledge}': {counts}", folder=self.folder, knowledge=self.knowledge, counts=parts
        )


def _files(folder: Path) -> Iterator[tuple[str, Path]]:
    for path in expand_paths([folder]):
        # Office's lock files ("~$report.docx") and hidden files are not documents.
        if any(part.startswith((".", "~$")) for part in path.relative_to(folder).parts):
            continue
        yield document_name(folder, path), path


def _from_folder(doc: StoredDocument, folder: Path) -> bool:
    if not doc.path:
        return False
    try:
        return Path(doc.path).resolve().is_relative_to(folder)
    except (OSError, ValueError):
        return False


def plan(store: Store, folder: str | os.PathLike[str], knowledge: str, settings: ChunkSettings) -> SyncPlan:
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise RagError(
            Text("{folder}: not a folder (give the folder to keep the knowledge base in step with)", folder=str(folder))
        )
    knowledge = validate_kb_name(knowledge)
    stored = {d.original_filename: d for d in store.list_documents(knowledge)}
    new, changed, same = [], [], []
    seen: set[str] = set()
    for name, path in _files(root):
        seen.add(name)
        existing = stored.get(name)
        if existing is None:
            new.append((name, path))
            continue
        try:
            sha = documents.sha256_hex(path.read_bytes())
        except OSError:
            changed.append((name, path))  # the ingest says why it cannot be read
            continue
        (same.append(name) if unchanged(existing, sha, settings) else changed.append((name, path)))
    missing = tuple(sorted(n for n, d in stored.items() if n not in seen and _from_folder(d, root)))
    return SyncPlan(root, tuple(new), tuple(changed), tuple(same), missing)


def sync(
    store: Store,
    embedder: Embedder,
    folder: str | os.PathLike[str],
    knowledge: str,
    settings: ChunkSettings,
    *,
    delete_missing: bool = False,
    on_line: LineCallback | None = None,
    on_stage: Callable[[str], StageCallback] | None = None,
    cancel: CancelSignal | None = None,
) -> SyncReport:
    """Store new files, replace changed ones, leave unchanged ones, delete missing ones when asked;
    `on_line` hears one line per file, `on_stage(name)` gives the progress callback of each file."""
    steps = plan(store, folder, knowledge, settings)
    say = on_line or (lambda line: None)
    report = SyncReport(str(steps.folder), knowledge)
    for name in steps.unchanged:
        result = IngestResult(name, "unchanged")
        report.results.append(result)
        say(result.line())
    # The pipeline `rag ingest` runs: one file written while the next is read and embedded.
    sources = [Source.file(path, name) for name, path in steps.new + steps.changed]
    for result in ingest_files(store, embedder, sources, knowledge, settings, on_stage=on_stage, cancel=cancel):
        report.results.append(result)
        say(result.line())
    for name in steps.missing:
        if delete_missing:
            store.delete_document(knowledge, name)
            report.deleted.append(name)
            say(Text("{name}: deleted (its file is gone)", name=name))
        else:
            report.kept_missing.append(name)
            say(Text("{name}: missing from the folder, kept", name=name))
    if store.get_knowledge_base(knowledge) is not None:
        store.set_source_folder(knowledge, str(steps.folder))
    return report


def dry_run(
    store: Store,
    folder: str | os.PathLike[str],
    knowledge: str,
    settings: ChunkSettings,
    *,
    delete_missing: bool = False,
    on_line: LineCallback | None = None,
) -> SyncReport:
    """What `sync` would do, without reading a document or writing anything."""
    steps = plan(store, folder, knowledge, settings)
    say = on_line or (lambda line: None)
    report = SyncReport(str(steps.folder), knowledge)
    for name in steps.unchanged:
        result = IngestResult(name, "unchanged")
        report.results.append(result)
        say(result.line())
    for name, _ in steps.new:
        report.results.append(IngestResult(name, "stored"))
        say(Text("{name}: would be stored", name=name))
    for name, _ in steps.changed:
        report.results.append(IngestResult(name, "replaced"))
        say(Text("{name}: would be replaced (changed)", name=name))
    for name in steps.missing:
        (report.deleted if delete_missing else report.kept_missing).append(name)
        say(
            Text("{name}: would be deleted (its file is gone)", name=name)
            if delete_missing
            else Text("{name}: missing, would be kept", name=name)
        )
    return report
