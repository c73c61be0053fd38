"""Vectors kept on disk between runs, keyed by embedder name + sha256 of the text.

The retrieval benchmark embeds ~700 passages and ~1,500 questions per embedder: seconds with
wordllama, but minutes with multilingual-e5 (~3-9 chunks/s on 2 cores). Each text is embedded
once per embedder; later runs read the vectors back (one `.npz` per embedder under `folder`).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag.embeddings import Embedder, ProgressCallback

SAVE_EVERY = 64
"""Texts embedded between two saves: an interrupted first run with e5 (~10 s per 64 questions,
~60 s per 64 passages on 2 cores) keeps what it had embedded."""


def _digest(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


class DiskVectors:
    """The vectors of one embedder in `folder/<embedder name>.npz`; thread-safe."""

    def __init__(self, folder: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        self.path = Path(folder) / (re.sub(r"[^A-Za-z0-9._-]+", "_", embedder.name) + ".npz")
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.embedded = 0
        """Texts this object sent to the embedder (the rest came from disk)."""
        if self.path.exists():
            try:
                with np.load(self.path) as saved:
                    self._vectors = dict(zip(saved["keys"].tolist(), saved["vectors"]))
            except (OSError, ValueError, KeyError):
                self._vectors = {}  # unreadable (an interrupted write): embed again

    def vectors(
        self, texts: Sequence[str], kind: str = "passage", progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Rows for `texts` in order; `kind` ('passage' or 'query') keeps an embedder's two
        encodings of one text apart."""
        keys = [_digest(kind, t) for t in texts]
        with self._lock:
            missing = {k: t for k, t in zip(keys, texts) if k not in self._vectors}
        pending = list(missing.items())
        for start in range(0, len(pending), SAVE_EVERY):
            part = pending[start : start + SAVE_EVERY]
            batch = [text for _, text in part]
            if kind == "query" and hasattr(self.embedder, "embed_queries"):
                fresh = self.embedder.embed_queries(batch)
            else:
                fresh = self.embedder.embed(batch)
            with self._lock:
                self._vectors.update(zip((key for key, _ in part), np.asarray(fresh, dtype=np.float32)))
                self.embedded += len(part)
                self._save()
            if progress is not None:
                progress(start + len(part), len(pending))
        if not keys:
            return np.empty((0, self.embedder.dimension), dtype=np.float32)
        with self._lock:
            return np.stack([self._vectors[k] for k in keys])

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self._vectors)
        partial = self.path.with_suffix(".partial.npz")
        np.savez(partial, keys=np.array(keys), vectors=np.stack([self._vectors[k] for k in keys]))
        os.replace(partial, self.path)  # never a half-written file under the real name


class CachedEmbedder:
    """An embedder served from `DiskVectors`: same name and dimension, so a knowledge base built
    with the real one searches with it (`rag.retrieve.use_embedder`)."""

    def __init__(self, store: DiskVectors) -> None:
        self._store = store
        self._inner = store.embedder

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def max_input_tokens(self) -> int | None:
        return self._inner.max_input_tokens

    def embed(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        return self._store.vectors(texts, "passage", progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._store.vectors(texts, "query")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
