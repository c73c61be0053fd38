"""What of the local chat model stays in the process's memory after a load and after an answer.

llama.cpp maps the GGUF file with MAP_POPULATE, so every page of it counts in the process's RSS from the
load on, also the token table's (`token_embd.weight`), of which a model with an output layer of its own reads
only the rows of the tokens in its prompts: 125 MB of Qwen2.5-Coder-1.5B's 1,117, of which three answers
read back ~1 MB (measured with /proc/self/smaps). `release_unread_rows` hands those pages back to the kernel,
and marks them read one page at a time when a row is needed (no read-ahead around it). Released only once the
load had returned, they stood in the RSS beside everything the load allocates after mapping the file:
`rows_released_while_loading` drops them as soon as they are mapped.

What malloc keeps after an answer is handed back by `rag.heap.hand_back_free_heap`.

It is Linux (glibc) only and does nothing elsewhere; failing, it logs and leaves memory as it was.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import os
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rag import heap

log = logging.getLogger(__name__)

_PAGE = mmap.PAGESIZE
_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
"""GGUF metadata value types by their byte size (8 is a string, 9 an array)."""
_STRING, _ARRAY = 8, 9


class _Header:
    """A cursor over a GGUF file's header, read from the file mapped (its 300,000 vocabulary strings are
    skipped in ~0.1 s this way; read through a file object it took 0.9 s)."""

    def __init__(self, data: mmap.mmap, name: str) -> None:
        self.data, self.name, self.at = data, name, 0

    def read(self, layout: str) -> tuple[int, ...]:
        size = struct.calcsize(layout)
        if self.at + size > len(self.data):
            raise ValueError(f"{self.name} ends inside its header")
        values = struct.unpack_from(layout, self.data, self.at)
        self.at += size
        return values

    def string(self) -> bytes:
        (length,) = self.read("<Q")
        self.at += length
        return self.data[self.at - length : self.at]

    def skip(self, kind: int) -> bytes | None:
        """Read past one metadata value; the bytes of a scalar (for the alignment), else None."""
        if kind == _STRING:
            self.string()
            return None
        if kind == _ARRAY:
            item, count = self.read("<IQ")
            if item == _STRING:
                unpack, at = struct.unpack_from, self.at
                for _ in range(count):
                    at += 8 + unpack("<Q", self.data, at)[0]
                self.at = at
            elif item == _ARRAY:
                for _ in range(count):
                    self.skip(item)
            elif item in _SCALAR_BYTES:
                self.at += _SCALAR_BYTES[item] * count
            else:
                raise ValueError(f"{self.name} has a metadata array of unknown type {item}")
            return None
        if kind not in _SCALAR_BYTES:
            raise ValueError(f"{self.name} has a metadata value of unknown type {kind}")
        self.at += _SCALAR_BYTES[kind]
        return self.data[self.at - _SCALAR_BYTES[kind] : self.at]


def tensor_spans(path: Path) -> dict[str, tuple[int, int]]:
    """Each tensor's byte range in a GGUF file (v2 or later): from its data's start to the next tensor's
    (the last one's to the file's end). ValueError when the file is not such a GGUF."""
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        header = _Header(data, path.name)
        if data[:4] != b"GGUF":
            raise ValueError(f"{path.name} is not a GGUF file")
        header.at = 4
        version, tensors, values = header.read("<IQQ")
        if version < 2:
            raise ValueError(f"{path.name} is GGUF version {version}, before 64-bit lengths")
        alignment = 32
        for _ in range(values):
            key = header.string()
            (kind,) = header.read("<I")
            value = header.skip(kind)
            if key == b"general.alignment" and value is not None and len(value) == 4:
                (alignment,) = struct.unpack("<I", value)
        offsets = []
        for _ in range(tensors):
            name = header.string().decode("utf-8")
            (dimensions,) = header.read("<I")
            header.at += 8 * dimensions + 4  # the shape, the type
            (offset,) = header.read("<Q")
            offsets.append((offset, name))
        start = -(-header.at // alignment) * alignment
        end = len(data)
    offsets.sort()
    bounds = [start + offset for offset, _ in offsets] + [end]
    if bounds != sorted(bounds):
        raise ValueError(f"{path.name}'s tensors lie beyond its end")
    return {name: (bounds[i], bounds[i + 1]) for i, (_, name) in enumerate(offsets)}


def _mappings(path: Path) -> list[tuple[int, int, int]]:
    """(start address, end address, file offset) of each of this process's mappings of `path`."""
    target = os.path.realpath(path)
    found = []
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].rstrip("\n") == target:
                low, high = (int(x, 16) for x in fields[0].split("-"))
                found.append((low, high, int(fields[2], 16)))
    return found


def _mapped_pages(path: Path, start: int, end: int) -> list[tuple[int, int]]:
    """(address, bytes) of the whole pages inside bytes [start, end) of `path` in each of this process's mappings
    of it."""
    found = []
    for low, high, offset in _mappings(path):
        first = -(-max(low, low + start - offset) // _PAGE) * _PAGE
        last = min(high, low + end - offset) // _PAGE * _PAGE
        if last > first:
            found.append((first, last - first))
    return found


def release_span(path: Path, start: int, end: int) -> int:
    """Drop the pages of bytes [start, end) of `path` from this process's mappings of it and from the page
    cache, and have later reads of them fault in one page at a time; the bytes released. Where the kernel mapped
    the file in large pieces (a 2 MB folio under one entry), the piece a span's edge cuts is unmapped whole and
    read again from the page cache when used."""
    libc = heap.libc()
    if libc is None:
        return 0
    released = 0
    for first, size in _mapped_pages(path, start, end):
        if libc.madvise(first, size, mmap.MADV_RANDOM) or libc.madvise(first, size, mmap.MADV_DONTNEED):
            log.warning("Could not release %s's pages: %s", path.name, os.strerror(ctypes.get_errno()))
            continue
        released += size
    if released and hasattr(os, "posix_fadvise"):
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(descriptor, start, end - start, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(descriptor)
    return released


_UNREADABLE = (OSError, ValueError, UnicodeDecodeError, KeyError)
"""What reading a GGUF file's tensors (`tensor_spans`) may raise."""


def _unread_rows(path: Path) -> tuple[int, int] | None:
    """The token table's byte range where the model has an output layer of its own (with tied weights the table
    is that layer, read whole for every token); None otherwise."""
    spans = tensor_spans(path)
    if "output.weight" not in spans or "token_embd.weight" not in spans:
        return None
    return spans["token_embd.weight"]


def _unmap_span(path: Path, start: int, end: int) -> None:
    """Drop the pages of bytes [start, end) of `path` from this process's mappings of it, nothing else: the page
    cache keeps them (a page touched again is mapped again from there, as a mapping being filled does)."""
    libc = heap.libc()
    if libc is None:
        return
    for first, size in _mapped_pages(path, start, end):
        libc.madvise(first, size, mmap.MADV_DONTNEED)


UNMAP_SECONDS = 0.02
"""How often the token table's pages are dropped while the model loads (`rows_released_while_loading`)."""


@contextmanager
def rows_released_while_loading(path: Path) -> Iterator[None]:
    """Within (the model's load): the token table's pages (`release_unread_rows`) are dropped from the process's
    mappings of `path` every `UNMAP_SECONDS` from the moment they are mapped. llama.cpp maps the whole file, then
    builds its context (the KV cache, the compute buffers): released after the load, the table stood beside
    those. Loading Qwen2.5-Coder-1.5B here (sampled every 2 ms): a peak of 1,247 MB, 131 MB over what stayed,
    the page cache cold or warm; 1,121-1,161 MB so. `bench --only sessions` with the page cache emptied first (the
    load then overlaps the first question): 1,535-1,537 MB before, 1,463-1,465 so. Only mappings are dropped: what
    the load reads of the table is read again from the page cache; `release_unread_rows` after the load does the
    rest."""
    try:
        rows = _unread_rows(path)
    except _UNREADABLE:
        rows = None  # release_unread_rows says why, after the load
    if rows is None or heap.libc() is None:
        yield
        return
    done = threading.Event()

    def unmap() -> None:
        while not done.wait(UNMAP_SECONDS):
            try:
                _unmap_span(path, *rows)
            except OSError:  # /proc unreadable: the release after the load still runs
                return

    watcher = threading.Thread(target=unmap, name="model-rows", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def release_unread_rows(path: Path) -> int:
    """Release the token table's pages where the model has an output layer of its own (with tied weights
    the table is that layer, read whole for every token); the bytes released."""
    try:
        rows = _unread_rows(path)
        if rows is None:
            return 0
        released = release_span(path, *rows)
    except _UNREADABLE as exc:
        log.warning("Kept the token table of %s in memory: %s", path.name, exc)
        return 0
    log.info("Released %.0f MB of %s's token table from memory", released / 2**20, path.name)
    return released
