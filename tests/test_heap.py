"""rag.heap: whether malloc gives a buffer a mapping of its own, read from glibc's own count of them
(mallinfo2's hblks) in a process of its own: glibc's dynamic threshold takes a second 8 MB buffer from the
heap, the app's setting maps it where the heap would have to grow for it, an ingest takes it from the heap again
while it runs (nested ones too), and the app's setting is back once the last ingest is over."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SCRIPT = """
import ctypes, json
from rag import heap

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                     "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = heap.libc()
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

def mapped(size):
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    during = libc.mallinfo2().hblks
    libc.free(block)
    return during > before

MB = 1 << 20
seen = {"first": mapped(8 * MB), "second": mapped(8 * MB)}
seen["set"] = heap.map_large_buffers()
heap.hand_back_free_heap()  # a buffer that fits in the heap's free memory is taken from it: none left
seen["app"] = [mapped(8 * MB), mapped(2 * MB)]
with heap.buffers_in_heap():
    seen["ingest"] = mapped(8 * MB)
    with heap.buffers_in_heap():
        seen["nested"] = mapped(8 * MB)
    seen["outer"] = mapped(8 * MB)
    heap.map_large_buffers()
    seen["app set again meanwhile"] = mapped(8 * MB)
heap.hand_back_free_heap()
seen["after"] = mapped(8 * MB)
print(json.dumps(seen))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt and mallinfo2 are glibc's")
def test_large_buffers_mapped_in_the_app_and_in_the_heap_while_an_ingest_runs() -> None:
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    # glibc's own: the first 8 MB buffer mapped, and once freed its threshold rises: the second from the heap.
    assert seen["first"] is True and seen["second"] is False
    assert seen["set"] is True
    assert seen["app"] == [True, False]  # 8 MB mapped, 2 MB (below APP_MMAP_THRESHOLD) from the heap
    assert seen["ingest"] is False and seen["nested"] is False
    assert seen["outer"] is False  # the inner ingest's end leaves the outer one's setting
    assert seen["app set again meanwhile"] is False
    assert seen["after"] is True
