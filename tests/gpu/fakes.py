"""Shared stand-ins for the GPU tests: a scripted NVML (pynvml's names, structs and NVMLError codes),
a stepping clock, a sampler built on them, and Ollama's NDJSON chat stream for pytest-httpserver.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml
from pytest_httpserver import HTTPServer

from rag.gpu.sampler import GpuSampler
from rag.gpu.samples import HostSample
from rag.llms.telemetry import Timeline
from rag.llms.types import GenerationStats

MIB = 1024 * 1024
GIB = 1024 * MIB
MODEL = "qwen2.5:7b-instruct"
NDJSON = "application/x-ndjson"


@dataclass
class FakeGpu:
    """One device; tests change its readings between ticks. Readings in pynvml's units."""

    index: int = 0
    name: str = "NVIDIA GeForce RTX 4060 Laptop GPU"
    total: int = 8188 * MIB
    used: int = 2261 * MIB
    gpu_util: int = 6
    mem_util: int = 3
    temperature: int = 58
    power_mw: int = 24_000
    limit_mw: int = 110_000
    clock_graphics: int = 2100
    clock_memory: int = 8001
    compute: list[tuple[int, int | None]] = field(default_factory=list)
    """(pid, usedGpuMemory) as NVML lists compute processes."""
    graphics: list[tuple[int, int | None]] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    """pynvml function name -> NVML error code it raises."""
    lost: bool = False
    """Every call on the device raises GPU_IS_LOST."""


class ScriptedNvml:
    """Behaves as the pynvml module does for the calls the sampler makes: nvmlInit may fail with an
    NVMLError, calls before nvmlInit raise UNINITIALIZED, device calls raise the scripted errors,
    structs come back as objects with pynvml's attribute names."""

    def __init__(
        self, gpus: Sequence[FakeGpu] = (), *, init_error: int | None = None, driver: str = "576.02", cuda: int = 12090
    ) -> None:
        self.gpus = list(gpus)
        self.init_error = init_error
        self.driver = driver
        self.cuda = cuda
        self.initialised = 0
        self.calls: list[tuple[str, int | None]] = []

    def count(self, fn: str) -> int:
        return sum(1 for name, _ in self.calls if name == fn)

    def _need_init(self) -> None:
        if self.initialised <= 0:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)

    def _device(self, fn: str, handle: FakeGpu) -> FakeGpu:
        self.calls.append((fn, handle.index))
        self._need_init()
        if handle.lost:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        if fn in handle.failures:
            raise pynvml.NVMLError(handle.failures[fn])
        return handle

    def nvmlInit(self) -> None:
        self.calls.append(("nvmlInit", None))
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.calls.append(("nvmlShutdown", None))
        self._need_init()
        self.initialised -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._need_init()
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._need_init()
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        self._need_init()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        self._need_init()
        if not 0 <= index < len(self.gpus):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[index]

    def nvmlDeviceGetName(self, handle: FakeGpu) -> str:
        return self._device("nvmlDeviceGetName", handle).name

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGpu) -> Any:
        g = self._device("nvmlDeviceGetMemoryInfo", handle)
        return SimpleNamespace(total=g.total, used=g.used, free=g.total - g.used)

    def nvmlDeviceGetUtilizationRates(self, handle: FakeGpu) -> Any:
        g = self._device("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=g.gpu_util, memory=g.mem_util)

    def nvmlDeviceGetTemperature(self, handle: FakeGpu, sensor: int) -> int:
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return self._device("nvmlDeviceGetTemperature", handle).temperature

    def nvmlDeviceGetPowerUsage(self, handle: FakeGpu) -> int:
        return self._device("nvmlDeviceGetPowerUsage", handle).power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeGpu) -> int:
        return self._device("nvmlDeviceGetEnforcedPowerLimit", handle).limit_mw

    def nvmlDeviceGetClockInfo(self, handle: FakeGpu, type: int) -> int:  # noqa: A002 - pynvml's signature
        g = self._device("nvmlDeviceGetClockInfo", handle)
        if type == pynvml.NVML_CLOCK_GRAPHICS:
            return g.clock_graphics
        if type == pynvml.NVML_CLOCK_MEM:
            return g.clock_memory
        raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    @staticmethod
    def _procs(items: list[tuple[int, int | None]]) -> list[Any]:
        return [
            SimpleNamespace(pid=pid, usedGpuMemory=mem, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
            for pid, mem in items
        ]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[Any]:
        return self._procs(self._device("nvmlDeviceGetComputeRunningProcesses", handle).compute)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: FakeGpu) -> list[Any]:
        return self._procs(self._device("nvmlDeviceGetGraphicsRunningProcesses", handle).graphics)


class Clock:
    """A clock that advances by `step` on every reading, so tests can name each reading's time."""

    def __init__(self, start: float = 1_750_000_000.0, step: float = 0.5) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        value = self.now
        self.now += self.step
        return value


HOST = HostSample(cpu_percent=12.5, ram_used=6 * GIB, ram_total=16 * GIB)


def make_sampler(nvml: ScriptedNvml, **kwargs: Any) -> GpuSampler:
    kwargs.setdefault("clock", Clock())
    kwargs.setdefault("host", lambda: HOST)
    kwargs.setdefault("names", {}.get)
    kwargs.setdefault("timeline", Timeline())
    return GpuSampler(lambda: nvml, **kwargs)


def host_of(server: HTTPServer) -> str:
    return server.url_for("/").rstrip("/")


def ndjson(*parts: dict[str, Any]) -> str:
    return "".join(json.dumps(p) + "\n" for p in parts)


def chat_stream(*texts: str) -> str:
    created = "2025-01-14T10:00:00Z"
    parts = [
        {"model": MODEL, "created_at": created, "message": {"role": "assistant", "content": t}, "done": False}
        for t in texts
    ]
    parts.append(
        {
            "model": MODEL,
            "created_at": created,
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": 4883583458,
            "load_duration": 1334875,
            "prompt_eval_count": 26,
            "prompt_eval_duration": 342546000,
            "eval_count": 282,
            "eval_duration": 4535599000,
        }
    )
    return ndjson(*parts)


# Ollama's final chunk for a short answer (durations in seconds, as GenerationStats holds them).
STATS = GenerationStats(
    done_reason="stop",
    total_duration=4.883583458,
    load_duration=0.001334875,
    prompt_eval_count=26,
    prompt_eval_duration=0.342546,
    eval_count=282,
    eval_duration=4.535599,
)
