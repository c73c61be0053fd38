"""Ingest: file -> pages -> chunks -> embeddings -> rows (pipeline.py: `ingest_files`, the one path that
`rag ingest`, `rag sync` and the Upload page run), what the Upload page can tell about a file before
anything is embedded (preview.py), and a folder kept in step (sync.py)."""
from __future__ import annotations

from rag.ingest.pipeline import (
    STAGES, IngestResult, Loaded, PlanCallback, Prepared, Source, StageCallback, after_stop, embedder_for_kb, expand_paths,
    failure_reason, ingest_bytes, ingest_files, ingest_path, ingest_paths, load, prepare, results_after_stop, unchanged,
    validate_kb_name,
)
from rag.ingest.preview import (
    READ_TYPES, Blocker, Destiny, PlanNotes, all_fail, destiny, duration_note, embedder_blocker, ollama_model, plan_notes, unreadable_advice,
    warnings,
)
from rag.ingest.sync import SyncPlan, SyncReport, dry_run, sync

__all__ = [
    "READ_TYPES", "STAGES", "SyncPlan", "SyncReport", "dry_run", "sync", "Blocker", "Destiny", "PlanNotes", "after_stop", "all_fail", "unreadable_advice", "IngestResult", "Loaded", "PlanCallback", "Prepared", "Source", "StageCallback", "destiny",
    "duration_note", "embedder_blocker", "embedder_for_kb", "expand_paths", "failure_reason", "ingest_bytes", "ingest_files", "ingest_path",
    "ingest_paths", "load", "ollama_model", "plan_notes", "prepare", "results_after_stop", "unchanged", "validate_kb_name", "warnings",
]
