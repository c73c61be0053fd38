"""LocalEmbedder: WordLlama running in-process, with weights shipped in its wheel (no network ever).

The fast local choice and the fallback where e5 cannot run: ~4,000 chunks of 800 tokens a second on 2
quiet cores (`_pooled`; e5: 9-25 chunks/s); weaker in retrieval, in Chinese above all (hit@5 0.72 against
e5's 0.95 on zh_c3)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag.embeddings import batches
from rag.errors import EmbedderError, one_line
from rag.text import Text

if TYPE_CHECKING:
    from tokenizers import Tokenizer
    from wordllama import WordLlamaInference

    from rag.embeddings import ProgressCallback
    from rag.embeddings.batches import CancelSignal
    from rag.embeddings.llama_tokens import LlamaIds

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
        self._unpadded: Tokenizer | None = None
        self._ids_of: LlamaIds | None = None
        self._lock = threading.Lock()

    name = NAME
    dimension = DIMENSION
    max_input_tokens = None
    """Mean pooling reads every token: there is no window to overflow (but see MAX_CHARS)."""
    MAX_CHARS = 16_000
    """Characters of a text it reads (about 4,000 tokens; the stored text stays whole): when WordLlama padded
    a batch to its longest text, the one chunk Spring AI's splitter leaves after max_num_chunks (1.16 MB
    from a 50 MB TXT) made a batch ask for 7.9 GB. The mean over 4,000 tokens stands for the rest (and keeps
    the vectors of knowledge bases built then)."""
    PADDED_CHARS = 1_000_000
    """A batch's count x its longest text, in characters (256 chunks of 800 tokens), a character beyond ASCII
    counting as 7 to 19 (`padded_length`): what WordLlama's padded batches held in memory (~250 MB). Texts are
    now pooled one at a time (`_pooled`), so this only sizes the batches: the steps of the progress bar and of
    a Stop."""

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, *, cancel: CancelSignal | None = None
    ) -> np.ndarray:
        def plan(items: list[str]) -> tuple[list[str], list[range]]:
            inputs = [t[: self.MAX_CHARS] for t in items]
            return inputs, batches.by_padded_size(
                [padded_length(t) for t in inputs], self._batch_size, self.PADDED_CHARS
            )

        return batches.embed_in_batches(texts, lambda: self.DIMENSION, plan, self._embed_batch, progress, cancel)

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        try:
            return self._pooled(batch)
        except EmbedderError:
            raise
        except MemoryError as exc:  # not a broken install: say what was too big
            raise EmbedderError(
                Text(
                    "The local embedder ran out of memory on {count} texts (the longest {chars} characters): "
                    "free memory or ingest fewer files at once",
                    count=len(batch),
                    chars=f"{max(map(len, batch), default=0):,}",
                )
            ) from exc
        except Exception as exc:
            raise EmbedderError(
                Text(
                    "The local embedder failed ({error}: {detail}): reinstall wordllama or use Ollama",
                    error=type(exc).__name__,
                    detail=one_line(str(exc), 200),
                )
            ) from exc

    def _pooled(self, batch: list[str]) -> np.ndarray:
        """What WordLlama's `embed(batch, norm=False)` gives (each text's mean token vector; an empty text's is
        zero), one text at a time: it gathers the batch's token vectors padded to the longest text (245 MB for
        256 chunks of 800 tokens), multiplies them by the padding mask into a second array as large and sums
        that: 310 ms a batch, against 17 ms for each text's own rows summed. The 11,074 chunks of
        `bench --only peers`: 9.1 s (10.7 CPU s) -> 3.1 s (4.6), most of it then the tokenizer, whose offsets
        are not asked for since (3,057 of those chunks: 1.04 -> 0.74 s) and whose work is mostly done without it now
        (`llama_tokens`). The same vectors (test_embeddings), so knowledge bases built before stay valid."""
        table = self._load().embedding
        vectors = np.zeros((len(batch), table.shape[1]), dtype=np.float32)
        for row, ids in zip(vectors, self._ids(batch)):
            if ids.size:
                np.clip(ids, 0, table.shape[0] - 1, out=ids)  # as WordLlama does
                # Each distinct token's row once, weighted by its count: 0.076 s for 1,707 chunks of the peers bench
                # against 0.118 s gathering a row per token and summing them (the same sums to 3e-7).
                tokens, counts = np.unique(ids, return_counts=True)
                np.dot(counts.astype(np.float32), table[tokens], out=row)
                row /= ids.size
        return vectors

    def _ids(self, batch: list[str]) -> list[np.ndarray]:
        """Each text's token ids, WordLlama's tokenizer's own, in no particular order (`llama_tokens`)."""
        return self._llama_ids().ids(batch)

    def _tokenizer(self) -> Tokenizer:
        """WordLlama's tokenizer without its padding (its `embed` pads every batch to the longest text)."""
        if self._unpadded is None:
            model = self._load()  # before the lock, which `_load` takes
            with self._lock:
                if self._unpadded is None:
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_str(model.tokenizer.to_str())
                    tokenizer.no_padding()
                    tokenizer.no_truncation()
                    self._unpadded = tokenizer
        return self._unpadded

    def _llama_ids(self) -> LlamaIds:
        if self._ids_of is None:
            tokenizer = self._tokenizer()
            with self._lock:
                if self._ids_of is None:
                    from rag.embeddings.llama_tokens import LlamaIds

                    self._ids_of = LlamaIds(tokenizer)
        return self._ids_of

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The same as passages: WordLlama has no query prefix."""
        return self.embed(texts)

    def _load(self) -> WordLlamaInference:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                self._model = _load_wordllama(self.CONFIG, self.DIMENSION)
        return self._model


def padded_length(text: str) -> int:
    """What `text` weighs in a padded batch, in English characters: WordLlama's tokenizer gives ~0.25
    token to an English character and up to 3 to a Chinese one (2.6 on average to characters drawn
    from the first 3,000 of the CJK block), so a character of n UTF-8 bytes counts as 1 + 6 (n - 1).
    Counted in plain characters, a batch holding the 16,000 characters read of a long Chinese chunk
    was padded to ~42,000 tokens for each of its up to 62 texts: up to 2.7 GB of token vectors
    (1.5 GB more than the rest of the ingest of a 200 MB Chinese TXT; issue 18)."""
    if text.isascii():
        return len(text)
    return len(text) + 6 * (len(text.encode("utf-8", "surrogatepass")) - len(text))


def _load_wordllama(config: str, dim: int) -> WordLlamaInference:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    except ImportError as exc:
        raise EmbedderError(
            Text("The local embedder needs the 'wordllama' package: run 'pip install wordllama'")
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
        model = wordllama.WordLlama.load(config=config, dim=dim, cache_dir=package_dir, disable_download=True)
    except Exception as exc:
        raise EmbedderError(
            Text(
                "The local embedder's weights could not be loaded from {folder} ({detail}): "
                "run 'pip install --force-reinstall wordllama'",
                folder=str(package_dir),
                detail=one_line(str(exc), 200),
            )
        ) from exc
    log.info("Loaded WordLlama %s (%d-d) from %s", config, dim, package_dir)
    return model


WordLlamaEmbedder = LocalEmbedder
"""The same class by the model's name, beside E5Embedder."""
