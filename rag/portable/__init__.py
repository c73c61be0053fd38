"""A knowledge base as one portable file: export it, import it into another database (issue #31).

The format, version 1: a zip (ZIP64 where needed) of
- `manifest.json`: `{"format": "rag-knowledge-base", "version": 1, "exported_at",
  "knowledge_base": {"name", "embedder", "dimension", "chunk_settings", "source_folder", "created_at"},
  "counts": {"documents", "chunks", "questions", "question_runs"}, "sources": bool,
  "vectors": {"dtype": "float32", "byte_order": "little", "shape": [chunks, dimension]},
  "parts": {member: {"size", "sha256"}}}`; every other member is listed under `parts` with its
  unpacked size and SHA-256;
- `documents.jsonl`: one document a line, `{"id", "original_filename", "path", "sha256", "size_bytes",
  "page_count", "chunk_count", "chunk_settings", "ingested_at"}`, in the order they were written;
- `sources/<document id>`: a document's bytes as uploaded, one member each (none with `sources: false`;
  an import then stores them empty, and the pages cannot be shown). Raw members rather than base64 in
  documents.jsonl: a third smaller, and a 200 MB PDF is not one 270 MB line of JSON;
- `chunks.jsonl`: one chunk a line, `{"id", "document_id", "content", "metadata"}` (`document_id` null
  for a row that other tools wrote without a document), documents in the order above, each one's chunks
  by index;
- `vectors.f32`: the chunks' embeddings in the same order, little-endian float32, chunks x dimension,
  nothing else (numpy: `np.fromfile(f, "<f4").reshape(chunks, dimension)`);
- `questions.jsonl` and `question_runs.jsonl`: the saved question set and its check runs
  (rag.store.question_sets), `{"document", "position", "question", "answer", "answer_start",
  "answer_end", "language", "created_at"}` and `{"ran_at", "embedder", "chunk_settings", "mode",
  "questions", "fingerprint", "hit_at_1", "hit_at_3", "hit_at_5", "mrr"}`.
The BM25 statistics are not stored: they follow from the chunks, and the import's writes rebuild them.
Times are ISO 8601 with their offset; ids are UUIDs in their canonical text.

`export_knowledge_base` (rag.portable.writer) writes it streamed; `import_knowledge_base`
(rag.portable.importer) checks all of it before it writes, and writes it in one transaction (the id
policy is in its docstring); `Archive` (rag.portable.reader) is how a file is read and held to its
manifest.
"""

from __future__ import annotations

from rag.portable.importer import ImportResult, embedder_for_import, import_knowledge_base
from rag.portable.manifest import FORMAT, VERSION, Manifest, Part, PortableFileError
from rag.portable.reader import Archive
from rag.portable.writer import ExportResult, Progress, contents, export_knowledge_base

__all__ = [
    "FORMAT",
    "VERSION",
    "Archive",
    "ExportResult",
    "ImportResult",
    "Manifest",
    "Part",
    "PortableFileError",
    "Progress",
    "contents",
    "embedder_for_import",
    "export_knowledge_base",
    "import_knowledge_base",
]
