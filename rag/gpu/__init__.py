"""Watching the GPU while a model answers: an NVML sampler, generation phases on its timeline, and
where Ollama placed its models (GET /api/ps).

- `GpuSampler` reads NVML (nvidia-ml-py) every 0.5 s on a background thread into a ring buffer of
  frozen `Sample`s (the last 10 minutes). NVML sits behind the small `Nvml` protocol, whose methods
  are named and behave as pynvml's functions, so the `pynvml` module itself is the real one and tests
  drive the sampler with a scripted stand-in. Without NVML (no driver, no GPU) the sampler says why in
  NVML's own words and records CPU and RAM instead; nothing it does raises.
- A `Timeline` holds marks for the phases of generations (load, prompt evaluation, thinking, output),
  placed on the same clock as the samples. `TIMELINE` is the process-wide one: any page that streams
  a generation marks it there (`TIMELINE.mark_generation(...)`) and the GPU page draws it.
- `WatchedGeneration` streams one generation on a thread, so that a page can keep redrawing its charts
  while the model answers; `placement_advice` turns /api/ps into the warning the user needs when a
  model runs on the CPU although a GPU exists.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import httpx
import ollama
import psutil

from rag.errors import ModelError
from rag.llms.ollama.admin import unload_model  # noqa: F401 - the GPU page unloads through it
from rag.llms import ChatModel, GenerationStats, LoadedModel, Message

try:  # nvidia-ml-py is a requirement, but the app must still run (and say why) without it
    import pynvml
except ImportError:  # pragma: no cover - exercised only on a broken install
    pynvml = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

INTERVAL = 0.5
"""Seconds between two samples."""
WINDOW = 600.0
"""Seconds of samples the ring buffer keeps (10 minutes)."""

# NVML's constants (stable across NVML versions; repeated here so that nothing needs pynvml to load).
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_MEM = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16

_MIB = 1024 * 1024


# ------------------------------------------------------------------------------------------------
# The NVML interface


class Nvml(Protocol):
    """The NVML calls the sampler makes, with pynvml's names and behaviour: the `pynvml` module is
    the real implementation. Any call may raise `pynvml.NVMLError` (NOT_SUPPORTED for a reading the
    device does not have, GPU_IS_LOST, DRIVER_NOT_LOADED at init, ...)."""

    def nvmlInit(self) -> None: ...

    def nvmlShutdown(self) -> None: ...

    def nvmlSystemGetDriverVersion(self) -> str: ...

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        """e.g. 12090 for CUDA 12.9."""
        ...

    def nvmlDeviceGetCount(self) -> int: ...

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...

    def nvmlDeviceGetName(self, handle: Any) -> str: ...

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
        """An object with `used` and `total` (bytes)."""
        ...

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any:
        """An object with `gpu` and `memory` (percent over the last sample period)."""
        ...

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int: ...

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        """Milliwatts."""
        ...

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        """Milliwatts."""
        ...

    def nvmlDeviceGetClockInfo(self, handle: Any, type: int) -> int:
        """MHz."""
        ...

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]:
        """Objects with `pid` and `usedGpuMemory` (bytes, or None where the OS does not say)."""
        ...

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Any) -> list[Any]: ...


NvmlFactory = Callable[[], Nvml]


def load_pynvml() -> Nvml:
    """The real NVML (ImportError when nvidia-ml-py is not installed)."""
    if pynvml is None:
        raise ImportError("nvidia-ml-py is not installed: run 'pip install nvidia-ml-py'")
    return pynvml  # type: ignore[return-value]


_SOURCES: dict[str, NvmlFactory] = {"pynvml": load_pynvml}
_selected_source = "pynvml"
_sources_lock = threading.Lock()


def register_nvml(name: str, factory: NvmlFactory) -> None:
    """Make another NVML available under `name` (tests register scripted stand-ins)."""
    if not name.strip():
        raise ValueError("an NVML source needs a name")
    with _sources_lock:
        _SOURCES[name] = factory


def select_nvml(name: str) -> str:
    """Use the NVML registered as `name` for samplers opened from now on; returns the previous name."""
    global _selected_source
    with _sources_lock:
        if name not in _SOURCES:
            raise ValueError(f"no NVML source named {name!r} (registered: {', '.join(sorted(_SOURCES))})")
        previous, _selected_source = _selected_source, name
    return previous


def selected_nvml() -> str:
    """The name of the NVML source in use ('pynvml' unless a test chose another)."""
    return _selected_source


def nvml_factory(name: str | None = None) -> NvmlFactory:
    with _sources_lock:
        chosen = name or _selected_source
        if chosen not in _SOURCES:
            raise ValueError(f"no NVML source named {chosen!r} (registered: {', '.join(sorted(_SOURCES))})")
        return _SOURCES[chosen]


def _error_code(exc: BaseException) -> int | None:
    if pynvml is not None and isinstance(exc, pynvml.NVMLError):
        return int(exc.value)
    return None


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def cuda_version_text(version: int) -> str:
    """NVML's integer CUDA version as nvidia-smi writes it: 12090 -> '12.9', 12020 -> '12.2'."""
    return f"{version // 1000}.{(version % 1000) // 10}"


def no_gpu_hint(reason: str) -> str:
    """What to check, for the reason NVML gave for not seeing a GPU."""
    low = reason.lower()
    if "not installed" in low:
        return "install it: pip install nvidia-ml-py"
    if "library not found" in low:
        return ("no NVIDIA driver is installed here, or (in a container) the container was not given "
                "the GPU: see docs/gpu.md")
    if "driver not loaded" in low:
        return "the NVIDIA driver is installed but not loaded: run 'nvidia-smi' and see docs/gpu.md"
    if "no nvidia gpu" in low:
        return "the driver is loaded but sees no GPU: check 'nvidia-smi'"
    if "insufficient permissions" in low:
        return "this user may not open the GPU device: check the permissions of /dev/nvidia*"
    return "see docs/gpu.md for the driver and container checks"


# ------------------------------------------------------------------------------------------------
# Samples


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str


@dataclass(frozen=True)
class GpuStatus:
    available: bool
    """NVML answered and found at least one GPU."""
    reason: str
    """Why there is no GPU, in NVML's own words ('' when there is one)."""
    driver: str | None = None
    cuda: str | None = None
    """The CUDA version the driver supports ('12.9')."""
    devices: tuple[DeviceInfo, ...] = ()
    problems: tuple[str, ...] = ()
    """One line per device that failed after it was found (e.g. 'GPU is lost')."""
    unsupported: tuple[tuple[int, str], ...] = ()
    """(device index, reading) pairs NVML answered 'Not Supported' for; those readings are None."""


@dataclass(frozen=True)
class DeviceSample:
    index: int
    name: str
    memory_used: int | None
    """Bytes of VRAM in use."""
    memory_total: int | None
    gpu_util: int | None
    """Percent of the last sample period in which a kernel ran."""
    memory_util: int | None
    """Percent of the last sample period in which memory was read or written."""
    temperature: int | None
    """Degrees Celsius."""
    power_draw: float | None
    """Watts."""
    power_limit: float | None
    clock_graphics: int | None
    """MHz."""
    clock_memory: int | None
    error: str | None = None
    """Set when the device failed (e.g. 'GPU is lost'); every reading is then None."""


@dataclass(frozen=True)
class GpuProcess:
    device: int
    pid: int
    name: str | None
    """From this machine's process table (None when the process is not visible, e.g. in another
    container)."""
    gpu_memory: int | None
    """Bytes; None where the OS does not say (Windows/WSL2)."""
    is_ollama: bool


@dataclass(frozen=True)
class HostSample:
    cpu_percent: float
    ram_used: int
    ram_total: int


@dataclass(frozen=True)
class Sample:
    t: float
    """Seconds since the epoch (time.time())."""
    devices: tuple[DeviceSample, ...] = ()
    processes: tuple[GpuProcess, ...] = ()
    host: HostSample | None = None


@dataclass(frozen=True)
class Cadence:
    """Every how many ticks each reading is taken; between readings the last value is carried
    forward. VRAM and utilisation are read on every tick; the rest changes slowly, and spreading it
    keeps a tick close to the cost of those two calls (see `tick_cost`)."""

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

    def schedule(self) -> list[frozenset[str]]:
        """For tick % len(result): the readings due besides VRAM and utilisation (on tick 0: all)."""
        period = math.lcm(*(getattr(self, name) for name in _OFFSETS))
        return [frozenset(name for name, offset in _OFFSETS.items()
                          if i % getattr(self, name) == offset % getattr(self, name))
                for i in range(period)]


# Staggered so that the slow readings do not all land on the same tick.
_OFFSETS = {"power": 1, "temperature": 2, "clocks": 3, "power_limit": 4, "processes": 6, "host_with_gpu": 7}
_EVERYTHING = frozenset(_OFFSETS)


def read_host() -> HostSample:
    """CPU (percent since the previous call) and RAM (used = total - available), via psutil."""
    memory = psutil.virtual_memory()
    return HostSample(psutil.cpu_percent(interval=None), int(memory.total - memory.available), int(memory.total))


def process_name(pid: int) -> str | None:
    try:
        return psutil.Process(pid).name()
    except (psutil.Error, OSError):
        return None


def is_ollama_process(name: str | None) -> bool:
    """Ollama's server and its runners ('ollama', 'ollama_llama_server', 'ollama.exe')."""
    return name is not None and "ollama" in name.lower()


class _Lost(Exception):
    pass


@dataclass
class _Device:
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
                    except Exception:  # noqa: BLE001 - CPU/RAM are a nicety
                        log.debug("host sample failed", exc_info=True)
        return self.status

    def _open(self) -> None:
        try:
            nvml = self._factory()
        except ImportError as exc:
            self._set_status(GpuStatus(False, str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - a broken install must not break the page
            self._set_status(GpuStatus(False, f"{type(exc).__name__}: {exc}"))
            return
        try:
            nvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - NVMLError (driver not loaded, no library, ...)
            reason = str(exc) if _error_code(exc) is not None else f"{type(exc).__name__}: {exc}"
            log.info("NVML is not available: %s", reason)
            self._set_status(GpuStatus(False, reason))
            return
        self._nvml = nvml
        self._initialised = True
        driver = cuda = None
        try:
            driver = _text(nvml.nvmlSystemGetDriverVersion())
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
                name = _text(nvml.nvmlDeviceGetName(handle))
            except Exception:  # noqa: BLE001
                name = f"GPU {index}"
            self._devices.append(_Device(index, handle, name))
        if not self._devices:
            reason = f"NVML found no NVIDIA GPU (driver {driver})" if driver else "NVML found no NVIDIA GPU"
            self._set_status(GpuStatus(False, reason, driver, cuda))
            return
        self._watching = any(d.lost is None for d in self._devices)
        self._set_status(GpuStatus(
            self._watching, "" if self._watching else f"every GPU failed: {'; '.join(problems)}", driver, cuda,
            tuple(DeviceInfo(d.index, d.name) for d in self._devices), tuple(problems),
        ))

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
                    except Exception:  # noqa: BLE001
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
            except Exception:  # noqa: BLE001 - the sampler must outlive any one bad reading
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
                devices.append(DeviceSample(device.index, device.name, *([None] * 9), error=device.lost))
            if changed:
                self._processes = self._name_processes()
            if self._host is not None and (not self._watching or "host_with_gpu" in due):
                try:
                    self._last_host = self._host()
                except Exception:  # noqa: BLE001 - CPU/RAM are a nicety
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
        code = _error_code(exc)
        if code == NVML_ERROR_NOT_SUPPORTED:
            device.unsupported.add(reading)
            with self._lock:
                self._status = _replace_status(
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
                last["temperature"] = call(device, "temperature", nvml.nvmlDeviceGetTemperature,
                                           NVML_TEMPERATURE_GPU)
            if "clocks" in due:
                last["clock_graphics"] = call(device, "clock_graphics", nvml.nvmlDeviceGetClockInfo,
                                              NVML_CLOCK_GRAPHICS)
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
        for reading, fn in (("compute_processes", nvml.nvmlDeviceGetComputeRunningProcesses),
                            ("graphics_processes", nvml.nvmlDeviceGetGraphicsRunningProcesses)):
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
                except Exception:  # noqa: BLE001 - a name is a nicety
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
            self._status = _replace_status(
                status,
                problems=(*status.problems, problem),
                available=alive,
                reason="" if alive else f"every GPU failed: {problem}",
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


def _replace_status(status: GpuStatus, **changes: Any) -> GpuStatus:
    return dataclasses.replace(status, **changes)


CSV_COLUMNS = (
    "time", "epoch", "gpu", "name", "driver", "cuda", "vram_used_mib", "vram_total_mib", "gpu_util_pct",
    "mem_util_pct", "temperature_c", "power_w", "power_limit_w", "clock_graphics_mhz", "clock_memory_mhz",
    "ollama_vram_mib", "gpu_processes", "error", "cpu_pct", "ram_used_mib", "ram_total_mib",
)


def samples_csv(samples: Iterable[Sample], status: GpuStatus | None = None) -> str:
    """One row per sample and GPU (one per sample when there is none); empty cells for readings
    the device does not support. Times are local, ISO 8601 with milliseconds."""

    def num(value: float | int | None, scale: float = 1.0, digits: int = 1) -> str:
        if value is None:
            return ""
        scaled = value / scale
        return str(int(scaled)) if scale == 1.0 and isinstance(value, int) else f"{scaled:.{digits}f}"

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    driver = status.driver if status else None
    cuda = status.cuda if status else None
    for s in samples:
        when = datetime.fromtimestamp(s.t).isoformat(timespec="milliseconds")
        host = [num(s.host.cpu_percent), num(s.host.ram_used, _MIB), num(s.host.ram_total, _MIB)] if s.host else ["", "", ""]
        if not s.devices:
            writer.writerow([when, f"{s.t:.3f}", *([""] * 16), *host])
            continue
        for d in s.devices:
            procs = [p for p in s.processes if p.device == d.index]
            ollama_mem = [p.gpu_memory for p in procs if p.is_ollama and p.gpu_memory is not None]
            writer.writerow([
                when, f"{s.t:.3f}", d.index, d.name, driver or "", cuda or "",
                num(d.memory_used, _MIB), num(d.memory_total, _MIB), num(d.gpu_util), num(d.memory_util),
                num(d.temperature), num(d.power_draw), num(d.power_limit), num(d.clock_graphics),
                num(d.clock_memory), num(sum(ollama_mem), _MIB) if ollama_mem else "", len(procs),
                d.error or "", *host,
            ])
    return out.getvalue()


# ------------------------------------------------------------------------------------------------
# Marks: the phases of generations on the samples' clock

PHASES = ("load", "prompt", "thinking", "output")
PHASE_TITLES = {"load": "model load", "prompt": "prompt evaluation", "thinking": "thinking", "output": "output"}


@dataclass(frozen=True)
class Mark:
    phase: str
    start: float
    """Epoch seconds, like Sample.t."""
    end: float
    label: str = ""
    """What generated: e.g. 'gpu page: qwen2.5:7b-instruct' or 'chat: qwen2.5:7b-instruct'."""

    @property
    def seconds(self) -> float:
        return self.end - self.start


class Timeline:
    """Marks of generation phases, bounded, thread-safe."""

    def __init__(self, maxlen: int = 2000) -> None:
        self._marks: deque[Mark] = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def mark(self, phase: str, start: float, end: float, label: str = "") -> Mark:
        if not isinstance(phase, str) or not phase.strip():
            raise ValueError(f"a mark needs a phase name, got {phase!r}")
        if not (math.isfinite(start) and math.isfinite(end)):
            raise ValueError(f"mark {phase!r} needs finite times, got start={start!r}, end={end!r}")
        if end < start:
            raise ValueError(f"mark {phase!r} ends before it starts: start={start!r}, end={end!r}")
        made = Mark(phase, float(start), float(end), label)
        with self._lock:
            self._marks.append(made)
        return made

    def marks(self, since: float | None = None) -> list[Mark]:
        """Marks that end at or after `since`, in the order they were made."""
        with self._lock:
            items = list(self._marks)
        return items if since is None else [m for m in items if m.end >= since]

    def mark_generation(
        self,
        label: str,
        started: float,
        finished: float,
        stats: GenerationStats | None,
        *,
        first_token_at: float | None = None,
        first_content_at: float | None = None,
    ) -> list[Mark]:
        """Mark the phases of one generation (see `generation_phases`); returns the marks made.

        `started` is when the request was sent, `finished` when the last event arrived, both
        time.time(); `first_token_at` the first thinking or answer text, `first_content_at` the first
        answer text."""
        return [self.mark(phase, a, b, label) for phase, a, b in generation_phases(
            started, finished, stats, first_token_at=first_token_at, first_content_at=first_content_at)]

    def clear(self) -> None:
        with self._lock:
            self._marks.clear()


TIMELINE = Timeline()
"""The process-wide timeline: every page that streams a generation marks it here."""


def generation_phases(
    started: float,
    finished: float,
    stats: GenerationStats | None,
    *,
    first_token_at: float | None = None,
    first_content_at: float | None = None,
) -> list[tuple[str, float, float]]:
    """(phase, start, end) spans of a generation, within [started, finished].

    From Ollama's statistics: the generation began `total_duration` before it finished; the model
    load (`load_duration`) and the prompt evaluation (`prompt_eval_duration`) follow each other from
    there, and the output takes the last `eval_duration` (all scaled down in proportion should they
    add up to more than the client waited). When thinking came first (`first_content_at`,
    the first answer text, is later than `first_token_at`), the output is split into thinking and
    output. A stopped
    generation has no server timings: it is split at the first token instead, into 'prompt' (load
    and prompt evaluation together) and the output.
    """
    if finished < started:
        raise ValueError(f"a generation cannot finish ({finished!r}) before it started ({started!r})")

    def clamp(t: float) -> float:
        return min(max(t, started), finished)

    s = stats or GenerationStats()
    spans: list[tuple[str, float, float]] = []
    timed = any(v is not None for v in (s.load_duration, s.prompt_eval_duration, s.eval_duration))
    if timed and s.done_reason != "stopped":
        parts = sum(v or 0.0 for v in (s.load_duration, s.prompt_eval_duration, s.eval_duration))
        total = max(s.total_duration or 0.0, parts)
        elapsed = finished - started
        # The server's durations fit in what the client waited; when they do not (a replayed stream,
        # a skewed clock) they are scaled down so that the phases keep their proportions.
        scale = elapsed / total if total > elapsed and total > 0 else 1.0
        cursor = clamp(finished - total * scale) if s.total_duration else started
        for phase, seconds in (("load", s.load_duration), ("prompt", s.prompt_eval_duration)):
            if seconds:
                spans.append((phase, cursor, clamp(cursor + seconds * scale)))
                cursor = clamp(cursor + seconds * scale)
        if s.eval_duration:
            out_start = max(cursor, clamp(finished - s.eval_duration * scale))
        elif first_token_at is not None:
            out_start = max(cursor, clamp(first_token_at))
        else:
            out_start = finished
    elif first_token_at is not None:
        out_start = clamp(first_token_at)
        if out_start > started:
            spans.append(("prompt", started, out_start))
    else:
        return [("prompt", started, finished)] if finished > started else []
    if out_start < finished:
        thought_first = (first_token_at is not None and first_content_at is not None
                         and first_content_at > first_token_at)
        if thought_first:
            split = max(out_start, clamp(first_content_at))
            if split > out_start:
                spans.append(("thinking", out_start, split))
            if finished > split:
                spans.append(("output", split, finished))
        else:
            spans.append(("output", out_start, finished))
    return spans


# ------------------------------------------------------------------------------------------------
# A generation watched from a page


@dataclass(frozen=True)
class GenerationView:
    """What a watched generation has done so far."""

    model: str
    prompt: str
    text: str
    thinking: str
    running: bool
    started_at: float
    first_token_at: float | None
    finished_at: float | None
    stats: GenerationStats | None
    error: str | None
    marks: tuple[Mark, ...]

    @property
    def time_to_first_token(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.started_at

    @property
    def tokens_per_second(self) -> float | None:
        return self.stats.tokens_per_second if self.stats else None

    @property
    def load_seconds(self) -> float | None:
        return self.stats.load_duration if self.stats else None


class WatchedGeneration:
    """Streams one generation on a background thread; `view()` tells how far it got. When it ends
    (finished, stopped or failed), its phases are marked on the timeline."""

    def __init__(
        self,
        model: ChatModel,
        prompt: str,
        *,
        label: str | None = None,
        timeline: Timeline | None = None,
        clock: Callable[[], float] = time.time,
        num_ctx: int | None = None,
    ) -> None:
        if not prompt.strip():
            raise ValueError("the prompt is empty: type a question first")
        self._model = model
        self._prompt = prompt
        self._label = label or f"gpu page: {model.name.removeprefix('ollama:')}"
        self._timeline = timeline if timeline is not None else TIMELINE
        self._clock = clock
        self._num_ctx = num_ctx
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._done = threading.Event()
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._started = clock()
        self._first_token: float | None = None
        self._first_content: float | None = None
        self._finished: float | None = None
        self._stats: GenerationStats | None = None
        self._error: str | None = None
        self._marks: tuple[Mark, ...] = ()
        self._thread: threading.Thread | None = None

    def start(self) -> WatchedGeneration:
        if self._thread is None:
            self._started = self._clock()
            self._thread = threading.Thread(target=self._run, name="watched-generation", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the model to stop; the generation ends with what it has."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """True once the generation has ended."""
        return self._done.wait(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._done.is_set()

    def _run(self) -> None:
        try:
            events = self._model.stream([Message("user", self._prompt)], num_ctx=self._num_ctx,
                                        stop_event=self._stop)
            for event in events:
                now = self._clock()
                with self._lock:
                    if event.kind in ("thinking", "content") and event.text:
                        if self._first_token is None:
                            self._first_token = now
                        if event.kind == "content":
                            if self._first_content is None:
                                self._first_content = now
                            self._text.append(event.text)
                        else:
                            self._thinking.append(event.text)
                    elif event.kind == "done":
                        self._stats = event.stats
        except ModelError as exc:
            with self._lock:
                self._error = str(exc)
        except Exception as exc:  # noqa: BLE001 - shown on the page, never a dead thread
            log.exception("watched generation failed")
            with self._lock:
                self._error = f"{type(exc).__name__}: {exc}"
        finally:
            finished = self._clock()
            marks: list[Mark] = []
            if self._stats is not None or self._first_token is not None:
                try:
                    marks = self._timeline.mark_generation(
                        self._label, self._started, finished, self._stats,
                        first_token_at=self._first_token,
                        # thinking that never reached an answer (stopped) is thinking to the end
                        first_content_at=self._first_content or (finished if self._thinking else None),
                    )
                except ValueError:  # a clock that went backwards: no marks rather than a crash
                    log.warning("could not mark the generation's phases", exc_info=True)
            with self._lock:
                self._finished = finished
                self._marks = tuple(marks)
            self._done.set()

    def view(self) -> GenerationView:
        with self._lock:
            return GenerationView(
                model=self._model.name,
                prompt=self._prompt,
                text="".join(self._text),
                thinking="".join(self._thinking),
                running=self.running,
                started_at=self._started,
                first_token_at=self._first_token,
                finished_at=self._finished,
                stats=self._stats,
                error=self._error,
                marks=self._marks,
            )


# ------------------------------------------------------------------------------------------------
# Ollama: placement and keep-alive


@dataclass(frozen=True)
class PlacementAdvice:
    severity: str
    """'error' (a model runs on the CPU although a GPU exists), 'info' (on the CPU, no GPU here)."""
    title: str
    causes: tuple[str, ...] = ()


def placement_advice(
    models: Sequence[LoadedModel], status: GpuStatus, latest: Sample | None = None
) -> PlacementAdvice | None:
    """What to tell the user about where Ollama put its models; None when all is on the GPU."""
    on_cpu = [m for m in models if m.share_on_gpu == "100% CPU"]
    split = [m for m in models if m.share_on_gpu not in ("100% GPU", "100% CPU")]
    if not on_cpu and not split:
        return None
    names = ", ".join(f"{m.name} ({m.share_on_gpu})" for m in (*on_cpu, *split))
    if not status.available:
        return PlacementAdvice(
            "info",
            f"{names}: on the CPU, as expected, since this app sees no NVIDIA GPU ({status.reason}). "
            "If Ollama runs on another machine or container that has a GPU, check there with 'ollama ps'.",
        )
    devices = latest.devices if latest else ()
    free = [(d.memory_total - d.memory_used) for d in devices if d.memory_total is not None and d.memory_used is not None]
    total = [d.memory_total for d in devices if d.memory_total is not None]
    others = [p for p in (latest.processes if latest else ()) if not p.is_ollama and p.gpu_memory]
    gpu_names = ", ".join(d.name for d in status.devices)
    vram = (f"free VRAM now {_gib(sum(free))} of {_gib(sum(total))}" if free and total else "free VRAM unknown")
    causes: list[str] = []
    if on_cpu:
        causes += [
            "Ollama was not given the GPU: 'docker compose exec ollama nvidia-smi' must list it; the "
            "compose file must reserve it (deploy.resources.reservations.devices with driver: nvidia, "
            "capabilities: [gpu]) and you must not be using the CPU-only override.",
            "The NVIDIA Container Toolkit is missing or Docker is not set up for it (on Windows: "
            "Docker Desktop's WSL2 integration): 'docker run --rm --gpus all ubuntu nvidia-smi' must "
            "show the GPU.",
            "Ollama found no usable GPU backend: 'docker compose logs ollama' showing only "
            "'loaded CPU backend', or 'no compatible GPUs were discovered', means it fell back to the "
            "CPU; a driver older than Ollama's CUDA needs (see 'nvidia-smi') does this too.",
        ]
    largest = max((*on_cpu, *split), key=lambda m: m.size)
    context = f", context {largest.context_length} tokens" if largest.context_length else ""
    causes.append(
        f"Not enough VRAM for the model and its context: {largest.name} needs {_gib(largest.size)}{context}; "
        f"{vram}. Use a smaller model or quantisation, a smaller context (num_ctx), or unload other "
        "models (keep-alive control below)."
    )
    if others:
        listed = ", ".join(f"{p.name or 'pid ' + str(p.pid)} ({_gib(p.gpu_memory or 0)})" for p in others[:5])
        causes.append(f"Other programs hold VRAM: {listed}.")
    what = "runs on the CPU" if on_cpu and not split else "runs partly or wholly on the CPU"
    return PlacementAdvice("error", f"{names} {what} although this machine has a GPU ({gpu_names}).",
                           tuple(causes))


def _gib(n: int | float) -> str:
    return f"{n / 1024**3:.1f} GiB"


# ------------------------------------------------------------------------------------------------
# Benchmark support


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
    process and interleaved in rounds; a whole number of cadence periods is timed per round."""
    if ticks < 1 or rounds < 1:
        raise ValueError(f"ticks and rounds must be >= 1, got ticks={ticks!r}, rounds={rounds!r}")
    sampler = GpuSampler(nvml, window=INTERVAL * 16, timeline=Timeline())
    status = sampler.open()
    try:
        if not status.available:
            return TickCost(0, 0, 0.0, 0.0, skipped=f"no GPU to sample ({status.reason})")
        real = sampler._nvml
        assert real is not None
        handles = [d.handle for d in sampler._devices if d.lost is None]
        period = len(sampler._schedule)
        n = max(period, ticks - ticks % period)
        sampler.tick()  # the first tick reads everything
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
        return TickCost(len(handles), n, ours, peer)
    finally:
        sampler.stop()
