"""An export opened for import: every member checked before any is read, every part held to the manifest.

Opening (`Archive.open`) reads only the zip's directory and the manifest, and refuses at once what a
glance shows: not a zip, a member named with `..` or from the root, a member the format does not have
or has twice, encrypted or oddly compressed members, a manifest of another format or version, parts
whose sizes differ from the manifest's, a vectors part whose size is not chunks x dimension x 4, and a
zip bomb: unpacked sizes declared far above the file's own size (`MAX_RATIO`).

The parts are then read as streams (`records`, `vector_blocks`, `source`): a member never yields more
than the size its entry declares (zipfile stops there and checks the CRC at the end), a line is read
with a cap, and at the end of each part its SHA-256 and record count are compared with the manifest's.
So one full read (`rag.portable.importer` does it before it writes anything) proves the file whole, and
the second read, inside the import's transaction, proves it again: a file changed in between fails there,
and the transaction is rolled back.
"""

from __future__ import annotations

import hashlib
import json
import uuid
import zipfile
import zlib
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import numpy as np

from rag.portable.manifest import (
    CHUNKS,
    DOCUMENTS,
    MANIFEST,
    PARTS,
    QUESTION_RUNS,
    QUESTIONS,
    VECTORS,
    Manifest,
    PortableFileError,
    is_source_member,
    parse_manifest,
    source_member,
)
from rag.text import Text

MAX_RATIO = 100
"""Unpacked bytes allowed per byte of the file, all members together. A real export is far below it: the
vectors are stored as they are (1:1, and every chunk has one), a PDF's bytes barely shrink, and the JSONL
of chunk text shrinks 3-6x at deflate level 1: a whole export of 20,000 bench chunks (384-d) unpacked to
1.5x its size (chunks.jsonl 5.7x, its text drawn from 13 words). A deflate bomb reaches ~1000x. Only a
knowledge base of megabytes of one repeated character per chunk would be refused wrongly."""
SLACK_BYTES = 1 << 20
"""Unpacked bytes allowed above MAX_RATIO x the file's size, for a tiny export's manifest and JSONL."""
MAX_MANIFEST_BYTES = 64 << 20
"""The manifest lists every member (a source per document): 64 MB is ~500,000 documents."""
MAX_LINE_BYTES = 512 << 20
"""The longest JSONL record read: the one chunk Spring AI's splitter leaves past max_num_chunks can hold
most of a 200 MB file (rag.store.binary_copy.INDEXED_CHARS)."""
VECTOR_BLOCK_ROWS = 4_096

_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError)
"""What a corrupt member raises while it is read: a bad CRC or deflate stream, a truncated file."""


def _unsafe(name: str) -> bool:
    parts = name.split("/")
    return (
        name.startswith(("/", "\\"))
        or "\\" in name
        or ":" in parts[0]
        or any(part in ("", ".", "..") for part in parts)
        or any(ord(ch) < 32 for ch in name)
    )


class Archive:
    """An export file, its directory checked and its manifest read (`open`); close it when done."""

    def __init__(self, path: Path, archive: zipfile.ZipFile, manifest: Manifest) -> None:
        self.path = path
        self.file = str(path)
        self._zip = archive
        self.manifest = manifest

    @classmethod
    def open(cls, path: Path) -> Archive:
        file = str(path)
        try:
            size = path.stat().st_size
            archive = zipfile.ZipFile(path)
        except FileNotFoundError:
            raise PortableFileError(file, Text("no such file")) from None
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            if isinstance(exc, zipfile.BadZipFile) and str(exc) == "File is not a zip file":  # said once, not twice
                raise PortableFileError(file, Text("not a knowledge base export (not a zip file)")) from None
            raise PortableFileError(
                file, Text("not a zip file ({error})", error=str(exc) or type(exc).__name__)
            ) from None
        try:
            infos = cls._check_members(file, archive, size)
            manifest = cls._read_manifest(file, archive, infos)
            cls._check_parts(file, manifest, infos)
        except BaseException:
            archive.close()
            raise
        return cls(path, archive, manifest)

    @staticmethod
    def _check_members(file: str, archive: zipfile.ZipFile, size: int) -> dict[str, zipfile.ZipInfo]:
        infos: dict[str, zipfile.ZipInfo] = {}
        declared = 0
        for info in archive.infolist():
            name = info.filename
            if _unsafe(name) or _unsafe(info.orig_filename):
                raise PortableFileError(
                    file, Text("member {name} has an unsafe name (absolute, or with '..')", name=repr(name))
                )
            if name in infos:
                raise PortableFileError(file, Text("member {name} appears twice", name=repr(name)))
            if name != MANIFEST and name not in PARTS and not is_source_member(name):
                if not any(i.filename == MANIFEST for i in archive.infolist()):  # an ordinary zip, not a damaged export
                    raise PortableFileError(
                        file,
                        Text(
                            "not a knowledge base export (no manifest of format {format})",
                            format="rag-knowledge-base",
                        ),
                    )
                raise PortableFileError(file, Text("member {name} is not part of the format", name=repr(name)))
            if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise PortableFileError(
                    file,
                    Text("member {name} is encrypted or compressed in a way this format does not use", name=repr(name)),
                )
            infos[name] = info
            declared += info.file_size
        if declared > MAX_RATIO * size + SLACK_BYTES:
            raise PortableFileError(
                file,
                Text(
                    "its members declare {declared} bytes unpacked from a file of {size} bytes (over {ratio}x): "
                    "refused as a zip bomb",
                    declared=f"{declared:,}",
                    size=f"{size:,}",
                    ratio=MAX_RATIO,
                ),
            )
        return infos

    @staticmethod
    def _read_manifest(file: str, archive: zipfile.ZipFile, infos: dict[str, zipfile.ZipInfo]) -> Manifest:
        info = infos.get(MANIFEST)
        if info is None:
            raise PortableFileError(
                file, Text("not a knowledge base export (no manifest of format {format})", format="rag-knowledge-base")
            )
        if info.file_size > MAX_MANIFEST_BYTES:
            raise PortableFileError(
                file,
                Text(
                    "{part} declares {size} bytes, more than {most}",
                    part=MANIFEST,
                    size=f"{info.file_size:,}",
                    most=f"{MAX_MANIFEST_BYTES:,}",
                ),
            )
        try:
            with archive.open(info) as member:
                data = member.read(MAX_MANIFEST_BYTES + 1)
        except _READ_ERRORS as exc:
            raise PortableFileError(
                file, Text("{part} is corrupt ({error})", part=MANIFEST, error=str(exc) or type(exc).__name__)
            ) from None
        return parse_manifest(data, file)

    @staticmethod
    def _check_parts(file: str, manifest: Manifest, infos: dict[str, zipfile.ZipInfo]) -> None:
        for name in PARTS:
            if name not in infos:
                raise PortableFileError(file, Text("part {part} is missing", part=name))
        for name, info in infos.items():
            if name == MANIFEST:
                continue
            part = manifest.parts.get(name)
            if part is None:
                raise PortableFileError(file, Text("member {name} is not listed in the manifest", name=repr(name)))
            if part.size != info.file_size:
                raise PortableFileError(
                    file,
                    Text(
                        "{part} declares {declared} bytes in the manifest but {actual} in the zip",
                        part=name,
                        declared=f"{part.size:,}",
                        actual=f"{info.file_size:,}",
                    ),
                )
        for name in manifest.parts:
            if name not in infos:
                raise PortableFileError(file, Text("part {part} is missing", part=name))
        expected = manifest.chunks * manifest.dimension * 4
        if infos[VECTORS].file_size != expected:
            raise PortableFileError(
                file,
                Text(
                    "{part} holds {size} bytes, not {chunks} chunks x {dimension} dimensions x 4 = {expected}",
                    part=VECTORS,
                    size=f"{infos[VECTORS].file_size:,}",
                    chunks=f"{manifest.chunks:,}",
                    dimension=manifest.dimension,
                    expected=f"{expected:,}",
                ),
            )
        sources = sum(is_source_member(name) for name in infos)
        if sources != (manifest.documents if manifest.sources else 0):
            raise PortableFileError(
                file,
                Text(
                    "{part} holds {found} records, the manifest declares {declared}",
                    part="sources/",
                    found=sources,
                    declared=manifest.documents if manifest.sources else 0,
                ),
            )

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the parts, as streams held to the manifest ------------------------------------------

    def _part(self, name: str) -> _Part:
        return _Part(self, name)

    def _lines(self, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
        with self._part(name) as part:
            number = 0
            while line := part.readline(MAX_LINE_BYTES + 1):
                number += 1
                if len(line) > MAX_LINE_BYTES:
                    raise PortableFileError(
                        self.file,
                        Text(
                            "{part} line {line} is longer than {most} bytes",
                            part=name,
                            line=number,
                            most=f"{MAX_LINE_BYTES:,}",
                        ),
                    )
                try:
                    record = json.loads(line)
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise PortableFileError(
                        self.file,
                        Text("{part} is not JSON at line {line} ({error})", part=name, line=number, error=str(exc)),
                    ) from None
                if not isinstance(record, dict):
                    raise PortableFileError(
                        self.file,
                        Text(
                            "{part} line {line}: {field} is missing or not {kind}",
                            part=name,
                            line=number,
                            field="(record)",
                            kind="dict",
                        ),
                    )
                yield number, record

    def records(self, name: str) -> Iterator[dict[str, Any]]:
        """The records of JSONL part `name`, each checked and typed (ids as UUID, times as datetime); the
        part's checksum and count are checked at its end."""
        check = _CHECKS[name]
        declared = {
            DOCUMENTS: self.manifest.documents,
            CHUNKS: self.manifest.chunks,
            QUESTIONS: self.manifest.questions,
            QUESTION_RUNS: self.manifest.question_runs,
        }[name]
        count = 0
        for number, record in self._lines(name):
            count += 1
            if count > declared:
                break
            yield {key: _typed(self.file, name, number, record, key, kind) for key, kind in check}
        if count != declared:
            raise PortableFileError(
                self.file,
                Text(
                    "{part} holds {found} records, the manifest declares {declared}",
                    part=name,
                    found=f"{count:,}" if count <= declared else f"more than {declared:,}",
                    declared=f"{declared:,}",
                ),
            )

    def vector_blocks(self, rows: int = VECTOR_BLOCK_ROWS) -> Iterator[np.ndarray]:
        """The vectors in blocks of `rows` (float32, chunks.jsonl's order), each checked finite."""
        width = self.manifest.dimension * 4
        done = 0
        with self._part(VECTORS) as part:
            while data := part.read(rows * width):
                if len(data) % width:
                    raise PortableFileError(self.file, Text("{part} ends inside a vector", part=VECTORS))
                block = np.frombuffer(data, dtype="<f4").reshape(-1, self.manifest.dimension)
                finite = np.isfinite(block).all(axis=1)
                if not finite.all():
                    raise PortableFileError(
                        self.file,
                        Text(
                            "{part} holds a value that is not a finite number (chunk {index})",
                            part=VECTORS,
                            index=done + int(np.argmin(finite)) + 1,
                        ),
                    )
                done += len(block)
                yield block.astype(np.float32)

    def source(self, document_id: uuid.UUID) -> bytes:
        """A document's bytes (checked against the manifest); b'' when the export left them out."""
        if not self.manifest.sources:
            return b""
        name = source_member(str(document_id))
        if name not in self.manifest.parts:
            raise PortableFileError(self.file, Text("part {part} is missing", part=name))
        with self._part(name) as part:
            return part.read(-1)


class _Part:
    """One member being read: what is read is fed to its SHA-256, checked against the manifest when the whole
    member has been read and the block ends; a corrupt stream (bad CRC or deflate data) is refused in one line.
    A block left early (an error, a record too many) checks nothing: the caller is failing already."""

    def __init__(self, archive: Archive, name: str) -> None:
        self._archive = archive
        self.name = name
        self._digest = hashlib.sha256()
        self._member: IO[bytes] | None = None
        self._ended = False

    def __enter__(self) -> _Part:
        self._member = self._guard(lambda: self._archive._zip.open(self.name))
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if self._member is not None:
            self._member.close()
        if kind is None and self._ended and self._digest.hexdigest() != self._archive.manifest.parts[self.name].sha256:
            raise PortableFileError(
                self._archive.file,
                Text("the checksum of {part} does not match the manifest: the file is corrupt", part=self.name),
            )

    def _guard(self, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except _READ_ERRORS as exc:
            raise PortableFileError(
                self._archive.file,
                Text("{part} is corrupt ({error})", part=self.name, error=str(exc) or type(exc).__name__),
            ) from None

    def _fed(self, data: bytes, asked: int) -> bytes:
        self._digest.update(data)
        if not data or asked < 0:
            self._ended = True
        return data

    def read(self, size: int) -> bytes:
        assert self._member is not None, "read inside the with block"
        member = self._member
        return self._fed(self._guard(lambda: member.read(size)), size)

    def readline(self, limit: int) -> bytes:
        assert self._member is not None, "read inside the with block"
        member = self._member
        return self._fed(self._guard(lambda: member.readline(limit)), limit)


# The fields of each JSONL part's records and their kinds ("uuid", "uuid?", "time", or Python types).
_CHECKS: dict[str, tuple[tuple[str, Any], ...]] = {
    DOCUMENTS: (
        ("id", "uuid"),
        ("original_filename", str),
        ("path", (str, type(None))),
        ("sha256", str),
        ("size_bytes", int),
        ("page_count", int),
        ("chunk_count", int),
        ("chunk_settings", dict),
        ("ingested_at", "time"),
    ),
    CHUNKS: (("id", "uuid"), ("document_id", "uuid?"), ("content", str), ("metadata", dict)),
    QUESTIONS: (
        ("document", str),
        ("position", int),
        ("question", str),
        ("answer", str),
        ("answer_start", int),
        ("answer_end", int),
        ("language", str),
        ("created_at", "time"),
    ),
    QUESTION_RUNS: (
        ("ran_at", "time"),
        ("embedder", str),
        ("chunk_settings", dict),
        ("mode", str),
        ("questions", int),
        ("fingerprint", str),
        ("hit_at_1", (int, float)),
        ("hit_at_3", (int, float)),
        ("hit_at_5", (int, float)),
        ("mrr", (int, float)),
    ),
}


def _typed(file: str, part: str, line: int, record: dict[str, Any], key: str, kind: Any) -> Any:
    value = record.get(key)
    try:
        if key not in record:
            raise ValueError
        if kind == "uuid?" and value is None:
            return None
        if kind in ("uuid", "uuid?"):
            if not isinstance(value, str):
                raise ValueError
            return uuid.UUID(value)
        if kind == "time":
            if not isinstance(value, str):
                raise ValueError
            return datetime.fromisoformat(value)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError
        if isinstance(value, int) and not -(2**31) <= value < 2**31 and key != "size_bytes":
            raise ValueError  # an integer column of PostgreSQL
        return value
    except ValueError:
        shown = (
            kind
            if isinstance(kind, str)
            else " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        )
        raise PortableFileError(
            file,
            Text("{part} line {line}: {field} is missing or not {kind}", part=part, line=line, field=key, kind=shown),
        ) from None
