"""The NVML interface the sampler reads through, and the registry of its implementations.

`Nvml` names the calls the sampler makes with pynvml's names and behaviour, so the `pynvml` module
itself is the real implementation. Others (a scripted stand-in in the tests) are registered under a
name and selected, never patched in: `register_nvml("scripted", factory)`, `select_nvml("scripted")`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from rag.text import Text

try:  # nvidia-ml-py is a requirement, but the app must still run (and say why) without it
    import pynvml
except ImportError:  # pragma: no cover - exercised only on a broken install
    pynvml = None

# NVML's constants (stable across NVML versions; repeated here so that nothing needs pynvml to load).
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_MEM = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16


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

    def nvmlDeviceGetClockInfo(self, handle: Any, type: int) -> int:  # noqa: A002 - pynvml's name; the module is an Nvml
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
        raise ImportError(Text("nvidia-ml-py is not installed: run 'pip install nvidia-ml-py'"))
    real: Nvml = pynvml  # pynvml has no type information; the module itself has every call Nvml names
    return real


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
    """The factory registered as `name` (default: the selected one)."""
    with _sources_lock:
        chosen = name or _selected_source
        if chosen not in _SOURCES:
            raise ValueError(f"no NVML source named {chosen!r} (registered: {', '.join(sorted(_SOURCES))})")
        return _SOURCES[chosen]


def error_code(exc: BaseException) -> int | None:
    """NVML's error code of `exc` (an NVMLError), else None: the sampler treats codes, not texts."""
    if pynvml is not None and isinstance(exc, pynvml.NVMLError):
        return int(exc.value)
    return None


def nvml_text(value: Any) -> str:
    """A string NVML returned: older pynvml versions give bytes."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def cuda_version_text(version: int) -> str:
    """NVML's integer CUDA version as nvidia-smi writes it: 12090 -> '12.9', 12020 -> '12.2'."""
    return f"{version // 1000}.{(version % 1000) // 10}"


NVML_MESSAGES = (
    "NVML Shared Library Not Found",
    "Driver Not Loaded",
    "Insufficient Permissions",
    "Unknown Error",
    "Not Supported",
    "GPU is lost",
    "No permission",
)
"""NVML's own words for why it failed (pynvml's `NVMLError` texts) that a UI shows translated where it knows them
(the Chinese sidebar said "（NVML: NVML Shared Library Not Found）" on every machine without an NVIDIA driver)."""


def no_gpu_hint(reason: str) -> str:
    """What to check, for the reason NVML gave for not seeing a GPU."""
    low = reason.lower()
    if "not installed" in low:
        return Text("install it: pip install nvidia-ml-py")
    if "library not found" in low:
        return Text(
            "no NVIDIA driver is installed here, or (in a container) the container was not given "
            "the GPU: see docs/gpu.md"
        )
    if "driver not loaded" in low:
        return Text("the NVIDIA driver is installed but not loaded: run 'nvidia-smi' and see docs/gpu.md")
    if "no nvidia gpu" in low:
        return Text("the driver is loaded but sees no GPU: check 'nvidia-smi'")
    if "insufficient permissions" in low:
        return Text("this user may not open the GPU device: check the permissions of /dev/nvidia*")
    return Text("see docs/gpu.md for the driver and container checks")
