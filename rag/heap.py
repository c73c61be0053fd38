"""What glibc's malloc keeps of this process's memory, and when it maps a buffer of its own (Linux; nothing
elsewhere).

malloc keeps freed memory for its next requests: after three answers of the local chat model 57 MB of the app's
own memory were free yet held; `hand_back_free_heap` returns it (malloc_trim), run after each answer.

malloc also takes buffers up to 32 MB from a thread's heap once the process has freed one that large (its dynamic
mmap threshold, which every app that loaded a model has passed). Now and then a heap of the app's grew so by ~50 MB
for its first answer: `map_large_buffers` (the app, at start) maps buffers of `APP_MMAP_THRESHOLD` or more of their
own instead, unmapped when freed, and `buffers_in_heap` (an ingest) takes them from the heaps again while it runs,
where mapping and faulting in its arrays cost time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

APP_MMAP_THRESHOLD = 4 << 20
"""Bytes from which the app's buffers are mapped of their own (`map_large_buffers`). `bench --only sessions` (three
sessions that each asked a question): with glibc's dynamic threshold eleven runs peaked at 1,460-1,512 MB, six past
issue #32's 1,500 (a thread's heap held ~50 MB more through the first answer, /proc/<pid>/smaps); with this
threshold eleven runs at 1,447-1,453 MB (1 MB did no better). Set only around the model's answers it left one run of
five at 1,511 MB: the buffers are taken before (the question's embedding, the search)."""
HEAP_MMAP_THRESHOLD = 32 << 20
"""Where glibc's dynamic threshold ends (DEFAULT_MMAP_THRESHOLD_MAX, 64-bit): the threshold while an ingest runs
(`buffers_in_heap`). Our ingest's main process took ~10 % more CPU with `APP_MMAP_THRESHOLD` (the peers bench's
200 PDFs, four runs each in turn: its CPU 1.13-1.18x the read-ahead worker's, against 1.02-1.07x). The app's other
long work took as long either way (three runs each, in turn): a Chunk Lab sweep with e5 25.0-29.4 CPU s mapped
against 27.2-28.7 from the heaps (its system time +0.4 s, its minor faults 371-412 k against 165-241 k, its peak
RSS 364-372 MB against 377-406), a knowledge base import of 3,193 chunks 1.0-1.3 against 1.1-1.4 CPU s: they
keep the app's setting."""
_M_MMAP_THRESHOLD = -3
"""mallopt's parameter for the mmap threshold (glibc's malloc.h)."""

_libc: ctypes.CDLL | None = None
_lock = threading.Lock()
_base: int | None = None  # the threshold `map_large_buffers` set; None: glibc's own, never set here
_in_heap = 0  # ingests running (`buffers_in_heap`)


def libc() -> ctypes.CDLL | None:
    """The C library (glibc on Linux), None elsewhere."""
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            _libc.madvise.restype = ctypes.c_int
        except OSError:
            return None
    return _libc


def hand_back_free_heap() -> None:
    """Return the memory malloc holds free to the kernel (glibc's malloc_trim; nothing elsewhere)."""
    trim = getattr(libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)


def _set_threshold(threshold: int) -> bool:
    mallopt = getattr(libc(), "mallopt", None)
    return mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, threshold))


def map_large_buffers(threshold: int = APP_MMAP_THRESHOLD) -> bool:
    """From now on (but while an ingest runs) malloc maps buffers of `threshold` bytes or more of their own;
    whether it took the setting. For the app: idempotent, cheap."""
    global _base
    with _lock:
        _base = threshold
        return _in_heap > 0 or _set_threshold(threshold)


@contextmanager
def buffers_in_heap() -> Iterator[None]:
    """Within: buffers up to `HEAP_MMAP_THRESHOLD` come from malloc's heaps, where `map_large_buffers` had them
    mapped (the threshold is the process's: other threads' buffers too, meanwhile). Nothing where it was not set."""
    global _in_heap
    with _lock:
        _in_heap += 1
        if _in_heap == 1 and _base is not None:
            _set_threshold(HEAP_MMAP_THRESHOLD)
    try:
        yield
    finally:
        with _lock:
            _in_heap -= 1
            if _in_heap == 0 and _base is not None:
                _set_threshold(_base)
