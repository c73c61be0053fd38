"""A knowledge base to export (documents, chunks, a row of no document, saved questions, a run), and
files made from an export the way a corrupt or hostile one would be."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from rag.chunking import Chunk
from rag.store import Store
from rag.store.question_sets import RunFigures, SavedQuestion, fingerprint

EMBEDDER = "local:wordllama-l2_supercat-256"
"""WordLlama's recorded name: the tests' settings (RAG_EMBEDDER=local:wordllama) search with it."""
DIM = 256
DOCS = {
    "harbour.txt": [
        "The lighthouse keeper logged every storm in the harbour ledger.",
        "Storm surges flooded the harbour twice; the keeper moved the ledger upstairs.",
        "Fishing boats stayed in port for a week while the storm passed.",
    ],
    "finance.md": [
        "Dividends were paid to shareholders after a record quarter.",
        "The quarter's revenue grew, and the board raised the dividend again.",
        "Operating costs fell slightly; the board approved a buyback.",
        'Line separators \u2028 and \u2029 and a "quoted" word, a tab\tand a newline\nstay as they are.',
    ],
    "假期.txt": [
        "节假日加班工资按照三倍计算，加班需要提前申请。",
        "年假天数根据工龄确定，工龄越长年假越多。",
    ],
}
TABLES = ("knowledge_bases", "documents", "vector_store", "kb_questions", "kb_question_runs", "bm25_terms")


def unit(rng: np.random.Generator, rows: int, dim: int = DIM) -> np.ndarray:
    v = rng.normal(size=(rows, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def build_kb(store: Store, kb: str = "harbour", *, embedder: str = EMBEDDER, dim: int = DIM, seed: int = 31) -> None:
    rng = np.random.default_rng(seed)
    for filename, texts in DOCS.items():
        data = ("\n".join(texts)).encode("utf-8") + b"\x00\xff binary tail"
        store.write_document(
            knowledge=kb,
            embedder=embedder,
            dimension=dim,
            chunk_settings={"strategy": "spring", "chunk_size": 128},
            filename=filename,
            path=f"/docs/{filename}",
            data=data,
            sha256=hashlib.sha256(data).hexdigest(),
            page_count=2,
            chunks=[Chunk(i, t, 12, i * 100, i * 100 + len(t), (i // 2 + 1,)) for i, t in enumerate(texts)],
            embeddings=unit(rng, len(texts), dim),
            extras=[{"location": f"p. {i // 2 + 1}"} for i in range(len(texts))],
        )
    store.set_source_folder(kb, "/docs")
    with store.connection() as conn:  # a row another tool (Spring AI) wrote: no document
        conn.execute(
            "INSERT INTO vector_store (id, content, metadata, embedding) VALUES (%s, %s, %s, %s)",
            (
                uuid.uuid4(),
                "A harbour row written by Spring AI.",
                Jsonb({"knowledge": kb, "source": "spring"}),
                unit(rng, 1, dim)[0],
            ),
        )
    questions = [SavedQuestion("Who logged the storms?", "The lighthouse keeper", 0, 21, "en", "harbour.txt")]
    store.question_sets.replace(kb, "harbour.txt", questions)
    store.question_sets.save_run(
        kb, RunFigures(embedder, {"chunk_size": 128}, "hybrid", 1, fingerprint(questions), 1.0, 1.0, 1.0, 1.0)
    )


def counts(store: Store) -> dict[str, int]:
    with store.connection() as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}  # type: ignore[index]


def snapshot(store: Store, kb: str) -> dict[str, Any]:
    """Everything of a knowledge base as stored, for comparing two databases; its BM25 statistics merged first
    (an import merges them in the background, a write leaves them pending)."""
    store.merge_bm25()
    with psycopg.connect(store.conninfo) as conn:
        q = conn.execute
        return {
            "kb": q(
                "SELECT embedder, dimension, chunk_settings, source_folder, created_at FROM knowledge_bases "
                "WHERE name = %s",
                (kb,),
            ).fetchall(),
            "documents": q(
                "SELECT id, original_filename, path, sha256, content, size_bytes, page_count, chunk_count, "
                "chunk_settings, ingested_at FROM documents WHERE knowledge = %s ORDER BY id",
                (kb,),
            ).fetchall(),
            "chunks": q(
                "SELECT id, content, metadata, embedding::text, document_id, search_text, fts::text FROM vector_store "
                "WHERE metadata->>'knowledge' = %s ORDER BY id",
                (kb,),
            ).fetchall(),
            "bm25": q("SELECT chunks, total_length FROM bm25_knowledge WHERE knowledge = %s", (kb,)).fetchall()
            + q("SELECT term, chunks FROM bm25_terms WHERE knowledge = %s ORDER BY term", (kb,)).fetchall(),
            "questions": q(
                "SELECT document, position, question, answer, answer_start, answer_end, language, created_at "
                "FROM kb_questions WHERE knowledge = %s ORDER BY document, position",
                (kb,),
            ).fetchall(),
            "runs": q(
                "SELECT ran_at, embedder, chunk_settings, mode, questions, fingerprint, hit_at_1, mrr "
                "FROM kb_question_runs WHERE knowledge = %s ORDER BY id",
                (kb,),
            ).fetchall(),
        }


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def rewrite(
    src: Path,
    dst: Path,
    *,
    replace: dict[str, bytes] | None = None,
    manifest: Callable[[dict[str, Any]], None] | None = None,
    fix_checksums: bool = True,
) -> Path:
    """`src` written again as `dst` with members replaced or added (their manifest entries made to match
    unless not `fix_checksums`) and the manifest edited by `manifest`."""
    parts = members(src)
    body = json.loads(parts.pop("manifest.json"))
    for name, data in (replace or {}).items():
        parts[name] = data
        if fix_checksums:
            body["parts"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if manifest is not None:
        manifest(body)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(body))
        for name, data in parts.items():
            z.writestr(name, data)
    return dst


def with_member(src: Path, dst: Path, name: str, data: bytes) -> Path:
    """`src` with one more member, written under `name` as given (no check of the name)."""
    dst.write_bytes(src.read_bytes())
    with zipfile.ZipFile(dst, "a", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, data)
    return dst


def declaring(dst: Path, manifest: dict[str, Any], vectors: bytes, declared_size: int) -> Path:
    """A zip of a manifest and a small vectors.f32 whose directory entry says it unpacks to `declared_size`
    bytes (a ZIP64 size, patched in after writing)."""
    buffer = io.BytesIO()
    limit = zipfile.ZIP64_LIMIT
    zipfile.ZIP64_LIMIT = 0  # every central directory entry gets a ZIP64 extra field with its sizes
    try:
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
            z.writestr("manifest.json", json.dumps(manifest))
            z.writestr("vectors.f32", vectors)
    finally:
        zipfile.ZIP64_LIMIT = limit
    data = bytearray(buffer.getvalue())
    entry = data.rindex(b"PK\x01\x02")  # the last central directory entry: vectors.f32
    name_len, _ = struct.unpack("<HH", data[entry + 28 : entry + 32])
    extra = entry + 46 + name_len
    tag, _ = struct.unpack("<HH", data[extra : extra + 4])
    assert tag == 1, "the ZIP64 extra field"
    data[extra + 4 : extra + 12] = struct.pack("<Q", declared_size)
    dst.write_bytes(bytes(data))
    return dst
