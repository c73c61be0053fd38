"""rag/gpu/placement.py: the advice about where Ollama put its models, from a pytest-httpserver Ollama's
/api/ps, and the keep-alive unload it offers.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from pytest_httpserver import HTTPServer

from rag.errors import ModelError
from rag.gpu.placement import Placement, ollama_placement, placement_advice, unloads_in
from rag.gpu.samples import DeviceInfo, DeviceSample, GpuProcess, GpuStatus, Sample
from rag.llms.ollama.admin import ollama_loaded_models, unload_model
from rag.llms.types import LoadedModel
from tests.gpu.fakes import GIB, MIB, MODEL, host_of

GPU_STATUS = GpuStatus(True, "", "576.02", "12.9", (DeviceInfo(0, "NVIDIA GeForce RTX 4060 Laptop GPU"),))


NO_GPU = GpuStatus(False, "Driver Not Loaded")


def loaded(size: int, size_vram: int, name: str = MODEL, context: int | None = 4096) -> LoadedModel:
    return LoadedModel(name, size, size_vram, context, datetime.now(UTC) + timedelta(minutes=5))


def latest_sample(used: int = 7_000 * MIB, processes: tuple[GpuProcess, ...] = ()) -> Sample:
    device = DeviceSample(
        0, "NVIDIA GeForce RTX 4060 Laptop GPU", used, 8188 * MIB, 90, 40, 60, 80.0, 110.0, 2500, 8001
    )
    return Sample(0.0, (device,), processes)


def test_all_on_the_gpu_needs_no_advice() -> None:
    assert placement_advice([loaded(5 * GIB, 5 * GIB)], GPU_STATUS, latest_sample()) is None
    assert placement_advice([], GPU_STATUS) is None


def test_a_model_on_the_cpu_while_a_gpu_exists_is_an_error_with_the_checks() -> None:
    advice = placement_advice([loaded(5 * GIB, 0)], GPU_STATUS, latest_sample(used=1000 * MIB))
    assert advice is not None and advice.severity == "error"
    assert advice.title == (
        f"{MODEL} (100% CPU) runs on the CPU although this machine has a GPU (NVIDIA GeForce RTX 4060 Laptop GPU)."
    )
    text = "\n".join(advice.causes)
    assert "docker compose exec ollama nvidia-smi" in text
    assert "docker run --rm --gpus all ubuntu nvidia-smi" in text
    assert "WSL2" in text and "loaded CPU backend" in text
    assert "needs 5.0 GiB, context 4096 tokens; free VRAM now 7.0 GiB of 8.0 GiB" in text


def test_a_model_split_between_cpu_and_gpu_points_at_vram() -> None:
    others = (GpuProcess(0, 901, "blender", 3 * GIB, False), GpuProcess(0, 4242, "ollama", 4 * GIB, True))
    advice = placement_advice(
        [loaded(10 * GIB, int(6.3 * GIB), context=32768)], GPU_STATUS, latest_sample(used=8100 * MIB, processes=others)
    )
    assert advice is not None and advice.severity == "error"
    assert advice.title.startswith(f"{MODEL} (37%/63% CPU/GPU) runs partly or wholly on the CPU")
    assert len(advice.causes) == 2
    assert "needs 10.0 GiB, context 32768 tokens; free VRAM now 0.1 GiB of 8.0 GiB" in advice.causes[0]
    assert advice.causes[1] == "Other programs hold VRAM: blender (3.0 GiB)."


def test_on_the_cpu_without_a_gpu_is_calm_information() -> None:
    advice = placement_advice([loaded(5 * GIB, 0)], NO_GPU)
    assert advice is not None and advice.severity == "info"
    assert "as expected, since this app sees no NVIDIA GPU (Driver Not Loaded)" in advice.title


def test_placement_from_ollamas_api_ps(httpserver: HTTPServer) -> None:
    expires = "2025-06-01T12:05:00.000000000+02:00"
    httpserver.expect_request("/api/ps", method="GET").respond_with_json(
        {
            "models": [
                {
                    "name": MODEL,
                    "model": MODEL,
                    "size": 6_654_289_920,
                    "size_vram": 6_654_289_920,
                    "digest": "x",
                    "details": {
                        "format": "gguf",
                        "family": "qwen2",
                        "parameter_size": "7.6B",
                        "quantization_level": "Q4_K_M",
                    },
                    "expires_at": expires,
                    "context_length": 4096,
                },
                {
                    "name": "nomic-embed-text:latest",
                    "model": "nomic-embed-text:latest",
                    "size": 1_000_000_000,
                    "size_vram": 0,
                    "digest": "y",
                    "details": {},
                    "expires_at": expires,
                },
            ]
        }
    )
    models = ollama_loaded_models(host_of(httpserver))
    assert models is not None
    assert [(m.name, m.share_on_gpu, m.context_length) for m in models] == [
        (MODEL, "100% GPU", 4096),
        ("nomic-embed-text", "100% CPU", None),
    ]
    advice = placement_advice(models, GPU_STATUS, latest_sample())
    assert advice is not None and advice.title.startswith("nomic-embed-text (100% CPU) runs on the CPU")


def test_unload_sends_keep_alive_zero(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/generate", method="POST").respond_with_json(
        {"model": MODEL, "created_at": "2025-01-14T10:00:00Z", "response": "", "done": True, "done_reason": "unload"}
    )
    unload_model(host_of(httpserver), MODEL)
    ((request, _),) = httpserver.log
    assert json.loads(request.get_data()) == {"model": MODEL, "stream": False, "keep_alive": 0}


def test_unload_errors_are_one_actionable_line(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/generate", method="POST").respond_with_json(
        {"error": "model 'nope' not found"}, status=404
    )
    with pytest.raises(ModelError, match=r"^Ollama has no model 'nope' to unload \(model 'nope' not found\)$"):
        unload_model(host_of(httpserver), "nope")
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(ModelError, match=r"^Ollama is not reachable at http://127.0.0.1:\d+ .*set OLLAMA_HOST$"):
        unload_model(dead, MODEL)


def test_ollama_placement_asks_api_ps_and_is_none_when_ollama_is_away(httpserver: HTTPServer, dead_host: str) -> None:
    httpserver.expect_request("/api/ps", method="GET").respond_with_json(
        {
            "models": [
                {
                    "name": MODEL,
                    "model": MODEL,
                    "size": 5 * GIB,
                    "size_vram": 0,
                    "digest": "x",
                    "details": {},
                    "expires_at": "2099-06-01T12:05:00.000000000+02:00",
                    "context_length": 4096,
                }
            ]
        }
    )
    found = ollama_placement(host_of(httpserver), GPU_STATUS, latest_sample())
    assert found.models is not None and [m.name for m in found.models] == [MODEL]
    assert found.advice is not None and found.advice.severity == "error"
    assert ollama_placement(dead_host, GPU_STATUS) == Placement(None, None)


def test_unloads_in_reads_ollamas_keep_alive_expiry() -> None:
    now = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    assert unloads_in(now + timedelta(minutes=4, seconds=59.6), now) == "4 min 59 s"
    assert unloads_in(now - timedelta(seconds=1), now) == "now"
    assert unloads_in(now + timedelta(days=400 * 365), now) == "never (keep_alive -1)"
    assert unloads_in(None, now) == "?"
