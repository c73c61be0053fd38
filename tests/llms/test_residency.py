"""rag.llms.residency: tensors found in a GGUF header the test writes, a mapped file's pages handed back
and read again, and the token table released only where the model has an output layer of its own."""

from __future__ import annotations

import json
import mmap
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rag.llms import residency
from tests.conftest import ROOT
from tests.smaps import resident_kb

PAGE = mmap.PAGESIZE


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(path: Path, tensors: dict[str, int], *, alignment: int = 32) -> dict[str, tuple[int, int]]:
    """A GGUF v3 file with metadata of every shape the reader skips and `tensors` (name: data bytes) laid
    out in order; the byte range each tensor's data takes."""
    values = [
        _string("general.architecture") + struct.pack("<I", 8) + _string("qwen2"),
        _string("general.alignment") + struct.pack("<I", 4) + struct.pack("<I", alignment),
        _string("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", 9, 8, 3)
        + b"".join(_string(t) for t in ("<s>", "你好", "world")),
        _string("tokenizer.ggml.token_type") + struct.pack("<IIQ", 9, 5, 3) + struct.pack("<3i", 1, 1, 1),
        _string("qwen2.rope.freq_base") + struct.pack("<I", 6) + struct.pack("<f", 1e6),
        _string("general.flag") + struct.pack("<I", 7) + b"\x01",
    ]
    infos, offset, offsets = [], 0, {}
    for name, size in tensors.items():
        infos.append(_string(name) + struct.pack("<I", 2) + struct.pack("<QQ", size, 1) + struct.pack("<I", 0))
        infos[-1] += struct.pack("<Q", offset)
        offsets[name] = (offset, size)
        offset += -(-size // alignment) * alignment
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(values)) + b"".join(values) + b"".join(infos)
    start = -(-len(header) // alignment) * alignment
    path.write_bytes(header + b"\0" * (start - len(header)) + bytes(offset))
    names = list(tensors)
    return {
        name: (start + offsets[name][0], start + offsets[names[i + 1]][0] if i + 1 < len(names) else start + offset)
        for i, name in enumerate(names)
    }


def test_each_tensors_bytes_are_read_from_the_header(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    expected = write_gguf(path, {"output.weight": 5000, "token_embd.weight": 70_000, "blk.0.w": 100}, alignment=64)
    assert residency.tensor_spans(path) == expected
    assert expected["token_embd.weight"][0] % 64 == 0


def test_a_file_that_is_no_gguf_or_ends_in_its_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    write_gguf(path, {"output.weight": 64})
    whole = path.read_bytes()
    path.write_bytes(b"GGML" + whole[4:])
    with pytest.raises(ValueError, match="is not a GGUF file"):
        residency.tensor_spans(path)
    path.write_bytes(whole[:60])
    with pytest.raises(ValueError, match="ends inside its header"):
        residency.tensor_spans(path)
    assert residency.release_unread_rows(path) == 0  # logged, nothing released


HUGE_KB = 2 * 1024
"""A file's pages may be mapped 2 MB at a time (a large folio under one page-table entry); splitting such a
mapping at a released span's edge unmaps that whole piece, to be read again from the page cache when used."""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise and /proc/self/smaps are Linux's")
def test_released_pages_leave_the_process_and_read_back_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    data = bytes(range(256)) * (16 * 2**20 // 256)  # 16 MB
    path.write_bytes(data)
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        checksum = sum(mapped[i] for i in range(0, len(mapped), PAGE))  # every page touched
        before = resident_kb(path)
        assert before == 16 * 1024
        released = residency.release_span(path, 4 * 2**20 + 100, 12 * 2**20)
        assert released == 8 * 2**20 - PAGE  # whole pages inside the span only: the first is partly outside
        after = resident_kb(path)
        assert before - released // 1024 - 2 * HUGE_KB <= after <= before - released // 1024
        assert mapped[6 * 2**20 + 17] == data[6 * 2**20 + 17]  # a row read again, from the file
        assert mapped[:] == data and sum(mapped[i] for i in range(0, len(mapped), PAGE)) == checksum
        assert residency.release_span(tmp_path / "unmapped.bin", 0, 2**20) == 0  # no mapping of it: nothing


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise and /proc/self/smaps are Linux's")
def test_the_token_table_is_released_only_beside_an_output_layer_of_its_own(tmp_path: Path) -> None:
    untied, tied = tmp_path / "untied.gguf", tmp_path / "tied.gguf"
    spans = write_gguf(untied, {"output.weight": 4 * 2**20, "token_embd.weight": 8 * 2**20, "blk.0.w": 4 * 2**20})
    write_gguf(tied, {"token_embd.weight": 8 * 2**20, "blk.0.w": 4 * 2**20})
    with (
        open(untied, "rb") as a,
        mmap.mmap(a.fileno(), 0, access=mmap.ACCESS_READ) as first,
        open(tied, "rb") as b,
        mmap.mmap(b.fileno(), 0, access=mmap.ACCESS_READ) as second,
    ):
        for mapped in (first, second):
            sum(mapped[i] for i in range(0, len(mapped), PAGE))
        before = resident_kb(untied), resident_kb(tied)
        released = residency.release_unread_rows(untied)
        start, end = spans["token_embd.weight"]
        assert released == (end // PAGE - -(-start // PAGE)) * PAGE > 0
        assert before[0] - released // 1024 - 2 * HUGE_KB <= resident_kb(untied) <= before[0] - released // 1024
        assert residency.release_unread_rows(tied) == 0  # tied: the table is the output layer, read whole
        assert resident_kb(tied) == before[1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise and /proc/self/smaps are Linux's")
def test_the_token_table_leaves_while_the_model_still_loads(tmp_path: Path) -> None:
    """The load maps the file and goes on (its context, its buffers): the table's pages are gone before it ends,
    the other tensors' stay, and every byte still reads back."""
    path = tmp_path / "untied.gguf"
    spans = write_gguf(path, {"output.weight": 4 * 2**20, "token_embd.weight": 8 * 2**20, "blk.0.w": 4 * 2**20})
    data = path.read_bytes()
    start, end = spans["token_embd.weight"]
    table_kb = (end // PAGE - -(-start // PAGE)) * PAGE // 1024
    with (
        residency.rows_released_while_loading(path),
        open(path, "rb") as file,
        mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped,
    ):
        sum(mapped[i] for i in range(0, len(mapped), PAGE))  # as MAP_POPULATE maps every page
        whole = len(mapped) // 1024
        deadline = time.monotonic() + 5
        while resident_kb(path) > whole - table_kb + 2 * HUGE_KB and time.monotonic() < deadline:
            time.sleep(residency.UNMAP_SECONDS)
        held = resident_kb(path)  # still inside the load
        assert whole - table_kb - 2 * HUGE_KB <= held <= whole - table_kb + 2 * HUGE_KB
        assert mapped[:] == data
    # Not where the table is the output layer too (tied), nor for a file that is no GGUF: nothing dropped.
    tied = tmp_path / "tied.gguf"
    write_gguf(tied, {"token_embd.weight": 8 * 2**20, "blk.0.w": 4 * 2**20})
    for other in (tied, tmp_path / "missing.gguf"):
        with residency.rows_released_while_loading(other):
            if other.exists():
                with open(other, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                    sum(mapped[i] for i in range(0, len(mapped), PAGE))
                    mapped_kb = resident_kb(other)
                    time.sleep(5 * residency.UNMAP_SECONDS)
                    assert resident_kb(other) == mapped_kb >= len(mapped) // 1024
    assert not [t for t in threading.enumerate() if t.name == "model-rows"]


FREED_SCRIPT = """
import json
from rag import heap

def own_kb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon:"))

blocks = [bytearray(100_000) for _ in range(1000)]  # 100 MB on malloc's heap (each below its mmap threshold)
del blocks[::2]  # 50 MB free between blocks still held: malloc keeps it
held = own_kb()
heap.hand_back_free_heap()
print(json.dumps({"held": held, "after": own_kb()}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_free_memory_malloc_keeps_is_handed_back() -> None:
    run = subprocess.run(
        [sys.executable, "-c", FREED_SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["held"] - found["after"] > 30 * 1024, found
