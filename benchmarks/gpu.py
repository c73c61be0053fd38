"""The GPU sampler's cost per tick against the two NVML calls every GPU monitor makes.

A monitor that samples twice a second must cost next to nothing. The peer (nvitop, gpustat) reads
nvmlDeviceGetMemoryInfo and nvmlDeviceGetUtilizationRates per GPU; the sampler reads those two on
every tick and spreads the rest over its `Cadence`, so whole cadence periods are timed against the
bare calls, in the same process and interleaved in rounds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rag.gpu.nvml import NvmlFactory, load_pynvml
from rag.gpu.sampler import INTERVAL, GpuSampler
from rag.llms.telemetry import Timeline


@dataclass(frozen=True)
class TickCost:
    devices: int
    ticks: int
    ours: float
    """Seconds per sampler tick (best of the rounds)."""
    peer: float
    """Seconds per round of bare nvmlDeviceGetMemoryInfo + nvmlDeviceGetUtilizationRates on every GPU."""
    skipped: str = ""
    """Why nothing was measured (no GPU), else ''."""

    @property
    def ratio(self) -> float:
        return self.ours / self.peer if self.peer > 0 else float("inf")


def tick_cost(nvml: NvmlFactory = load_pynvml, *, ticks: int = 1000, rounds: int = 5) -> TickCost:
    """The sampler's cost per tick against the two NVML calls every monitor makes, in the same
    process and interleaved in rounds; a whole number of cadence periods is timed per round.

    The bare calls go through an NVML session of their own (NVML counts its initialisations, so
    both sessions share the one library) on the devices the sampler's first tick could read."""
    if ticks < 1 or rounds < 1:
        raise ValueError(f"ticks and rounds must be >= 1, got ticks={ticks!r}, rounds={rounds!r}")
    sampler = GpuSampler(nvml, window=INTERVAL * 16, timeline=Timeline())
    status = sampler.open()
    try:
        if not status.available:
            return TickCost(0, 0, 0.0, 0.0, skipped=f"no GPU to sample ({status.reason})")
        period = sampler.cadence.period
        n = max(period, ticks - ticks % period)
        first = sampler.tick()  # the first tick reads everything
        alive = [d.index for d in first.devices if d.error is None]
        real = nvml()
        real.nvmlInit()
        try:
            handles = [real.nvmlDeviceGetHandleByIndex(index) for index in alive]
            ours = peer = float("inf")
            for _ in range(rounds):
                begin = time.perf_counter()
                for _ in range(n):
                    sampler.tick()
                ours = min(ours, (time.perf_counter() - begin) / n)
                begin = time.perf_counter()
                for _ in range(n):
                    for h in handles:
                        real.nvmlDeviceGetMemoryInfo(h)
                        real.nvmlDeviceGetUtilizationRates(h)
                peer = min(peer, (time.perf_counter() - begin) / n)
        finally:
            real.nvmlShutdown()
        return TickCost(len(handles), n, ours, peer)
    finally:
        sampler.stop()
