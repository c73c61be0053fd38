"""Watching the GPU while a model answers: NVML behind a registered interface (`nvml`), a sampler
that reads it into a ring buffer of frozen samples (`sampler`, `samples`), and where Ollama put its
models (`placement`).

The generation phases drawn over the samples live in rag.llms.telemetry (the chat marks them
too), the generation the GPU page watches in rag.generate.watch, and the sampler's cost per tick is
measured by benchmarks.gpu.
"""

from __future__ import annotations

from rag.gpu.nvml import Nvml, no_gpu_hint, nvml_factory, register_nvml, select_nvml, selected_nvml
from rag.gpu.placement import Placement, PlacementAdvice, ollama_placement, placement_advice
from rag.gpu.sampler import Cadence, GpuSampler
from rag.gpu.samples import DeviceInfo, DeviceSample, GpuProcess, GpuStatus, HostSample, Sample, samples_csv

__all__ = [
    "Cadence",
    "DeviceInfo",
    "DeviceSample",
    "GpuProcess",
    "GpuSampler",
    "GpuStatus",
    "HostSample",
    "Nvml",
    "Placement",
    "PlacementAdvice",
    "Sample",
    "no_gpu_hint",
    "nvml_factory",
    "ollama_placement",
    "placement_advice",
    "register_nvml",
    "samples_csv",
    "select_nvml",
    "selected_nvml",
]
