"""Issue 18 (1): memory bounded by construction. A PDF whose pages repeat one content stream is refused
with one line; the one huge chunk Spring AI's splitter leaves after `max_num_chunks` is embedded from
its first characters (stored whole), so an ingest of it stays small, measured in a process of its own."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rag.documents import load_bytes
from rag.embeddings.local import LocalEmbedder
from rag.errors import DocumentError
from tests.conftest import ROOT
from tests.docgen import make_repeated_stream_pdf


def test_a_pdf_whose_pages_repeat_one_stream_is_refused_with_one_line() -> None:
    data = make_repeated_stream_pdf()
    assert len(data) < 40_000
    with pytest.raises(DocumentError) as info:
        load_bytes(data, "bomb.pdf")
    message = str(info.value)
    assert message.startswith("bomb.pdf: its text (")
    assert "is absurdly larger than the file" in message and "\n" not in message


def test_a_huge_text_is_embedded_from_its_first_characters_and_batches_stay_small() -> None:
    embedder = LocalEmbedder()
    huge = "Harbour log, night watch. " * 200_000  # 5.2 MB: what follows max_num_chunks in one chunk
    seen: list[list[int]] = []
    real = embedder._embed_batch

    def spy(batch: list[str]) -> np.ndarray:
        seen.append([len(t) for t in batch])
        return real(batch)

    embedder._embed_batch = spy  # type: ignore[method-assign]
    vectors = embedder.embed(["short one"] * 300 + [huge] + ["short two"] * 10)
    assert vectors.shape == (311, 256)
    assert max(max(b) for b in seen) == LocalEmbedder.MAX_CHARS
    assert all(len(b) * max(b) <= LocalEmbedder.PADDED_CHARS or len(b) == 1 for b in seen)
    np.testing.assert_allclose(vectors[300], embedder.embed([huge[: LocalEmbedder.MAX_CHARS]])[0], atol=1e-6)


PEAK_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    from rag.chunking import ChunkSettings
    from rag.embeddings.local import LocalEmbedder
    from rag.ingest import ingest_bytes
    from rag.store import Store
    text = ("Lighthouse keepers wrote the weather into a ledger every night. " * 160_000).encode()  # 10 MB
    store = Store(sys.argv[1])
    result = ingest_bytes(store, LocalEmbedder(), text, "ledger.txt", "memory-kb",
                          ChunkSettings(chunk_size=800, max_num_chunks=20))
    store.close()
    print(json.dumps({"status": result.status, "chunks": result.chunks,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


def test_ingesting_a_10_mb_text_whose_last_chunk_holds_most_of_it_stays_under_1_5_gb(store, pg_uri) -> None:  # noqa: ANN001
    # Before: the 9.9 MB last chunk was padded with its batch (20 x ~2.5 M tokens x 256 floats): gigabytes.
    done = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, pg_uri], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["status"] == "stored" and figures["chunks"] == 21
    assert figures["peak_mb"] < 1500, figures
    stored = store.find_document("memory-kb", "ledger.txt")
    assert stored.chunk_count == 21
