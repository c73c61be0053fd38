"""LocalEmbedder: WordLlama running in-process, with weights shipped in its wheel (no network ever)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag.embeddings.vectors import check_texts, l2_normalise
from rag.errors import EmbedderError, one_line

if TYPE_CHECKING:
    from wordllama import WordLlamaInference

    from rag.embeddings import ProgressCallback

log = logging.getLogger(__name__)


class LocalEmbedder:
    """WordLlama (l2_supercat, 256-d): static token embeddings, mean-pooled, no network ever."""

    CONFIG = "l2_supercat"
    DIMENSION = 256
    NAME = f"local:wordllama-{CONFIG}-{DIMENSION}"

    def __init__(self, *, batch_size: int = 256) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._batch_size = batch_size
        self._model: WordLlamaInference | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalEmbedder(name={self.NAME!r})"

    @property
    def name(self) -> str:
        return self.NAME

    @property
    def dimension(self) -> int:
        return self.DIMENSION

    @property
    def max_input_tokens(self) -> int | None:
        return None  # mean pooling reads every token; there is no window to overflow

    def embed(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        items = check_texts(texts)
        total = len(items)
        if total == 0:
            return np.empty((0, self.DIMENSION), dtype=np.float32)
        model = self._load()
        parts: list[np.ndarray] = []
        for start in range(0, total, self._batch_size):
            batch = items[start : start + self._batch_size]
            try:
                parts.append(np.asarray(model.embed(batch, norm=False, batch_size=len(batch))))
            except Exception as exc:  # noqa: BLE001 - the library raises assorted types
                raise EmbedderError(
                    f"The local embedder failed ({type(exc).__name__}: {one_line(str(exc), 200)}): "
                    f"reinstall wordllama or use Ollama"
                ) from exc
            if progress is not None:
                progress(min(start + self._batch_size, total), total)
        return l2_normalise(np.concatenate(parts))

    def _load(self) -> WordLlamaInference:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                self._model = _load_wordllama(self.CONFIG, self.DIMENSION)
        return self._model


def _load_wordllama(config: str, dim: int) -> WordLlamaInference:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    except ImportError as exc:
        raise EmbedderError(
            "The local embedder needs the 'wordllama' package: run 'pip install wordllama'"
        ) from exc
    finally:
        # wordllama calls logging.basicConfig(level=INFO) on import, which would make every
        # library's INFO chatter appear on stderr; undo it when nobody had configured logging.
        if not handlers:
            for handler in root.handlers[:]:
                root.removeHandler(handler)
            root.setLevel(level)
    package_dir = Path(wordllama.__file__).parent
    try:
        # The weights ship inside the wheel; never let a missing file turn into a download.
        model = wordllama.WordLlama.load(
            config=config, dim=dim, cache_dir=package_dir, disable_download=True
        )
    except Exception as exc:  # noqa: BLE001 - FileNotFoundError, safetensors and tokenizer errors
        raise EmbedderError(
            f"The local embedder's weights could not be loaded from {package_dir} "
            f"({one_line(str(exc), 200)}): run 'pip install --force-reinstall wordllama'"
        ) from exc
    log.info("Loaded WordLlama %s (%d-d) from %s", config, dim, package_dir)
    return model
