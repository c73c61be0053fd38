"""Export and import on the app's one background runner (rag.llms.stream.Runner), for the Library (issue #31).

A page keeps the job in its session, draws `view()` in a fragment while it runs, and shows the result: a
click elsewhere loses nothing, and no thread, file or transaction lives in the page. The files live in
`<data folder>/portable/`: the export that the page then offers for download (a zip of a million chunks is
gigabytes: on disk until it is asked for, not in the session), and an upload being imported (the importer
reads a zip at random, which Streamlit's in-memory upload would also allow, but `import_knowledge_base`
takes a path, as the CLI gives it). An upload's copy is deleted once imported or refused; an export stays
until the session's next export, or a day (`STALE_SECONDS`) for the export of a tab that was closed.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Generic, TypeVar

from rag.errors import RagError
from rag.llms.stream import Runner
from rag.portable.importer import ImportResult, NameTakenError, OtherEmbedderError, import_knowledge_base
from rag.portable.writer import ExportResult, Progress, export_knowledge_base
from rag.text import Text, text_of

if TYPE_CHECKING:
    from rag.settings import Settings
    from rag.store import Store

R = TypeVar("R")

FOLDER = "portable"
"""The folder under the data folder that holds exports for download and uploads being imported."""
STALE_SECONDS = 24 * 3600
"""A file in FOLDER this old is deleted when a job starts: an export of a tab that was closed, an upload
of a process that was killed. A day: long enough for any download to have been made."""
ESTIMATE_AFTER = 3.0
"""Seconds a stage runs before its time left is estimated (the first batches include a model's load)."""
UPLOAD_CHUNK = 1 << 20
"""Bytes copied at a time from an upload into its file."""


@dataclass(frozen=True)
class PortableView:
    """How far an export or an import got, for a page to draw."""

    stage: str
    """The stage being run: "documents", "chunks", "vectors", "questions" (export), "receive" (the upload
    copied to disk), "verify", "embed", "write", "index" (import: the HNSW index built after the rows, where the
    database had none of the dimension); "" before the first."""
    done: int
    total: int
    seconds_left: float | None
    """The stage's time left at its pace so far; None for its first few seconds."""
    running: bool
    error: str
    """The failure in one line (a `Text`), "" when none."""
    result: ExportResult | ImportResult | None

    @property
    def fraction(self) -> float:
        return min(self.done / self.total, 1.0) if self.total else 0.0


def folder(data_dir: Path) -> Path:
    """`<data_dir>/portable`, made (owner only: exports hold every document of a knowledge base) and swept of
    files older than STALE_SECONDS."""
    path = Path(data_dir) / FOLDER
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    now = time.time()
    for old in path.iterdir():
        try:
            if old.is_file() and now - old.stat().st_mtime > STALE_SECONDS:
                old.unlink()
        except OSError:  # another session's job took it first
            continue
    return path


class _Job(Generic[R]):
    """`work(progress)` on a background runner, started on construction; `view()` is safe from any thread."""

    def __init__(self, work: Callable[[Progress], R], *, name: str) -> None:
        self._lock = threading.Lock()
        self._stage, self._done, self._total = "", 0, 0
        self._stage_started = time.monotonic()

        def progress(stage: str, done: int, total: int) -> None:
            with self._lock:
                if stage != self._stage:
                    self._stage, self._stage_started = stage, time.monotonic()
                self._done, self._total = done, total

        def produce(stop: threading.Event) -> Iterable[R]:
            return [work(progress)]

        self._runner: Runner[R] = Runner(produce, name=name)

    @property
    def running(self) -> bool:
        return not self._runner.done

    def wait(self, timeout: float) -> bool:
        return self._runner.join(timeout)

    def view(self) -> PortableView:
        running = self.running  # read first: once done, what follows is all there is
        items = self._runner.items()
        with self._lock:
            stage, done, total, started = self._stage, self._done, self._total, self._stage_started
        elapsed = time.monotonic() - started
        left = (
            elapsed / done * (total - done) if running and done and total > done and elapsed > ESTIMATE_AFTER else None
        )
        result = items[-1] if items else None
        return PortableView(
            stage=stage,
            done=done,
            total=total,
            seconds_left=left,
            running=running,
            error="" if running else self._runner.error,
            result=result,  # type: ignore[arg-type]
        )


class ExportJob(_Job[ExportResult]):
    """`export_knowledge_base` of `name` into a new file in `<data_dir>/portable`; `path` is where it goes."""

    def __init__(self, store: Store, name: str, data_dir: Path, *, sources: bool = True) -> None:
        from rag.export import file_stem

        self.name = name
        self.path = folder(data_dir) / f"{file_stem(name)}-{uuid.uuid4().hex[:8]}.zip"
        path = self.path

        def work(progress: Progress) -> ExportResult:
            try:
                return export_knowledge_base(store, name, path, sources=sources, progress=progress)
            except OSError as exc:  # the data folder's disk is full, say: one line, as the CLI says it
                raise RagError(
                    Text("cannot write the export ({error})", error=exc.strerror or type(exc).__name__)
                ) from exc

        super().__init__(work, name="portable-export")

    def discard(self) -> None:
        """The export's file deleted (a new export replaces it, or it was never finished)."""
        self.path.unlink(missing_ok=True)


class ImportJob(_Job[ImportResult]):
    """`upload` (a file written by an export, e.g. Streamlit's UploadedFile) copied into `<data_dir>/portable`,
    imported with `import_knowledge_base`, and deleted. A refusal names the file as `filename` (as the user
    chose it), not the copy's path."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        upload: IO[bytes],
        filename: str,
        *,
        name: str | None = None,
        replace: bool = False,
        reembed: bool = False,
    ) -> None:
        self.filename = filename
        copy = folder(settings.data_dir) / f"import-{uuid.uuid4().hex}.zip"

        def work(progress: Progress) -> ImportResult:
            try:
                _receive(upload, copy, progress)
                return import_knowledge_base(
                    store, copy, settings=settings, name=name, replace=replace, reembed=reembed, progress=progress
                )
            except NameTakenError as exc:
                raise RagError(_name_taken(exc.name)) from exc
            except OtherEmbedderError as exc:
                raise RagError(_other_embedder(exc, filename)) from exc
            except RagError as exc:
                raise RagError(_renamed(text_of(exc), str(copy), filename)) from exc
            except OSError as exc:
                raise RagError(
                    Text("cannot keep the upload to import it ({error})", error=exc.strerror or type(exc).__name__)
                ) from exc
            finally:
                copy.unlink(missing_ok=True)

        super().__init__(work, name="portable-import")


# The Library's own words for the two refusals its controls overcome (the CLI's name its flags): each names
# the control by its label on the page, a Text that the page's catalogue translates as it does the label.
REPLACE = Text("Replace an existing knowledge base of that name")
IMPORT_AS = Text("Import as")
REEMBED = Text("Re-embed with the current embedder")


def _name_taken(name: str) -> Text:
    return Text(
        "a knowledge base named {name} exists already: tick “{replace}” to replace it, or type another name "
        "in “{import_as}”",
        name=repr(name),
        replace=REPLACE,
        import_as=IMPORT_AS,
    )


def _other_embedder(exc: OtherEmbedderError, filename: str) -> Text:
    return Text(
        "{file} was built with {built_with}, and knowledge base {name} would be searched with {current}: tick "
        "“{reembed}” to embed its chunks again with {current}, or run the app with RAG_EMBEDDER={built_with}",
        file=filename,
        built_with=exc.built_with,
        name=repr(exc.name),
        current=exc.current,
        reembed=REEMBED,
    )


def _receive(upload: IO[bytes], path: Path, progress: Progress) -> None:
    upload.seek(0, os.SEEK_END)
    total = upload.tell()
    upload.seek(0)
    done = 0
    progress("receive", 0, total)
    with open(path, "wb") as out:
        while data := upload.read(UPLOAD_CHUNK):
            out.write(data)
            done += len(data)
            progress("receive", done, total)


def _renamed(message: str, path: str, filename: str) -> str:
    """`message` with the copy's `path` said as the upload's `filename`, its template kept for translation."""
    if isinstance(message, Text):
        values: dict[str, Any] = {
            key: _renamed(value, path, filename) if isinstance(value, str) else value
            for key, value in message.values.items()
        }
        return Text(message.template, **values) if values else message
    return message.replace(path, filename)
