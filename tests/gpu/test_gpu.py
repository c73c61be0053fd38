"""rag/gpu.py: the sampler driven by a scripted NVML stand-in (pynvml's names, structs and NVMLError
codes), generation phases, the watched generation and Ollama's placement against a pytest-httpserver
Ollama, and the real NVML where a GPU exists (skipped elsewhere, with the reason).
"""
from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest
from pytest_httpserver import HTTPServer

from rag import gpu
from rag.errors import ModelError
from rag.llms import GenerationStats, LoadedModel, Message, OllamaChatModel, StreamEvent, ollama_loaded_models
from rag.status import gpu_presence

MIB = 1024 * 1024
GIB = 1024 * MIB
MODEL = "qwen2.5:7b-instruct"
NDJSON = "application/x-ndjson"


# --- the scripted NVML ---------------------------------------------------------------------------


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

    def __init__(self, gpus: Sequence[FakeGpu] = (), *, init_error: int | None = None,
                 driver: str = "576.02", cuda: int = 12090) -> None:
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

    def nvmlDeviceGetClockInfo(self, handle: FakeGpu, type: int) -> int:
        g = self._device("nvmlDeviceGetClockInfo", handle)
        if type == pynvml.NVML_CLOCK_GRAPHICS:
            return g.clock_graphics
        if type == pynvml.NVML_CLOCK_MEM:
            return g.clock_memory
        raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    @staticmethod
    def _procs(items: list[tuple[int, int | None]]) -> list[Any]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=mem, gpuInstanceId=0xFFFFFFFF,
                                computeInstanceId=0xFFFFFFFF) for pid, mem in items]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[Any]:
        return self._procs(self._device("nvmlDeviceGetComputeRunningProcesses", handle).compute)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: FakeGpu) -> list[Any]:
        return self._procs(self._device("nvmlDeviceGetGraphicsRunningProcesses", handle).graphics)


class Clock:
    def __init__(self, start: float = 1_750_000_000.0, step: float = 0.5) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        value = self.now
        self.now += self.step
        return value


HOST = gpu.HostSample(cpu_percent=12.5, ram_used=6 * GIB, ram_total=16 * GIB)


def make_sampler(nvml: ScriptedNvml, **kwargs: Any) -> gpu.GpuSampler:
    kwargs.setdefault("clock", Clock())
    kwargs.setdefault("host", lambda: HOST)
    kwargs.setdefault("names", {}.get)
    kwargs.setdefault("timeline", gpu.Timeline())
    return gpu.GpuSampler(lambda: nvml, **kwargs)


# --- the sampler with a GPU ---------------------------------------------------------------------


def test_a_sample_has_every_reading_in_plain_units() -> None:
    nvml = ScriptedNvml([FakeGpu()])
    sampler = make_sampler(nvml)
    status = sampler.open()
    assert status == gpu.GpuStatus(True, "", "576.02", "12.9",
                                   (gpu.DeviceInfo(0, "NVIDIA GeForce RTX 4060 Laptop GPU"),))
    sample = sampler.tick()
    assert sample.t == 1_750_000_000.0
    assert sample.devices == (gpu.DeviceSample(
        index=0, name="NVIDIA GeForce RTX 4060 Laptop GPU", memory_used=2261 * MIB, memory_total=8188 * MIB,
        gpu_util=6, memory_util=3, temperature=58, power_draw=24.0, power_limit=110.0,
        clock_graphics=2100, clock_memory=8001,
    ),)
    assert sample.host == HOST
    assert sampler.latest() is sample


def test_cuda_version_is_written_as_nvidia_smi_does() -> None:
    assert gpu.cuda_version_text(12090) == "12.9"
    assert gpu.cuda_version_text(12020) == "12.2"
    assert gpu.cuda_version_text(11080) == "11.8"


def test_vram_and_utilisation_every_tick_slow_readings_spread_and_carried_forward() -> None:
    card = FakeGpu()
    nvml = ScriptedNvml([card])
    sampler = make_sampler(nvml)
    first = sampler.tick()
    card.used, card.gpu_util, card.temperature, card.power_mw = 6000 * MIB, 97, 71, 105_000
    second = sampler.tick()  # tick 1: power is due, temperature is not
    assert (second.devices[0].memory_used, second.devices[0].gpu_util) == (6000 * MIB, 97)
    assert second.devices[0].power_draw == 105.0
    assert second.devices[0].temperature == first.devices[0].temperature == 58  # carried forward
    third = sampler.tick()  # tick 2: temperature is due
    assert third.devices[0].temperature == 71
    for _ in range(29):
        sampler.tick()
    # 32 ticks: two calls on every tick, each slow reading once per its cadence (staggered).
    assert sampler.cadence == gpu.Cadence(power=4, temperature=16, clocks=16, processes=8, power_limit=120,
                                          host_with_gpu=20)
    assert nvml.count("nvmlDeviceGetMemoryInfo") == 32
    assert nvml.count("nvmlDeviceGetUtilizationRates") == 32
    assert nvml.count("nvmlDeviceGetPowerUsage") == 9          # ticks 0, 1, 5, ..., 29
    assert nvml.count("nvmlDeviceGetTemperature") == 3         # ticks 0, 2, 18
    assert nvml.count("nvmlDeviceGetClockInfo") == 2 * 3       # ticks 0, 3, 19 (graphics + memory)
    assert nvml.count("nvmlDeviceGetComputeRunningProcesses") == 5  # ticks 0, 6, 14, 22, 30
    assert nvml.count("nvmlDeviceGetEnforcedPowerLimit") == 2  # ticks 0, 4
    schedule = gpu.Cadence().schedule()
    assert len(schedule) == 240 and all(len(due) <= 2 for due in schedule)


def test_host_is_read_every_tick_without_a_gpu_and_every_cadence_with_one() -> None:
    reads: list[int] = []

    def host() -> gpu.HostSample:
        reads.append(1)
        return HOST

    with_gpu = make_sampler(ScriptedNvml([FakeGpu()]), host=host)
    with_gpu.open()
    reads.clear()  # open() primes psutil's cpu_percent once
    for _ in range(30):
        with_gpu.tick()
    assert len(reads) == 3  # ticks 0, 7, 27
    reads.clear()
    without = make_sampler(ScriptedNvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED), host=host)
    without.open()
    reads.clear()
    for _ in range(5):
        without.tick()
    assert len(reads) == 5


def test_not_supported_reading_is_none_and_never_asked_again() -> None:
    card = FakeGpu(failures={"nvmlDeviceGetTemperature": pynvml.NVML_ERROR_NOT_SUPPORTED,
                             "nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_NOT_SUPPORTED})
    nvml = ScriptedNvml([card])
    sampler = make_sampler(nvml)
    samples = [sampler.tick() for _ in range(32)]
    assert all(s.devices[0].temperature is None and s.devices[0].power_draw is None for s in samples)
    assert all(s.devices[0].memory_used == 2261 * MIB for s in samples)
    assert samples[-1].devices[0].power_limit == 110.0
    assert nvml.count("nvmlDeviceGetTemperature") == 1
    assert nvml.count("nvmlDeviceGetPowerUsage") == 1
    assert set(sampler.status.unsupported) == {(0, "temperature"), (0, "power")}
    assert sampler.status.available


def test_other_nvml_errors_give_none_for_that_tick_only() -> None:
    card = FakeGpu(failures={"nvmlDeviceGetUtilizationRates": pynvml.NVML_ERROR_TIMEOUT})
    sampler = make_sampler(ScriptedNvml([card]))
    assert sampler.tick().devices[0].gpu_util is None
    del card.failures["nvmlDeviceGetUtilizationRates"]
    assert sampler.tick().devices[0].gpu_util == 6


def test_gpu_lost_mid_run_is_reported_and_the_sampler_goes_on() -> None:
    card = FakeGpu()
    nvml = ScriptedNvml([card])
    sampler = make_sampler(nvml)
    assert sampler.tick().devices[0].error is None
    card.lost = True
    lost = sampler.tick()
    assert lost.devices[0] == gpu.DeviceSample(0, card.name, *([None] * 9), error="GPU is lost")
    assert lost.host == HOST
    status = sampler.status
    assert not status.available
    assert status.problems == ("GPU 0 (NVIDIA GeForce RTX 4060 Laptop GPU): GPU is lost",)
    assert status.reason == "every GPU failed: GPU 0 (NVIDIA GeForce RTX 4060 Laptop GPU): GPU is lost"
    calls = len(nvml.calls)
    later = sampler.tick()
    assert later.devices[0].error == "GPU is lost"
    assert len(nvml.calls) == calls  # a lost GPU is not asked again


def test_one_lost_gpu_of_two_leaves_the_other_watched() -> None:
    a, b = FakeGpu(index=0, name="GPU A"), FakeGpu(index=1, name="GPU B", used=100 * MIB)
    sampler = make_sampler(ScriptedNvml([a, b]))
    sampler.tick()
    b.lost = True
    sample = sampler.tick()
    assert [d.error for d in sample.devices] == [None, "GPU is lost"]
    assert sample.devices[0].memory_used == 2261 * MIB
    assert sampler.status.available
    assert sampler.status.problems == ("GPU 1 (GPU B): GPU is lost",)


def test_driver_not_loaded_at_init_gives_nvmls_words_and_cpu_ram_samples() -> None:
    nvml = ScriptedNvml([FakeGpu()], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    sampler = make_sampler(nvml)
    status = sampler.open()
    assert status == gpu.GpuStatus(False, "Driver Not Loaded")
    assert "nvidia-smi" in gpu.no_gpu_hint(status.reason)
    sample = sampler.tick()
    assert sample.devices == () and sample.processes == ()
    assert sample.host == HOST
    sampler.stop()  # nvmlShutdown is not called after a failed init
    assert nvml.count("nvmlShutdown") == 0


def test_missing_library_and_missing_package_and_no_devices() -> None:
    missing = make_sampler(ScriptedNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    assert missing.open().reason == "NVML Shared Library Not Found"
    assert "docs/gpu.md" in gpu.no_gpu_hint(missing.status.reason)

    def not_installed() -> gpu.Nvml:
        raise ImportError("nvidia-ml-py is not installed: run 'pip install nvidia-ml-py'")

    no_package = gpu.GpuSampler(not_installed, host=lambda: HOST, timeline=gpu.Timeline())
    assert no_package.open().reason == "nvidia-ml-py is not installed: run 'pip install nvidia-ml-py'"
    assert no_package.tick().host == HOST

    none = make_sampler(ScriptedNvml([]))
    assert none.open() == gpu.GpuStatus(False, "NVML found no NVIDIA GPU (driver 576.02)", "576.02", "12.9")


def test_processes_are_named_merged_and_ollama_is_flagged() -> None:
    card = FakeGpu(compute=[(4242, 4_700 * MIB), (77, None)], graphics=[(4242, 10 * MIB), (901, 300 * MIB)])
    names = {4242: "ollama", 77: "python3", 901: "Xorg"}
    sampler = make_sampler(ScriptedNvml([card]), names=names.get)
    sample = sampler.tick()
    assert sample.processes == (
        gpu.GpuProcess(0, 77, "python3", None, False),  # WDDM/WSL2: NVML has no per-process memory
        gpu.GpuProcess(0, 901, "Xorg", 300 * MIB, False),
        gpu.GpuProcess(0, 4242, "ollama", 4_700 * MIB, True),
    )
    assert gpu.is_ollama_process("ollama_llama_server") and gpu.is_ollama_process("ollama.exe")
    assert not gpu.is_ollama_process(None)


def test_a_failing_name_lookup_leaves_the_process_unnamed() -> None:
    def names(pid: int) -> str | None:
        raise PermissionError("no /proc here")

    sampler = make_sampler(ScriptedNvml([FakeGpu(compute=[(10, GIB)])]), names=names)
    assert sampler.tick().processes == (gpu.GpuProcess(0, 10, None, GIB, False),)


def test_process_names_come_from_psutil_by_default() -> None:
    import os

    assert gpu.process_name(os.getpid()) is not None
    assert gpu.process_name(2**22 + 12345) is None  # no such pid


def test_ring_buffer_keeps_the_last_window_only() -> None:
    sampler = make_sampler(ScriptedNvml([FakeGpu()]), interval=0.5, window=2.0)
    taken = [sampler.tick() for _ in range(10)]
    assert sampler.samples() == taken[-4:]
    assert sampler.samples(since=taken[-2].t) == taken[-2:]
    assert gpu.GpuSampler(interval=0.5).samples() == []
    assert gpu.GpuSampler()._samples.maxlen == 1200  # 10 minutes at 0.5 s


def test_bad_parameters_are_refused_with_their_values() -> None:
    with pytest.raises(ValueError, match=r"interval must be > 0 seconds, got 0"):
        gpu.GpuSampler(interval=0)
    with pytest.raises(ValueError, match=r"window \(0.1 s\) must be at least one interval \(0.5 s\)"):
        gpu.GpuSampler(window=0.1)
    with pytest.raises(ValueError, match=r"Cadence.power must be a whole number of ticks >= 1, got 0"):
        gpu.Cadence(power=0)


def test_the_thread_samples_keeps_going_after_errors_and_stops_cleanly() -> None:
    failures = iter([RuntimeError("clock broke")])

    def clock() -> float:
        exc = next(failures, None)
        if exc is not None:
            raise exc  # the first tick fails as a whole
        return time.time()

    nvml = ScriptedNvml([FakeGpu(compute=[(10, GIB)])])
    sampler = make_sampler(nvml, interval=0.01, window=1.0, clock=clock, names={10: "ollama"}.get)
    assert sampler.start() is sampler.start()
    deadline = time.monotonic() + 10
    while len(sampler.samples()) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sampler.running
    assert len(sampler.samples()) >= 5
    assert any(s.processes and s.processes[0].is_ollama for s in sampler.samples())
    sampler.stop()
    assert not sampler.running
    assert nvml.initialised == 0  # nvmlShutdown balanced nvmlInit
    count = len(sampler.samples())
    time.sleep(0.05)
    assert len(sampler.samples()) == count


def test_csv_export_has_a_row_per_sample_and_gpu() -> None:
    card = FakeGpu(compute=[(4242, 4_700 * MIB)], failures={"nvmlDeviceGetTemperature": pynvml.NVML_ERROR_NOT_SUPPORTED})
    sampler = make_sampler(ScriptedNvml([card]), names={4242: "ollama"}.get)
    sampler.tick()
    card.used = 7000 * MIB
    sampler.tick()
    rows = list(csv.DictReader(io.StringIO(sampler.to_csv())))
    assert list(rows[0]) == list(gpu.CSV_COLUMNS)
    assert len(rows) == 2
    assert rows[0]["name"] == "NVIDIA GeForce RTX 4060 Laptop GPU"
    assert (rows[0]["driver"], rows[0]["cuda"]) == ("576.02", "12.9")
    assert [r["vram_used_mib"] for r in rows] == ["2261.0", "7000.0"]
    assert rows[0]["vram_total_mib"] == "8188.0"
    assert rows[0]["temperature_c"] == ""  # not supported: empty, not 0
    assert rows[0]["power_w"] == "24.0" and rows[0]["clock_graphics_mhz"] == "2100"
    assert rows[0]["ollama_vram_mib"] == "4700.0" and rows[0]["gpu_processes"] == "1"
    assert rows[0]["cpu_pct"] == "12.5" and rows[0]["ram_total_mib"] == "16384.0"
    assert rows[0]["epoch"] == "1750000000.000"
    assert rows[0]["time"] == datetime.fromtimestamp(1_750_000_000).isoformat(timespec="milliseconds")


def test_csv_export_without_a_gpu_has_cpu_and_ram() -> None:
    sampler = make_sampler(ScriptedNvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    sampler.tick()
    (row,) = csv.DictReader(io.StringIO(sampler.to_csv()))
    assert row["gpu"] == "" and row["vram_used_mib"] == ""
    assert row["cpu_pct"] == "12.5" and row["ram_used_mib"] == "6144.0"


def test_nvml_sources_are_registered_and_selected_by_name() -> None:
    nvml = ScriptedNvml([FakeGpu()])
    gpu.register_nvml("test-registry", lambda: nvml)
    previous = gpu.select_nvml("test-registry")
    try:
        assert gpu.selected_nvml() == "test-registry"
        assert gpu.nvml_factory()() is nvml
    finally:
        gpu.select_nvml(previous)
    assert gpu.selected_nvml() == "pynvml"
    with pytest.raises(ValueError, match=r"no NVML source named 'nope' \(registered: .*pynvml"):
        gpu.select_nvml("nope")


# --- marks and phases ---------------------------------------------------------------------------

# Ollama's final chunk for a short answer (durations in seconds, as GenerationStats holds them).
STATS = GenerationStats(done_reason="stop", total_duration=4.883583458, load_duration=0.001334875,
                        prompt_eval_count=26, prompt_eval_duration=0.342546, eval_count=282,
                        eval_duration=4.535599)


def test_phases_follow_ollamas_durations() -> None:
    started, finished = 100.0, 105.0
    phases = gpu.generation_phases(started, finished, STATS, first_token_at=100.5, first_content_at=100.5)
    begin = finished - STATS.total_duration
    assert phases == [
        ("load", begin, begin + STATS.load_duration),
        ("prompt", begin + STATS.load_duration, begin + STATS.load_duration + STATS.prompt_eval_duration),
        ("output", finished - STATS.eval_duration, finished),
    ]
    assert all(started <= a <= b <= finished for _, a, b in phases)


def test_thinking_before_the_answer_is_its_own_phase() -> None:
    phases = gpu.generation_phases(100.0, 105.0, STATS, first_token_at=100.5, first_content_at=103.0)
    assert [p for p, _, _ in phases] == ["load", "prompt", "thinking", "output"]
    assert phases[2] == ("thinking", 105.0 - STATS.eval_duration, 103.0)
    assert phases[3] == ("output", 103.0, 105.0)


def test_a_cold_load_takes_the_first_seconds() -> None:
    stats = GenerationStats(done_reason="stop", total_duration=9.0, load_duration=6.0, prompt_eval_duration=1.0,
                            eval_count=40, eval_duration=2.0)
    assert gpu.generation_phases(0.0, 9.2, stats) == [
        ("load", pytest.approx(0.2), pytest.approx(6.2)), ("prompt", pytest.approx(6.2), pytest.approx(7.2)),
        ("output", pytest.approx(7.2), 9.2),
    ]


def test_a_stopped_generation_is_split_at_the_first_token() -> None:
    stopped = GenerationStats(done_reason="stopped", total_duration=3.0, eval_count=12, eval_duration=1.5)
    assert gpu.generation_phases(10.0, 13.0, stopped, first_token_at=11.0, first_content_at=11.0) == [
        ("prompt", 10.0, 11.0), ("output", 11.0, 13.0)]
    assert gpu.generation_phases(10.0, 13.0, None) == [("prompt", 10.0, 13.0)]
    with pytest.raises(ValueError, match=r"cannot finish \(9.0\) before it started \(10.0\)"):
        gpu.generation_phases(10.0, 9.0, None)


def test_marks_are_validated_bounded_and_filtered() -> None:
    timeline = gpu.Timeline(maxlen=3)
    for i in range(5):
        timeline.mark("output", float(i), i + 0.5, f"gen {i}")
    assert [m.label for m in timeline.marks()] == ["gen 2", "gen 3", "gen 4"]
    assert [m.label for m in timeline.marks(since=3.6)] == ["gen 4"]
    with pytest.raises(ValueError, match=r"mark 'load' ends before it starts: start=2.0, end=1.0"):
        timeline.mark("load", 2.0, 1.0)
    with pytest.raises(ValueError, match=r"a mark needs a phase name, got ''"):
        timeline.mark("", 1.0, 2.0)
    sampler = make_sampler(ScriptedNvml([FakeGpu()]), timeline=timeline)
    made = sampler.mark("prompt", 7.0, 8.0, "chat: x")
    assert made == gpu.Mark("prompt", 7.0, 8.0, "chat: x") and sampler.marks()[-1] is made


def test_mark_generation_marks_every_phase_with_the_label() -> None:
    timeline = gpu.Timeline()
    made = timeline.mark_generation("chat: qwen2.5:7b-instruct", 100.0, 105.0, STATS, first_token_at=100.5)
    assert [m.phase for m in made] == ["load", "prompt", "output"]
    assert {m.label for m in timeline.marks()} == {"chat: qwen2.5:7b-instruct"}


# --- a generation watched on a thread -----------------------------------------------------------


class ScriptedModel:
    """A ChatModel that yields given events, reading a clock that advances per event."""

    name = "ollama:scripted"
    supports_tools = False
    supports_thinking = True

    def __init__(self, events: list[StreamEvent], error: Exception | None = None) -> None:
        self.events = events
        self.error = error
        self.messages: list[Message] = []

    def context_length(self) -> int:
        return 4096

    def stream(self, messages: Sequence[Message], *, temperature: float = 0.2, num_ctx: int | None = None,
               think: bool | None = None, stop_event: Any = None) -> Iterator[StreamEvent]:
        self.messages = list(messages)
        yield from self.events
        if self.error is not None:
            raise self.error


def test_watched_generation_collects_text_timings_and_marks() -> None:
    events = [StreamEvent("thinking", "Hmm."), StreamEvent("content", "Zub"), StreamEvent("content", "rowka."),
              StreamEvent("done", stats=STATS)]
    timeline = gpu.Timeline()
    clock = Clock(start=1000.0, step=0.25)
    model = ScriptedModel(events)
    watched = gpu.WatchedGeneration(model, "Capital of Freedonia?", timeline=timeline, clock=clock).start()
    assert watched.wait(10)
    view = watched.view()
    assert model.messages == [Message("user", "Capital of Freedonia?")]
    assert (view.text, view.thinking, view.running, view.error) == ("Zubrowka.", "Hmm.", False, None)
    # clock: 1000.0 at start(), then one reading per event and one at the end
    assert view.started_at == 1000.25 and view.first_token_at == 1000.5
    assert view.time_to_first_token == 0.25
    assert view.tokens_per_second == pytest.approx(282 / 4.535599)
    assert view.load_seconds == STATS.load_duration
    assert [m.phase for m in view.marks] == ["load", "prompt", "thinking", "output"]
    assert timeline.marks() == list(view.marks)
    assert all(m.label == "gpu page: scripted" for m in view.marks)


def test_watched_generation_keeps_the_error_and_the_partial_text() -> None:
    model = ScriptedModel([StreamEvent("content", "Zub")], error=ModelError("Ollama failed mid-answer"))
    timeline = gpu.Timeline()
    watched = gpu.WatchedGeneration(model, "q", timeline=timeline).start()
    assert watched.wait(10)
    view = watched.view()
    assert (view.text, view.error) == ("Zub", "Ollama failed mid-answer")
    assert [m.phase for m in view.marks] == ["prompt", "output"]

    nothing = gpu.WatchedGeneration(ScriptedModel([], error=ModelError("not reachable")), "q", timeline=timeline)
    assert nothing.start().wait(10)
    assert nothing.view().error == "not reachable" and nothing.view().marks == ()
    with pytest.raises(ValueError, match="the prompt is empty"):
        gpu.WatchedGeneration(model, "  ")


def host_of(server: HTTPServer) -> str:
    return server.url_for("/").rstrip("/")


def ndjson(*parts: dict[str, Any]) -> str:
    return "".join(json.dumps(p) + "\n" for p in parts)


def chat_stream(*texts: str) -> str:
    created = "2025-01-14T10:00:00Z"
    parts = [{"model": MODEL, "created_at": created, "message": {"role": "assistant", "content": t},
              "done": False} for t in texts]
    parts.append({"model": MODEL, "created_at": created, "message": {"role": "assistant", "content": ""},
                  "done": True, "done_reason": "stop", "total_duration": 4883583458, "load_duration": 1334875,
                  "prompt_eval_count": 26, "prompt_eval_duration": 342546000, "eval_count": 282,
                  "eval_duration": 4535599000})
    return ndjson(*parts)


def test_watched_generation_against_ollamas_stream(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/chat", method="POST").respond_with_data(
        chat_stream("The capital", " is Zubrowka."), content_type=NDJSON)
    timeline = gpu.Timeline()
    watched = gpu.WatchedGeneration(OllamaChatModel(host_of(httpserver), MODEL, timeout=5), "Capital?",
                                    timeline=timeline).start()
    assert watched.wait(10)
    view = watched.view()
    assert view.error is None and view.text == "The capital is Zubrowka."
    assert view.stats is not None and view.stats.eval_count == 282
    assert [m.phase for m in timeline.marks()] == ["load", "prompt", "output"]
    (request, _), = httpserver.log
    body = json.loads(request.get_data())
    assert body["model"] == MODEL and body["messages"] == [{"role": "user", "content": "Capital?"}]
    assert body["stream"] is True


# --- Ollama placement and keep-alive ------------------------------------------------------------

GPU_STATUS = gpu.GpuStatus(True, "", "576.02", "12.9", (gpu.DeviceInfo(0, "NVIDIA GeForce RTX 4060 Laptop GPU"),))
NO_GPU = gpu.GpuStatus(False, "Driver Not Loaded")


def loaded(size: int, size_vram: int, name: str = MODEL, context: int | None = 4096) -> LoadedModel:
    return LoadedModel(name, size, size_vram, context, datetime.now(timezone.utc) + timedelta(minutes=5))


def latest_sample(used: int = 7_000 * MIB, processes: tuple[gpu.GpuProcess, ...] = ()) -> gpu.Sample:
    device = gpu.DeviceSample(0, "NVIDIA GeForce RTX 4060 Laptop GPU", used, 8188 * MIB, 90, 40, 60, 80.0,
                              110.0, 2500, 8001)
    return gpu.Sample(0.0, (device,), processes)


def test_all_on_the_gpu_needs_no_advice() -> None:
    assert gpu.placement_advice([loaded(5 * GIB, 5 * GIB)], GPU_STATUS, latest_sample()) is None
    assert gpu.placement_advice([], GPU_STATUS) is None


def test_a_model_on_the_cpu_while_a_gpu_exists_is_an_error_with_the_checks() -> None:
    advice = gpu.placement_advice([loaded(5 * GIB, 0)], GPU_STATUS, latest_sample(used=1000 * MIB))
    assert advice is not None and advice.severity == "error"
    assert advice.title == (f"{MODEL} (100% CPU) runs on the CPU although this machine has a GPU "
                            "(NVIDIA GeForce RTX 4060 Laptop GPU).")
    text = "\n".join(advice.causes)
    assert "docker compose exec ollama nvidia-smi" in text
    assert "docker run --rm --gpus all ubuntu nvidia-smi" in text
    assert "WSL2" in text and "loaded CPU backend" in text
    assert "needs 5.0 GiB, context 4096 tokens; free VRAM now 7.0 GiB of 8.0 GiB" in text


def test_a_model_split_between_cpu_and_gpu_points_at_vram() -> None:
    others = (gpu.GpuProcess(0, 901, "blender", 3 * GIB, False), gpu.GpuProcess(0, 4242, "ollama", 4 * GIB, True))
    advice = gpu.placement_advice([loaded(10 * GIB, int(6.3 * GIB), context=32768)], GPU_STATUS,
                                  latest_sample(used=8100 * MIB, processes=others))
    assert advice is not None and advice.severity == "error"
    assert advice.title.startswith(f"{MODEL} (37%/63% CPU/GPU) runs partly or wholly on the CPU")
    assert len(advice.causes) == 2
    assert "needs 10.0 GiB, context 32768 tokens; free VRAM now 0.1 GiB of 8.0 GiB" in advice.causes[0]
    assert advice.causes[1] == "Other programs hold VRAM: blender (3.0 GiB)."


def test_on_the_cpu_without_a_gpu_is_calm_information() -> None:
    advice = gpu.placement_advice([loaded(5 * GIB, 0)], NO_GPU)
    assert advice is not None and advice.severity == "info"
    assert "as expected, since this app sees no NVIDIA GPU (Driver Not Loaded)" in advice.title


def test_placement_from_ollamas_api_ps(httpserver: HTTPServer) -> None:
    expires = "2025-06-01T12:05:00.000000000+02:00"
    httpserver.expect_request("/api/ps", method="GET").respond_with_json({"models": [
        {"name": MODEL, "model": MODEL, "size": 6_654_289_920, "size_vram": 6_654_289_920, "digest": "x",
         "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B", "quantization_level": "Q4_K_M"},
         "expires_at": expires, "context_length": 4096},
        {"name": "nomic-embed-text:latest", "model": "nomic-embed-text:latest", "size": 1_000_000_000,
         "size_vram": 0, "digest": "y", "details": {}, "expires_at": expires},
    ]})
    models = ollama_loaded_models(host_of(httpserver))
    assert models is not None
    assert [(m.name, m.share_on_gpu, m.context_length) for m in models] == [
        (MODEL, "100% GPU", 4096), ("nomic-embed-text", "100% CPU", None)]
    advice = gpu.placement_advice(models, GPU_STATUS, latest_sample())
    assert advice is not None and advice.title.startswith("nomic-embed-text (100% CPU) runs on the CPU")


def test_unload_sends_keep_alive_zero(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/generate", method="POST").respond_with_json(
        {"model": MODEL, "created_at": "2025-01-14T10:00:00Z", "response": "", "done": True,
         "done_reason": "unload"})
    gpu.unload_model(host_of(httpserver), MODEL)
    (request, _), = httpserver.log
    assert json.loads(request.get_data()) == {"model": MODEL, "stream": False, "keep_alive": 0}


def test_unload_errors_are_one_actionable_line(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/generate", method="POST").respond_with_json(
        {"error": "model 'nope' not found"}, status=404)
    with pytest.raises(ModelError, match=r"^Ollama has no model 'nope' to unload \(model 'nope' not found\)$"):
        gpu.unload_model(host_of(httpserver), "nope")
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(ModelError, match=r"^Ollama is not reachable at http://127.0.0.1:\d+ .*set OLLAMA_HOST$"):
        gpu.unload_model(dead, MODEL)


# --- benchmark support and the real NVML --------------------------------------------------------


def test_tick_cost_measures_against_the_bare_calls() -> None:
    nvml = ScriptedNvml([FakeGpu(), FakeGpu(index=1)])
    cost = gpu.tick_cost(lambda: nvml, ticks=20, rounds=2)
    assert (cost.devices, cost.ticks, cost.skipped) == (2, 240, "")  # one whole schedule at least
    assert cost.ours > 0 and cost.peer > 0 and cost.ratio > 0
    assert nvml.initialised == 0
    skipped = gpu.tick_cost(lambda: ScriptedNvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    assert skipped.skipped == "no GPU to sample (Driver Not Loaded)"


_PRESENCE = gpu_presence()


@pytest.mark.skipif(not _PRESENCE.found, reason=f"no NVIDIA GPU here ({_PRESENCE.reason})")
def test_real_nvml_sampler_agrees_with_pynvml() -> None:
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(handle)
        total = pynvml.nvmlDeviceGetMemoryInfo(handle).total
    finally:
        pynvml.nvmlShutdown()
    sampler = gpu.GpuSampler(interval=0.05, window=5.0, timeline=gpu.Timeline()).start()
    try:
        deadline = time.monotonic() + 10
        while len(sampler.samples()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        status = sampler.status
        assert status.available and status.devices[0].name == gpu._text(name)
        assert status.driver and status.cuda
        device = sampler.latest().devices[0]
        assert device.memory_total == total
        assert device.memory_used is not None and 0 <= device.memory_used <= total
        assert device.gpu_util is None or 0 <= device.gpu_util <= 100
        rows = list(csv.DictReader(io.StringIO(sampler.to_csv())))
        assert len(rows) >= 3 * len(status.devices)
    finally:
        sampler.stop()
    cost = gpu.tick_cost(ticks=64, rounds=1)
    assert cost.skipped == "" and cost.ours > 0 and cost.peer > 0


def test_server_durations_longer_than_the_wait_are_scaled_to_fit() -> None:
    # A replayed stream: Ollama's 4.88 s arrived within 0.5 s.
    phases = gpu.generation_phases(10.0, 10.5, STATS)
    assert [p for p, _, _ in phases] == ["load", "prompt", "output"]
    assert phases[0][1] == pytest.approx(10.0)
    assert phases[-1] == ("output", pytest.approx(10.5 - 0.5 * STATS.eval_duration / STATS.total_duration), 10.5)
    assert all(10.0 <= a <= b <= 10.5 for _, a, b in phases)


def test_the_nvml_interface_matches_the_real_pynvml_module() -> None:
    """The stand-in speaks the interface; this pins the interface to nvidia-ml-py's own functions,
    parameters, structures and error codes, so the real path cannot drift from what is tested."""
    import inspect

    for name, method in inspect.getmembers(gpu.Nvml, inspect.isfunction):
        if name.startswith("_"):
            continue
        real = getattr(pynvml, name)
        ours = [p for p in inspect.signature(method).parameters if p != "self"]
        params = inspect.signature(real).parameters.values()
        # Ours are the real ones in order; any further real parameter has a default (a version).
        assert [p.name for p in params][:len(ours)] == ours, name
        assert all(p.default is not inspect.Parameter.empty for p in list(params)[len(ours):]), name
        assert list(inspect.signature(getattr(ScriptedNvml, name)).parameters)[1:] == ours, name
    assert {"pid", "usedGpuMemory"} <= {f for f, _ in pynvml.c_nvmlProcessInfo_t._fields_}
    assert {"used", "total"} <= {f for f, _ in pynvml.c_nvmlMemory_t._fields_}
    assert {"gpu", "memory"} <= {f for f, _ in pynvml.c_nvmlUtilization_t._fields_}
    for code in ("NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_GPU_IS_LOST", "NVML_ERROR_DRIVER_NOT_LOADED",
                 "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML_ERROR_UNKNOWN"):
        assert isinstance(getattr(pynvml, code), int)
    assert str(pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)) == "Not Supported"
