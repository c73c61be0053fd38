"""What the GPU sampler records: frozen readings per device, process and host, and their CSV export.

Every reading is in plain units (bytes, percent, watts, MHz) and None where the device does not
have it, so that a chart, a table and the CSV show a gap rather than a made-up zero.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

_MIB = 1024 * 1024


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

    @classmethod
    def failed(cls, index: int, name: str, error: str | None) -> DeviceSample:
        """The sample of a device that failed: every reading None, with why."""
        return cls(index, name, None, None, None, None, None, None, None, None, None, error=error)


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


CSV_COLUMNS = (
    "time",
    "epoch",
    "gpu",
    "name",
    "driver",
    "cuda",
    "vram_used_mib",
    "vram_total_mib",
    "gpu_util_pct",
    "mem_util_pct",
    "temperature_c",
    "power_w",
    "power_limit_w",
    "clock_graphics_mhz",
    "clock_memory_mhz",
    "ollama_vram_mib",
    "gpu_processes",
    "error",
    "cpu_pct",
    "ram_used_mib",
    "ram_total_mib",
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
        host = (
            [num(s.host.cpu_percent), num(s.host.ram_used, _MIB), num(s.host.ram_total, _MIB)]
            if s.host
            else ["", "", ""]
        )
        if not s.devices:
            writer.writerow([when, f"{s.t:.3f}", *([""] * 16), *host])
            continue
        for d in s.devices:
            procs = [p for p in s.processes if p.device == d.index]
            ollama_mem = [p.gpu_memory for p in procs if p.is_ollama and p.gpu_memory is not None]
            writer.writerow(
                [
                    when,
                    f"{s.t:.3f}",
                    d.index,
                    d.name,
                    driver or "",
                    cuda or "",
                    num(d.memory_used, _MIB),
                    num(d.memory_total, _MIB),
                    num(d.gpu_util),
                    num(d.memory_util),
                    num(d.temperature),
                    num(d.power_draw),
                    num(d.power_limit),
                    num(d.clock_graphics),
                    num(d.clock_memory),
                    num(sum(ollama_mem), _MIB) if ollama_mem else "",
                    len(procs),
                    d.error or "",
                    *host,
                ]
            )
    return out.getvalue()
