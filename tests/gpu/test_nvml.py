"""rag/gpu/nvml.py: the NVML sources are registered and selected by name, and the `Nvml` interface is
pinned to nvidia-ml-py's own functions, parameters, structures and error codes.
"""

from __future__ import annotations

import pynvml
import pytest

from rag.gpu.nvml import Nvml, cuda_version_text, nvml_factory, register_nvml, select_nvml, selected_nvml
from tests.gpu.fakes import FakeGpu, ScriptedNvml


def test_cuda_version_is_written_as_nvidia_smi_does() -> None:
    assert cuda_version_text(12090) == "12.9"
    assert cuda_version_text(12020) == "12.2"
    assert cuda_version_text(11080) == "11.8"


def test_nvml_sources_are_registered_and_selected_by_name() -> None:
    nvml = ScriptedNvml([FakeGpu()])
    register_nvml("test-registry", lambda: nvml)
    previous = select_nvml("test-registry")
    try:
        assert selected_nvml() == "test-registry"
        assert nvml_factory()() is nvml
    finally:
        select_nvml(previous)
    assert selected_nvml() == "pynvml"
    with pytest.raises(ValueError, match=r"no NVML source named 'nope' \(registered: .*pynvml"):
        select_nvml("nope")


def test_the_nvml_interface_matches_the_real_pynvml_module() -> None:
    """The stand-in speaks the interface; this pins the interface to nvidia-ml-py's own functions,
    parameters, structures and error codes, so the real path cannot drift from what is tested."""
    import inspect

    for name, method in inspect.getmembers(Nvml, inspect.isfunction):
        if name.startswith("_"):
            continue
        real = getattr(pynvml, name)
        ours = [p for p in inspect.signature(method).parameters if p != "self"]
        params = inspect.signature(real).parameters.values()
        # Ours are the real ones in order; any further real parameter has a default (a version).
        assert [p.name for p in params][: len(ours)] == ours, name
        assert all(p.default is not inspect.Parameter.empty for p in list(params)[len(ours) :]), name
        assert list(inspect.signature(getattr(ScriptedNvml, name)).parameters)[1:] == ours, name
    assert {"pid", "usedGpuMemory"} <= {f for f, _ in pynvml.c_nvmlProcessInfo_t._fields_}
    assert {"used", "total"} <= {f for f, _ in pynvml.c_nvmlMemory_t._fields_}
    assert {"gpu", "memory"} <= {f for f, _ in pynvml.c_nvmlUtilization_t._fields_}
    for code in (
        "NVML_ERROR_NOT_SUPPORTED",
        "NVML_ERROR_GPU_IS_LOST",
        "NVML_ERROR_DRIVER_NOT_LOADED",
        "NVML_ERROR_LIBRARY_NOT_FOUND",
        "NVML_ERROR_UNKNOWN",
    ):
        assert isinstance(getattr(pynvml, code), int)
    assert str(pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)) == "Not Supported"
