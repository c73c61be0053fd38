"""benchmarks/gpu.py: the sampler's cost per tick, measured against the bare NVML calls."""

from __future__ import annotations

import pynvml

from benchmarks.gpu import tick_cost
from tests.gpu.fakes import FakeGpu, ScriptedNvml


def test_tick_cost_measures_against_the_bare_calls() -> None:
    nvml = ScriptedNvml([FakeGpu(), FakeGpu(index=1)])
    cost = tick_cost(lambda: nvml, ticks=20, rounds=2)
    assert (cost.devices, cost.ticks, cost.skipped) == (2, 240, "")  # one whole schedule at least
    assert cost.ours > 0 and cost.peer > 0 and cost.ratio > 0
    assert nvml.initialised == 0
    skipped = tick_cost(lambda: ScriptedNvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    assert skipped.skipped == "no GPU to sample (Driver Not Loaded)"
