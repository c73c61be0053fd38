"""What the store returns: frozen records, and the metadata written with every chunk.

No database import here, so that code which only handles hits (fusion, prompts) stays light.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rag.text import Text, place_in_file

if TYPE_CHECKING:
    from rag.chunking import Chunk


@dataclass(frozen=True)
class ServerInfo:
    embedded: bool
    location: str
    postgres_version: str
    pgvector_version: str


@dataclass(frozen=True)
class KnowledgeBase:
    name: str
    embedder: str
    dimension: int
    chunk_settings: dict[str, Any]
    created_at: datetime
    documents: int
    chunks: int
    source_folder: str | None = None
    """The folder `rag sync` keeps it in step with; None when built from uploads."""


@dataclass(frozen=True)
class StoredDocument:
    id: uuid.UUID
    knowledge: str
    original_filename: str
    path: str | None
    sha256: str
    size_bytes: int
    page_count: int
    chunk_count: int
    chunk_settings: dict[str, Any]
    ingested_at: datetime


@dataclass(frozen=True)
class Copy:
    """Where else a hit's passage stands: a chunk of another document (or place) that holds it too, left out of
    the results (rag.retrieve.copies)."""

    filename: str
    pages: tuple[int, ...] = ()
    location: str = ""
    """The chunk's own `location` (a slide, a sheet, a heading path); '' where its pages say where it is."""

    @property
    def label(self) -> str:
        """'report.pdf pp. 8–9', as a citation names a place."""
        return f"{self.filename} {place_in_file(self.location, self.pages)}".strip()

    def as_dict(self) -> dict[str, Any]:
        return {"filename": self.filename, "pages": list(self.pages), "location": self.location}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Copy:
        return cls(
            str(data.get("filename", "")),
            tuple(int(p) for p in data.get("pages") or ()),
            str(data.get("location") or ""),
        )


@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    content: str
    metadata: dict[str, Any]
    score: float
    """The ranking score of the search that found it: cosine similarity (vector), the BM25 score
    (keyword: 0 and up, higher is better, not bounded by 1; on the shared eval sets the best hit's
    median is 17 in English and 35-41 in Chinese, the fifth's 6-9) or the fused score (hybrid,
    see rag.retrieve.fusion)."""
    vector_score: float | None = None
    keyword_score: float | None = None
    fused_rank: int | None = None
    """1-based rank in the hybrid ranking; None outside hybrid search."""
    vector_rank: int | None = None
    """1-based rank among the vector search's candidates; None where it did not find this chunk."""
    keyword_rank: int | None = None
    """1-based rank among the keyword search's candidates; None where it did not find this chunk."""
    found_by: str | None = None
    """Of several searches fused (a follow-up's rewrite, or where none was used the question after the one before
    it, and its question as asked: "rewrite" or "with previous", "question"), the one whose ranks and scores these
    are; None for a single search."""
    copies: tuple[Copy, ...] = ()
    """Where else the search found this passage: copies of it in other chunks, left out of the results
    (rag.retrieve.copies)."""

    @property
    def knowledge(self) -> str:
        return str(self.metadata.get("knowledge", ""))

    @property
    def original_filename(self) -> str:
        return str(self.metadata.get("original_filename", ""))

    @property
    def pages(self) -> tuple[int, ...]:
        return tuple(self.metadata.get("pages") or ())

    @property
    def location(self) -> str:
        """Where the chunk is, for a citation: 'slide 3', 'sheet Sales', 'Report › Results', or the
        pages ('p. 4', 'pp. 4–5'); '' when unknown."""
        return place_in_file(str(self.metadata.get("location") or ""), self.pages)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": str(self.id),
            "score": round(self.score, 6),
            "content": self.content,
            "metadata": self.metadata,
        }
        if self.vector_score is not None:
            out["vector_score"] = round(self.vector_score, 6)
        if self.keyword_score is not None:
            out["keyword_score"] = round(self.keyword_score, 6)
        for key in ("fused_rank", "vector_rank", "keyword_rank", "found_by"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.copies:
            out["copies"] = [c.as_dict() for c in self.copies]
        out["ranking"] = self.ranking
        return out

    @property
    def ranking(self) -> str:
        """Where each search put this chunk, for people: "hybrid #2 · vector #3 (0.82) · keyword #1 (BM25 7.4)".

        A fused score alone (0.03) reads as "irrelevant"; ranks with their own scores do not.
        """
        parts = [f"hybrid #{self.fused_rank}"] if self.fused_rank is not None else []
        for name, rank, score in (
            ("vector", self.vector_rank, self.vector_score),
            ("keyword", self.keyword_rank, self.keyword_score),
        ):
            if rank is not None:
                shown = "" if score is None else f" ({score:.2f})" if name == "vector" else f" (BM25 {score:.1f})"
                parts.append(f"{name} #{rank}{shown}")
            elif self.fused_rank is not None:
                parts.append(f"{name}: not found")
        shown = " · ".join(parts) or f"score {self.score:.3f}"
        return shown if self.found_by is None else f"{self.found_by}: {shown}"


@dataclass(frozen=True)
class WriteResult:
    status: str
    """`stored`, `replaced` or `unchanged`."""
    document_id: uuid.UUID
    chunks: int


def chunk_metadata(
    knowledge: str, filename: str, path: str | None, document_id: uuid.UUID, chunk: Chunk
) -> dict[str, Any]:
    """The `metadata` jsonb of a chunk row (Spring AI's keys first: knowledge, original_filename, path)."""
    return {
        "knowledge": knowledge,
        "original_filename": filename,
        "path": path,
        "page": chunk.pages[0] if chunk.pages else None,
        "pages": list(chunk.pages),
        "chunk_index": chunk.index,
        "document_id": str(document_id),
        "tokens": chunk.tokens,
        "start": chunk.start,
        "end": chunk.end,
    }


def mismatch_message(knowledge: str, built_with: str, current: str) -> Text:
    return Text(
        "knowledge base '{knowledge}' was built with {built_with}, not {current}: "
        "use RAG_EMBEDDER={built_with}, or choose another knowledge base name",
        knowledge=knowledge,
        built_with=built_with,
        current=current,
    )
