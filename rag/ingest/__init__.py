"""Ingest: file -> pages -> chunks -> embeddings -> rows (pipeline.py), and what the Upload page
can tell about it before anything is embedded (preview.py)."""
from __future__ import annotations

from rag.ingest.pipeline import (
    STAGES, IngestResult, Loaded, PlanCallback, Prepared, StageCallback, after_stop, embedder_for_kb, expand_paths, failure_reason,
    ingest_bytes, ingest_path, load, prepare, unchanged, validate_kb_name,
)
from rag.ingest.preview import (
    READ_TYPES, Blocker, Destiny, PlanNotes, all_fail, destiny, duration_note, embedder_blocker, ollama_model, plan_notes, unreadable_advice,
    warnings,
)

__all__ = [
    "READ_TYPES", "STAGES", "Blocker", "Destiny", "PlanNotes", "after_stop", "all_fail", "unreadable_advice", "IngestResult", "Loaded", "PlanCallback", "Prepared", "StageCallback", "destiny",
    "duration_note", "embedder_blocker", "embedder_for_kb", "expand_paths", "failure_reason", "ingest_bytes", "ingest_path",
    "load", "ollama_model", "plan_notes", "prepare", "unchanged", "validate_kb_name", "warnings",
]
