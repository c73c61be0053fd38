"""A child process that writes one document of 100 chunks and is SIGKILLed where `patch` says."""

from __future__ import annotations

import subprocess
import textwrap

from tests.conftest import PYTHON, ROOT

DIE_AT_CHUNK_50 = """
    real = s.chunk_metadata
    def dying(*args):
        if args[-1].index == 50:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args)
    s.chunk_metadata = dying
    """
"""Dies while the chunks' rows are being made (inside the COPY)."""


def killed_write(
    pg_uri: str, patch: str, *, text: str, dimension: int, filename: str, data: bytes
) -> subprocess.CompletedProcess[bytes]:
    """Run the write in a child with `patch` applied to `rag.store.store` (imported as `s`), with
    `os` and `signal` at hand; chunk i's text is `text` formatted with i."""
    script = (
        textwrap.dedent("""
        import os, signal, numpy as np
        import rag.store.store as s  # the module whose Store writes the rows
        from rag.chunking import Chunk
        """)
        + textwrap.dedent(patch)
        + textwrap.dedent(f"""
        store = s.Store({pg_uri!r})
        chunks = [Chunk(i, {text!r}.format(i), 1, 0, 1, (1,)) for i in range(100)]
        store.write_document(knowledge="killed", embedder="local:test", dimension={dimension},
            chunk_settings={{}}, filename={filename!r}, path=None, data={data!r}, sha256={data.decode()!r},
            page_count=1, chunks=chunks, embeddings=np.ones((100, {dimension}), dtype=np.float32))
        """)
    )
    return subprocess.run([PYTHON, "-c", script], cwd=ROOT, capture_output=True, timeout=120)
