"""The export format's names and its manifest: what a file declares about itself, read and checked.

The manifest is the only part read before the rest is verified, so everything it says is checked for
type and range here (a hostile file writes whatever it likes in it); the parts are then held to it by
`rag.portable.reader`: their sizes, SHA-256 digests and record counts.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from rag.errors import RagError
from rag.store.schema import MAX_DIMENSION
from rag.text import Text

FORMAT = "rag-knowledge-base"
"""The manifest's `format`: what tells an export from any other zip with a manifest.json."""
VERSION = 1
"""The format version written, and the only one read: a later version adds a reader, never reinterprets."""

MANIFEST = "manifest.json"
DOCUMENTS = "documents.jsonl"
CHUNKS = "chunks.jsonl"
VECTORS = "vectors.f32"
QUESTIONS = "questions.jsonl"
QUESTION_RUNS = "question_runs.jsonl"
SOURCES = "sources/"
"""`sources/<document id>`: a document's source bytes as they were uploaded, one member each."""
PARTS = (DOCUMENTS, CHUNKS, VECTORS, QUESTIONS, QUESTION_RUNS)
"""The parts every export holds (empty ones too), besides the manifest and the sources."""

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class PortableFileError(RagError):
    """An export that is refused (corrupt, hostile or of another version), said in one line naming the file."""

    def __init__(self, file: str, reason: str) -> None:
        self.file = file
        self.reason = reason
        super().__init__(Text("{filename}: {reason}", filename=file, reason=reason))


def source_member(document_id: str) -> str:
    return SOURCES + document_id


def is_source_member(name: str) -> bool:
    """`sources/` followed by a document id in its canonical form (lower-case hex with dashes), nothing else."""
    return name.startswith(SOURCES) and _UUID.fullmatch(name[len(SOURCES) :]) is not None


@dataclass(frozen=True)
class Part:
    """One member of the zip as the manifest declares it: its unpacked size and SHA-256 (hex)."""

    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """What an export holds; `parts` names every member but the manifest itself."""

    name: str
    embedder: str
    dimension: int
    chunk_settings: dict[str, Any]
    source_folder: str | None
    created_at: str
    """When the knowledge base was made (ISO 8601), kept by an import."""
    documents: int
    chunks: int
    questions: int
    question_runs: int
    sources: bool
    """Whether `sources/<document id>` holds each document's bytes (else the import stores them empty)."""
    parts: dict[str, Part]
    exported_at: str
    version: int = VERSION

    def as_json(self) -> bytes:
        body = {
            "format": FORMAT,
            "version": self.version,
            "exported_at": self.exported_at,
            "knowledge_base": {
                "name": self.name,
                "embedder": self.embedder,
                "dimension": self.dimension,
                "chunk_settings": self.chunk_settings,
                "source_folder": self.source_folder,
                "created_at": self.created_at,
            },
            "counts": {
                "documents": self.documents,
                "chunks": self.chunks,
                "questions": self.questions,
                "question_runs": self.question_runs,
            },
            "sources": self.sources,
            "vectors": {"dtype": "float32", "byte_order": "little", "shape": [self.chunks, self.dimension]},
            "parts": {name: asdict(part) for name, part in sorted(self.parts.items())},
        }
        return json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8")


def _field(body: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str, file: str) -> Any:
    value = body.get(key)
    # bool is an int to Python; a count of `true` is not a count.
    if key not in body or not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        raise PortableFileError(
            file,
            Text(
                "{part}: {field} is missing or not {kind}",
                part=MANIFEST,
                field=f"{where}{key}",
                kind=" or ".join(k.__name__ for k in _kinds(kind)),
            ),
        )
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _count(body: dict[str, Any], key: str, where: str, file: str) -> int:
    value = int(_field(body, key, int, where, file))
    if value < 0:
        raise PortableFileError(
            file,
            Text("{part}: {field} is missing or not {kind}", part=MANIFEST, field=f"{where}{key}", kind="int >= 0"),
        )
    return value


def _time(value: str, field: str, file: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise PortableFileError(
            file, Text("{part}: {field} is missing or not {kind}", part=MANIFEST, field=field, kind="time")
        ) from None
    return value


def parse_manifest(data: bytes, file: str) -> Manifest:
    """The manifest of `file`, every field checked; PortableFileError names the first that is wrong."""
    try:
        body = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PortableFileError(
            file, Text("{part} is not JSON at line {line} ({error})", part=MANIFEST, line=1, error=str(exc))
        ) from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise PortableFileError(
            file, Text("not a knowledge base export (no manifest of format {format})", format=FORMAT)
        )
    version = body.get("version")
    if version != VERSION or isinstance(version, bool):
        raise PortableFileError(
            file,
            Text(
                "format version {version} is not one this version of RAG Knowledge Lab reads ({supported})",
                version=repr(version),
                supported=VERSION,
            ),
        )
    kb = _field(body, "knowledge_base", dict, "", file)
    counts = _field(body, "counts", dict, "", file)
    dimension = int(_field(kb, "dimension", int, "knowledge_base.", file))
    if not 0 < dimension <= MAX_DIMENSION:
        raise PortableFileError(
            file, Text("vector dimension {dimension} is invalid (1 to {most})", dimension=dimension, most=MAX_DIMENSION)
        )
    parts: dict[str, Part] = {}
    for name, declared in _field(body, "parts", dict, "", file).items():
        if not isinstance(declared, dict):
            raise PortableFileError(
                file,
                Text("{part}: {field} is missing or not {kind}", part=MANIFEST, field=f"parts.{name}", kind="dict"),
            )
        digest = str(_field(declared, "sha256", str, f"parts.{name}.", file))
        if _SHA256.fullmatch(digest) is None:
            raise PortableFileError(
                file,
                Text(
                    "{part}: {field} is missing or not {kind}",
                    part=MANIFEST,
                    field=f"parts.{name}.sha256",
                    kind="sha256",
                ),
            )
        parts[name] = Part(_count(declared, "size", f"parts.{name}.", file), digest)
    return Manifest(
        name=str(_field(kb, "name", str, "knowledge_base.", file)),
        embedder=str(_field(kb, "embedder", str, "knowledge_base.", file)),
        dimension=dimension,
        chunk_settings=dict(_field(kb, "chunk_settings", dict, "knowledge_base.", file)),
        source_folder=_field(kb, "source_folder", (str, type(None)), "knowledge_base.", file),
        created_at=_time(_field(kb, "created_at", str, "knowledge_base.", file), "knowledge_base.created_at", file),
        documents=_count(counts, "documents", "counts.", file),
        chunks=_count(counts, "chunks", "counts.", file),
        questions=_count(counts, "questions", "counts.", file),
        question_runs=_count(counts, "question_runs", "counts.", file),
        sources=bool(_field(body, "sources", bool, "", file)),
        parts=parts,
        exported_at=str(_field(body, "exported_at", str, "", file)),
    )
