"""rag/gpu/sampler.py: the sampler driven by a scripted NVML stand-in (pynvml's names, structs and
NVMLError codes), and the real NVML where a GPU exists (skipped elsewhere, with the reason).
"""

from __future__ import annotations

import csv
import io
import time

import pynvml
import pytest

from benchmarks.gpu import tick_cost
from rag.gpu.nvml import Nvml, no_gpu_hint, nvml_text
from rag.gpu.sampler import Cadence, GpuSampler, is_ollama_process, process_name
from rag.gpu.samples import DeviceInfo, DeviceSample, GpuProcess, GpuStatus, HostSample
from rag.llms.telemetry import Timeline
from rag.status import gpu_presence
from tests.gpu.fakes import GIB, HOST, MIB, FakeGpu, ScriptedNvml, make_sampler


def test_a_sample_has_every_reading_in_plain_units() -> None:
    nvml = ScriptedNvml([FakeGpu()])
    sampler = make_sampler(nvml)
    status = sampler.open()
    assert status == GpuStatus(True, "", "576.02", "12.9", (DeviceInfo(0, "NVIDIA GeForce RTX 4060 Laptop GPU"),))
    sample = sampler.tick()
    assert sample.t == 1_750_000_000.0
    assert sample.devices == (
        DeviceSample(
            index=0,
            name="NVIDIA GeForce RTX 4060 Laptop GPU",
            memory_used=2261 * MIB,
            memory_total=8188 * MIB,
            gpu_util=6,
            memory_util=3,
            temperature=58,
            power_draw=24.0,
            power_limit=110.0,
            clock_graphics=2100,
            clock_memory=8001,
        ),
    )
    assert sample.host == HOST
    assert sampler.latest() is sample


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
    assert sampler.cadence == Cadence(
        power=4, temperature=16, clocks=16, processes=8, power_limit=120, host_with_gpu=20
    )
    assert nvml.count("nvmlDeviceGetMemoryInfo") == 32
    assert nvml.count("nvmlDeviceGetUtilizationRates") == 32
    assert nvml.count("nvmlDeviceGetPowerUsage") == 9  # ticks 0, 1, 5, ..., 29
    assert nvml.count("nvmlDeviceGetTemperature") == 3  # ticks 0, 2, 18
    assert nvml.count("nvmlDeviceGetClockInfo") == 2 * 3  # ticks 0, 3, 19 (graphics + memory)
    assert nvml.count("nvmlDeviceGetComputeRunningProcesses") == 5  # ticks 0, 6, 14, 22, 30
    assert nvml.count("nvmlDeviceGetEnforcedPowerLimit") == 2  # ticks 0, 4
    schedule = Cadence().schedule()
    assert len(schedule) == 240 and all(len(due) <= 2 for due in schedule)
    assert (
        Cadence().period == 240
        and Cadence(power=3, temperature=5, clocks=1, processes=1, power_limit=1, host_with_gpu=1).period == 15
    )


def test_host_is_read_every_tick_without_a_gpu_and_every_cadence_with_one() -> None:
    reads: list[int] = []

    def host() -> HostSample:
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
    card = FakeGpu(
        failures={
            "nvmlDeviceGetTemperature": pynvml.NVML_ERROR_NOT_SUPPORTED,
            "nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_NOT_SUPPORTED,
        }
    )
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
    assert lost.devices[0] == DeviceSample(0, card.name, *([None] * 9), error="GPU is lost")
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
    assert status == GpuStatus(False, "Driver Not Loaded")
    assert "nvidia-smi" in no_gpu_hint(status.reason)
    sample = sampler.tick()
    assert sample.devices == () and sample.processes == ()
    assert sample.host == HOST
    sampler.stop()  # nvmlShutdown is not called after a failed init
    assert nvml.count("nvmlShutdown") == 0


def test_missing_library_and_missing_package_and_no_devices() -> None:
    missing = make_sampler(ScriptedNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    assert missing.open().reason == "NVML Shared Library Not Found"
    assert "docs/gpu.md" in no_gpu_hint(missing.status.reason)

    def not_installed() -> Nvml:
        raise ImportError("nvidia-ml-py is not installed: run 'pip install nvidia-ml-py'")

    no_package = GpuSampler(not_installed, host=lambda: HOST, timeline=Timeline())
    assert no_package.open().reason == "nvidia-ml-py is not installed: run 'pip install nvidia-ml-py'"
    assert no_package.tick().host == HOST

    none = make_sampler(ScriptedNvml([]))
    assert none.open() == GpuStatus(False, "NVML found no NVIDIA GPU (driver 576.02)", "576.02", "12.9")


def test_processes_are_named_merged_and_ollama_is_flagged() -> None:
    card = FakeGpu(compute=[(4242, 4_700 * MIB), (77, None)], graphics=[(4242, 10 * MIB), (901, 300 * MIB)])
    names = {4242: "ollama", 77: "python3", 901: "Xorg"}
    sampler = make_sampler(ScriptedNvml([card]), names=names.get)
    sample = sampler.tick()
    assert sample.processes == (
        GpuProcess(0, 77, "python3", None, False),  # WDDM/WSL2: NVML has no per-process memory
        GpuProcess(0, 901, "Xorg", 300 * MIB, False),
        GpuProcess(0, 4242, "ollama", 4_700 * MIB, True),
    )
    assert is_ollama_process("ollama_llama_server") and is_ollama_process("ollama.exe")
    assert not is_ollama_process(None)


def test_a_failing_name_lookup_leaves_the_process_unnamed() -> None:
    def names(pid: int) -> str | None:
        raise PermissionError("no /proc here")

    sampler = make_sampler(ScriptedNvml([FakeGpu(compute=[(10, GIB)])]), names=names)
    assert sampler.tick().processes == (GpuProcess(0, 10, None, GIB, False),)


def test_process_names_come_from_psutil_by_default() -> None:
    import os

    assert process_name(os.getpid()) is not None
    assert process_name(2**22 + 12345) is None  # no such pid


def test_ring_buffer_keeps_the_last_window_only() -> None:
    sampler = make_sampler(ScriptedNvml([FakeGpu()]), interval=0.5, window=2.0)
    taken = [sampler.tick() for _ in range(10)]
    assert sampler.samples() == taken[-4:]
    assert sampler.samples(since=taken[-2].t) == taken[-2:]
    assert GpuSampler(interval=0.5).samples() == []
    assert GpuSampler()._samples.maxlen == 1200  # 10 minutes at 0.5 s


def test_bad_parameters_are_refused_with_their_values() -> None:
    with pytest.raises(ValueError, match=r"interval must be > 0 seconds, got 0"):
        GpuSampler(interval=0)
    with pytest.raises(ValueError, match=r"window \(0.1 s\) must be at least one interval \(0.5 s\)"):
        GpuSampler(window=0.1)
    with pytest.raises(ValueError, match=r"Cadence.power must be a whole number of ticks >= 1, got 0"):
        Cadence(power=0)


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
    worker = sampler._thread
    assert worker is not None and worker.is_alive()
    sampler.stop()
    assert not sampler.running
    assert not worker.is_alive()  # stop() joined it: no sample can come after it
    assert nvml.initialised == 0  # nvmlShutdown balanced nvmlInit


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
    sampler = GpuSampler(interval=0.05, window=5.0, timeline=Timeline()).start()
    try:
        deadline = time.monotonic() + 10
        while len(sampler.samples()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        status = sampler.status
        assert status.available and status.devices[0].name == nvml_text(name)
        assert status.driver and status.cuda
        device = sampler.latest().devices[0]
        assert device.memory_total == total
        assert device.memory_used is not None and 0 <= device.memory_used <= total
        assert device.gpu_util is None or 0 <= device.gpu_util <= 100
        rows = list(csv.DictReader(io.StringIO(sampler.to_csv())))
        assert len(rows) >= 3 * len(status.devices)
    finally:
        sampler.stop()
    cost = tick_cost(ticks=64, rounds=1)
    assert cost.skipped == "" and cost.ours > 0 and cost.peer > 0
