"""`ingest_paths` (what `rag ingest FOLDER` runs): one file written while the next is read and embedded,
results in the files' order, a bad file between good ones failing alone, every file whole."""

from __future__ import annotations

import threading
from pathlib import Path

from rag.chunking import ChunkSettings
from rag.embeddings.local import LocalEmbedder
from rag.ingest import ingest_paths

SETTINGS = ChunkSettings(chunk_size=120)


def test_results_come_in_order_and_each_file_is_whole(store, tmp_path: Path, monkeypatch) -> None:
    names = ["a.txt", "b.pdf", "c.txt", "missing.txt", "d.md"]
    (tmp_path / "a.txt").write_text("Harbour log. " * 300, encoding="utf-8")
    (tmp_path / "b.pdf").write_bytes(b"%PDF-1.7 truncated")  # fails in the parse stage
    (tmp_path / "c.txt").write_text("灯塔看守人每晚记录天气。" * 200, encoding="utf-8")
    (tmp_path / "d.md").write_text("# Tides\n\n" + "High water at dawn. " * 250, encoding="utf-8")
    writers: set[str] = set()
    heard_in: set[str] = set()
    stages: dict[str, list[str]] = {}
    real = store.write_document

    def write_document(**kwargs):
        writers.add(threading.current_thread().name)
        return real(**kwargs)

    def on_stage(name: str):
        def tick(stage: str, fraction: float, message: str) -> None:
            stages.setdefault(name, []).append(stage)
            heard_in.add(threading.current_thread().name)

        return tick

    monkeypatch.setattr(store, "write_document", write_document)

    results = list(
        ingest_paths(store, LocalEmbedder(), [tmp_path / n for n in names], "paths-kb", SETTINGS, on_stage=on_stage)
    )
    assert [r.filename for r in results] == names
    assert [r.status for r in results] == ["stored", "failed", "stored", "failed", "stored"]
    assert "No such file" in results[3].reason
    assert writers and all(name.startswith("rag-ingest-write") for name in writers)  # the writes ran beside the reads
    # ... and what the writer heard was said in the caller's thread, where a UI can draw it.
    assert heard_in == {threading.current_thread().name}
    for r in results:
        if r.ok:
            stored = store.find_document("paths-kb", r.filename)
            assert stored.chunk_count == r.chunks > 0
            assert stages[r.filename][-1] == "store"
    assert store.find_document("paths-kb", "b.pdf") is None
    # Again: nothing changed, nothing written twice.
    again = list(ingest_paths(store, LocalEmbedder(), [tmp_path / n for n in names], "paths-kb", SETTINGS))
    assert [r.status for r in again] == ["unchanged", "failed", "unchanged", "failed", "unchanged"]
