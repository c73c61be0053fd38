"""How much of a file this process holds in memory, from /proc/self/smaps (Linux): the tests of the model's
mapped weights (rag.llms.residency) read it in-process and in the subprocess that answers a question."""

from __future__ import annotations

import os
from pathlib import Path


def resident_kb(path: str | Path) -> int:
    """The kilobytes of `path`'s pages resident in this process's mappings of it (every mapping counted)."""
    kb, inside = 0, False
    target = " " + os.path.realpath(path)
    with open("/proc/self/smaps", encoding="utf-8") as smaps:
        for line in smaps:
            head = line.split(" ", 1)[0]
            if "-" in head and all(c in "0123456789abcdef-" for c in head):  # a mapping's first line
                inside = line.rstrip().endswith(target)
            elif inside and line.startswith("Rss:"):
                kb += int(line.split()[1])
    return kb
