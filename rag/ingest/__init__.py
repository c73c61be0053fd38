"""Ingest: file -> pages -> chunks -> embeddings -> rows (pipeline.py), what the Upload page
can tell about it before anything is embedded (preview.py), and a folder kept in step (sync.py)."""
from __future__ import annotations

from rag.ingest.pipeline import (
    STAGES, IngestResult, Loaded, PlanCallback, Prepared, StageCallback, after_stop, embedder_for_kb, expand_paths, failure_reason,
    ingest_bytes, ingest_path, ingest_paths, load, prepare, unchanged, validate_kb_name,
)
from rag.ingest.preview import (
    READ_TYPES, Blocker, Destiny, PlanNotes, all_fail, destiny, duration_note, embedder_blocker, ollama_model, plan_notes, unreadable_advice,
    warnings,
)
from rag.ingest.sync import SyncPlan, SyncReport, dry_run, sync

__all__ = [
    "READ_TYPES", "STAGES", "SyncPlan", "SyncReport", "dry_run", "sync", "Blocker", "Destiny", "PlanNotes", "after_stop", "all_fail", "unreadable_advice", "IngestResult", "Loaded", "PlanCallback", "Prepared", "StageCallback", "destiny",
    "duration_note", "embedder_blocker", "embedder_for_kb", "expand_paths", "failure_reason", "ingest_bytes", "ingest_path", "ingest_paths",
    "load", "ollama_model", "plan_notes", "prepare", "unchanged", "validate_kb_name", "warnings",
]
