"""How many CPU cores this process may use: its affinity, capped by a cgroup's CPU quota."""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path


@functools.cache
def usable_cores() -> int:
    """A container's cpuset and its `cpu.max` quota (cgroup v2) both cap it: `os.cpu_count()` gives the
    host's cores, and threads beyond the quota only take turns."""
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = max(1, min(cores, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return cores
