"""Ctrl+C during `rag ingest`'s embedding: one line says how many chunks' vectors are kept and that the
same command run again resumes from there, and it does. In process (tests/clirun.py): WordLlama's model
raises KeyboardInterrupt in its third batch, as the signal would land in the middle of the embedding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag.embeddings import batches
from rag.embeddings.local import LocalEmbedder
from rag.store import Store
from tests.clirun import rag
from tests.ingest.test_resume import LOG


def test_ctrl_c_while_embedding_says_what_is_kept_and_the_same_command_resumes(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batches, "KEEP_AFTER_SECONDS_A_CHUNK", 0.0)  # WordLlama's batches are kept, as e5's would be
    monkeypatch.setattr(LocalEmbedder, "PADDED_CHARS", 1_200)  # small batches, so there are many
    embed_batch, seen, interrupt = LocalEmbedder._embed_batch, [], [True]

    def interrupted_third(self: LocalEmbedder, batch: list[str]) -> np.ndarray:
        seen.append(batch)
        if len(seen) == 3 and interrupt[0]:
            raise KeyboardInterrupt
        return embed_batch(self, batch)

    monkeypatch.setattr(LocalEmbedder, "_embed_batch", interrupted_third)
    log = tmp_path / "log.txt"
    log.write_bytes(LOG)
    command = ["ingest", str(log), "--kb", "harbour", "--chunk-size", "40", "--min-chunk-size-chars", "0"]

    stopped = rag(command)
    kept = sum(len(batch) for batch in seen[:2])
    assert stopped.returncode == 130 and stopped.stdout == ""
    assert store.find_document("harbour", "log.txt") is None and store.vector_cache.count() == kept
    last = stopped.stderr.strip().splitlines()[-1]

    seen.clear()
    interrupt[0] = False
    resumed = rag(command)
    assert resumed.returncode == 0, resumed.stderr
    document = store.find_document("harbour", "log.txt")
    assert document is not None
    total = document.chunk_count
    assert last == (
        f"interrupted: log.txt: {kept} of {total} chunks embedded are kept; "
        "run the same command again to resume from there"
    )
    assert resumed.stdout.strip().endswith(f"{kept} of {total} chunks were embedded by a stopped ingest and reused)"), (
        resumed.stdout
    )
    assert sum(len(batch) for batch in seen) == total - kept  # only the rest was embedded
