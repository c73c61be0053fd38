"""The GPU sampler: NVML read every 0.5 s on a background thread into a ring buffer of `Sample`s.

Without NVML (no driver, no GPU) the sampler says why in NVML's own words and records CPU and RAM
instead; nothing it does raises. VRAM and utilisation are read on every tick, slower readings on a
staggered `Cadence`, so a tick costs about what the two calls every GPU monitor makes cost.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil

from rag.gpu.nvml import (
    NVML_CLOCK_GRAPHICS,
    NVML_CLOCK_MEM,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_RESET_REQUIRED,
    NVML_TEMPERATURE_GPU,
    Nvml,
    NvmlFactory,
    cuda_version_text,
    error_code,
    load_pynvml,
    nvml_text,
)
from rag.gpu.samples import DeviceInfo, DeviceSample, GpuProcess, GpuStatus, HostSample, Sample, samples_csv
from rag.llms.telemetry import TIMELINE, Mark, Timeline
from rag.text import Text, text_of

log = logging.getLogger(__name__)

INTERVAL = 0.5
"""Seconds between two samples."""
WINDOW = 600.0
"""Seconds of samples the ring buffer keeps (10 minutes)."""


@dataclass(frozen=True)
class Cadence:
    """Every how many ticks each reading is taken; between readings the last value is carried
    forward. VRAM and utilisation are read on every tick; the rest changes slowly, and spreading it
    keeps a tick close to the cost of those two calls (see benchmarks.gpu.tick_cost)."""

    power: int = 4
    temperature: int = 16
    clocks: int = 16
    processes: int = 8
    power_limit: int = 120
    host_with_gpu: int = 20
    """CPU and RAM when a GPU is watched (without one they are read on every tick): reading them
    costs more than the NVML calls."""

    def __post_init__(self) -> None:
        for name in _OFFSETS:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Cadence.{name} must be a whole number of ticks >= 1, got {value!r}")

    @property
    def period(self) -> int:
        """Ticks after which the schedule repeats: a benchmark times whole periods."""
        return math.lcm(*(getattr(self, name) for name in _OFFSETS))

    def schedule(self) -> list[frozenset[str]]:
        """For tick % len(result): the readings due besides VRAM and utilisation (on tick 0: all)."""
        return [
            frozenset(
                name for name, offset in _OFFSETS.items() if i % getattr(self, name) == offset % getattr(self, name)
            )
            for i in range(self.period)
        ]


# Staggered so that the slow readings do not all land on the same tick.
_OFFSETS = {"power": 1, "temperature": 2, "clocks": 3, "power_limit": 4, "processes": 6, "host_with_gpu": 7}
_EVERYTHING = frozenset(_OFFSETS)


def read_host() -> HostSample:
    """CPU (percent since the previous call) and RAM (used = total - available), via psutil."""
    memory = psutil.virtual_memory()
    return HostSample(psutil.cpu_percent(interval=None), int(memory.total - memory.available), int(memory.total))


def process_name(pid: int) -> str | None:
    """The name of `pid` in this machine's process table; None when it is not visible from here."""
    try:
        return psutil.Process(pid).name()
    except (psutil.Error, OSError):
        return None


def is_ollama_process(name: str | None) -> bool:
    """Ollama's server and its runners ('ollama', 'ollama_llama_server', 'ollama.exe')."""
    return name is not None and "ollama" in name.lower()


class _Lost(Exception):
    """A device that NVML says is gone (GPU_IS_LOST, RESET_REQUIRED): it is not asked again."""


@dataclass
class _Device:
    """One GPU as the sampler tracks it: its handle, the last slow readings and what failed."""

    index: int
    handle: Any
    name: str
    last: dict[str, Any] = field(default_factory=dict)
    unsupported: set[str] = field(default_factory=set)
    lost: str | None = None
    processes: tuple[tuple[int, int | None], ...] = ()
    logged: set[str] = field(default_factory=set)


class GpuSampler:
    """Samples NVML on a background thread into a bounded ring buffer; thread-safe.

    `start()` once (it never raises), then read `status`, `samples()`, `latest()`, `to_csv()`.
    `tick()` takes one sample synchronously (the thread calls it every `interval` seconds).
    """

    def __init__(
        self,
        nvml: NvmlFactory = load_pynvml,
        *,
        interval: float = INTERVAL,
        window: float = WINDOW,
        cadence: Cadence | None = None,
        clock: Callable[[], float] = time.time,
        host: Callable[[], HostSample] | None = read_host,
        names: Callable[[int], str | None] = process_name,
        timeline: Timeline | None = None,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        if not window >= interval:
            raise ValueError(f"window ({window!r} s) must be at least one interval ({interval!r} s)")
        self._factory = nvml
        self.interval = float(interval)
        self.window = float(window)
        self.cadence = cadence or Cadence()
        self._clock = clock
        self._host = host
        self._names = names
        self._name_cache: dict[int, str | None] = {}
        self.timeline = timeline if timeline is not None else TIMELINE
        self._samples: deque[Sample] = deque(maxlen=max(1, math.ceil(window / interval)))
        self._lock = threading.Lock()
        """Guards the samples and the status."""
        self._tick_lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: Nvml | None = None
        self._opened = False
        self._initialised = False
        self._devices: list[_Device] = []
        self._watching = False
        """A GPU is being read (then CPU and RAM are read less often)."""
        self._schedule = self.cadence.schedule()
        self._ticks = 0
        self._complete = False
        self._processes: tuple[GpuProcess, ...] = ()
        self._last_host: HostSample | None = None
        self._status = GpuStatus(False, "not started")

    def __repr__(self) -> str:
        return f"GpuSampler(status={self._status!r}, samples={len(self._samples)})"

    # -- life cycle -------------------------------------------------------------------------------

    def open(self) -> GpuStatus:
        """Initialise NVML and find the devices (once); never raises: failures become the status."""
        with self._tick_lock:
            if not self._opened:
                self._opened = True
                self._open()
                if self._host is not None:
                    try:
                        self._host()  # psutil's first cpu_percent() has nothing to compare with
                    except Exception:
                        log.debug("host sample failed", exc_info=True)
        return self.status

    def _open(self) -> None:
        try:
            nvml = self._factory()
        except ImportError as exc:
            self._set_status(GpuStatus(False, text_of(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - a broken install must not break the page
            self._set_status(GpuStatus(False, f"{type(exc).__name__}: {exc}"))
            return
        try:
            nvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - NVMLError (driver not loaded, no library, ...)
            reason = str(exc) if error_code(exc) is not None else f"{type(exc).__name__}: {exc}"
            log.info("NVML is not available: %s", reason)
            self._set_status(GpuStatus(False, reason))
            return
        self._nvml = nvml
        self._initialised = True
        driver = cuda = None
        try:
            driver = nvml_text(nvml.nvmlSystemGetDriverVersion())
        except Exception as exc:  # noqa: BLE001
            log.info("NVML did not give the driver version: %s", exc)
        try:
            cuda = cuda_version_text(int(nvml.nvmlSystemGetCudaDriverVersion()))
        except Exception as exc:  # noqa: BLE001
            log.info("NVML did not give the CUDA version: %s", exc)
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as exc:  # noqa: BLE001
            self._set_status(GpuStatus(False, str(exc), driver, cuda))
            return
        problems: list[str] = []
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:  # noqa: BLE001 - e.g. GPU_IS_LOST for one of several GPUs
                device = _Device(index, None, f"GPU {index}", lost=str(exc))
                problems.append(f"GPU {index}: {exc}")
                self._devices.append(device)
                continue
            try:
                name = nvml_text(nvml.nvmlDeviceGetName(handle))
            except Exception:  # noqa: BLE001
                name = f"GPU {index}"
            self._devices.append(_Device(index, handle, name))
        if not self._devices:
            reason = (
                Text("NVML found no NVIDIA GPU (driver {driver})", driver=driver)
                if driver
                else Text("NVML found no NVIDIA GPU")
            )
            self._set_status(GpuStatus(False, reason, driver, cuda))
            return
        self._watching = any(d.lost is None for d in self._devices)
        self._set_status(
            GpuStatus(
                self._watching,
                "" if self._watching else Text("every GPU failed: {problems}", problems="; ".join(problems)),
                driver,
                cuda,
                tuple(DeviceInfo(d.index, d.name) for d in self._devices),
                tuple(problems),
            )
        )

    def start(self) -> GpuSampler:
        """Open NVML and start sampling every `interval` seconds (once; later calls do nothing)."""
        with self._start_lock:
            if self._thread is None:
                self.open()
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="gpu-sampler", daemon=True)
                self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the thread and release NVML."""
        with self._start_lock:
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout)
                self._thread = None
            with self._tick_lock:
                if self._initialised and self._nvml is not None:
                    try:
                        self._nvml.nvmlShutdown()
                    except Exception:
                        log.debug("nvmlShutdown failed", exc_info=True)
                    self._initialised = False

    def __enter__(self) -> GpuSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        deadline = time.monotonic()
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:
                log.exception("GPU sample failed")
            deadline += self.interval
            delay = deadline - time.monotonic()
            if delay < 0:  # fell behind (a slow call): sample on, without a burst to catch up
                deadline = time.monotonic()
                delay = 0.0
            self._stop.wait(delay)

    # -- sampling ---------------------------------------------------------------------------------

    def tick(self) -> Sample:
        """Take one sample now, append it to the buffer and return it."""
        if not self._opened:
            self.open()
        with self._tick_lock:
            tick = self._ticks
            self._ticks += 1
            # Everything until one tick has gone through, so that the first sample is complete.
            due = self._schedule[tick % len(self._schedule)] if self._complete else _EVERYTHING
            t = self._clock()
            devices: list[DeviceSample] = []
            changed = "processes" in due
            for device in self._devices:
                if device.lost is None:
                    try:
                        devices.append(self._read_device(device, due))
                        continue
                    except _Lost as exc:
                        device.lost = str(exc)
                        device.processes = ()
                        changed = True
                        log.warning("GPU %d (%s) failed: %s", device.index, device.name, exc)
                        self._mark_lost(device)
                devices.append(DeviceSample.failed(device.index, device.name, device.lost))
            if changed:
                self._processes = self._name_processes()
            if self._host is not None and (not self._watching or "host_with_gpu" in due):
                try:
                    self._last_host = self._host()
                except Exception:
                    log.debug("host sample failed", exc_info=True)
            sample = Sample(t, tuple(devices), self._processes, self._last_host)
            with self._lock:
                self._samples.append(sample)
            self._complete = True
            return sample

    def _call(self, device: _Device, reading: str, fn: Callable[..., Any], *args: Any) -> Any:
        if reading in device.unsupported:
            return None
        try:
            return fn(device.handle, *args)
        except Exception as exc:  # noqa: BLE001 - NVMLError, or anything a broken driver throws
            return self._failed(device, reading, exc)

    def _failed(self, device: _Device, reading: str, exc: Exception) -> None:
        """A reading NVML refused: None for it (for good when 'Not Supported'); _Lost for a lost GPU."""
        code = error_code(exc)
        if code == NVML_ERROR_NOT_SUPPORTED:
            device.unsupported.add(reading)
            with self._lock:
                self._status = dataclasses.replace(
                    self._status, unsupported=(*self._status.unsupported, (device.index, reading))
                )
            return None
        if code in (NVML_ERROR_GPU_IS_LOST, NVML_ERROR_RESET_REQUIRED):
            raise _Lost(str(exc)) from exc
        if reading not in device.logged:  # once per reading: the thread would repeat it twice a second
            device.logged.add(reading)
            log.warning("GPU %d: NVML could not read %s: %s", device.index, reading, exc)
        return None

    def _read_device(self, device: _Device, due: frozenset[str]) -> DeviceSample:
        nvml = self._nvml
        assert nvml is not None  # devices exist only after a successful init
        call = self._call
        last = device.last
        # The two readings of every tick, without the detour through _call.
        memory = util = None
        if "memory" not in device.unsupported:
            try:
                memory = nvml.nvmlDeviceGetMemoryInfo(device.handle)
            except Exception as exc:  # noqa: BLE001
                self._failed(device, "memory", exc)
        if "utilization" not in device.unsupported:
            try:
                util = nvml.nvmlDeviceGetUtilizationRates(device.handle)
            except Exception as exc:  # noqa: BLE001
                self._failed(device, "utilization", exc)
        if due:
            if "power" in due:
                mw = call(device, "power", nvml.nvmlDeviceGetPowerUsage)
                last["power"] = None if mw is None else mw / 1000.0
            if "power_limit" in due:
                mw = call(device, "power_limit", nvml.nvmlDeviceGetEnforcedPowerLimit)
                last["power_limit"] = None if mw is None else mw / 1000.0
            if "temperature" in due:
                last["temperature"] = call(device, "temperature", nvml.nvmlDeviceGetTemperature, NVML_TEMPERATURE_GPU)
            if "clocks" in due:
                last["clock_graphics"] = call(
                    device, "clock_graphics", nvml.nvmlDeviceGetClockInfo, NVML_CLOCK_GRAPHICS
                )
                last["clock_memory"] = call(device, "clock_memory", nvml.nvmlDeviceGetClockInfo, NVML_CLOCK_MEM)
            if "processes" in due:
                device.processes = self._read_processes(device)
        return DeviceSample(
            device.index,
            device.name,
            None if memory is None else int(memory.used),
            None if memory is None else int(memory.total),
            None if util is None else int(util.gpu),
            None if util is None else int(util.memory),
            last.get("temperature"),
            last.get("power"),
            last.get("power_limit"),
            last.get("clock_graphics"),
            last.get("clock_memory"),
        )

    def _read_processes(self, device: _Device) -> tuple[tuple[int, int | None], ...]:
        nvml = self._nvml
        assert nvml is not None
        memory: dict[int, int | None] = {}
        for reading, fn in (
            ("compute_processes", nvml.nvmlDeviceGetComputeRunningProcesses),
            ("graphics_processes", nvml.nvmlDeviceGetGraphicsRunningProcesses),
        ):
            for proc in self._call(device, reading, fn) or ():
                used = getattr(proc, "usedGpuMemory", None)
                pid = int(proc.pid)
                known = memory.get(pid)
                memory[pid] = used if known is None else (known if used is None else max(known, int(used)))
        return tuple(sorted(memory.items()))

    def _name_processes(self) -> tuple[GpuProcess, ...]:
        """The processes every device listed last, named (psutil, cached while the pid stays)."""
        listed = [(d.index, pid, mem) for d in self._devices for pid, mem in d.processes]
        pids = {pid for _, pid, _ in listed}
        for pid in list(self._name_cache):
            if pid not in pids:  # gone: its pid may come back as another program
                del self._name_cache[pid]
        out = []
        for index, pid, mem in listed:
            if pid not in self._name_cache:
                try:
                    self._name_cache[pid] = self._names(pid)
                except Exception:
                    log.debug("no name for pid %d", pid, exc_info=True)
                    self._name_cache[pid] = None
            name = self._name_cache[pid]
            out.append(GpuProcess(index, pid, name, None if mem is None else int(mem), is_ollama_process(name)))
        return tuple(out)

    def _mark_lost(self, device: _Device) -> None:
        with self._lock:
            status = self._status
            problem = f"GPU {device.index} ({device.name}): {device.lost}"
            alive = any(d.lost is None for d in self._devices)
            self._watching = alive
            self._status = dataclasses.replace(
                status,
                problems=(*status.problems, problem),
                available=alive,
                reason="" if alive else Text("every GPU failed: {problems}", problems=problem),
            )

    def _set_status(self, status: GpuStatus) -> None:
        with self._lock:
            self._status = status

    # -- reading ----------------------------------------------------------------------------------

    @property
    def status(self) -> GpuStatus:
        with self._lock:
            return self._status

    def samples(self, since: float | None = None) -> list[Sample]:
        """The samples taken at or after `since` (epoch seconds), oldest first."""
        with self._lock:
            items = list(self._samples)
        if since is None:
            return items
        return [s for s in items if s.t >= since]

    def latest(self) -> Sample | None:
        with self._lock:
            return self._samples[-1] if self._samples else None

    def mark(self, phase: str, start: float, end: float, label: str = "") -> Mark:
        """Mark a phase of a generation (epoch seconds) on this sampler's timeline."""
        return self.timeline.mark(phase, start, end, label)

    def marks(self, since: float | None = None) -> list[Mark]:
        return self.timeline.marks(since)

    def to_csv(self, samples: Sequence[Sample] | None = None) -> str:
        return samples_csv(self.samples() if samples is None else samples, self.status)
