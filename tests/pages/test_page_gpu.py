"""The GPU page with and without a GPU: the scripted NVML stand-in is registered as the page's NVML
source, and Ollama is a pytest-httpserver stand-in answering /api/ps, /api/tags, /api/chat (NDJSON)
and /api/generate (unload).

The page is run on its own (`AppTest.from_file("pages/gpu.py")`), and once through the router in app.py
(test_the_router_opens_the_gpu_page, which fails when the page is no longer routed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest
from pytest_httpserver import HTTPServer
from streamlit.testing.v1 import AppTest

from rag.gpu.nvml import register_nvml, select_nvml, selected_nvml
from rag.llms.telemetry import TIMELINE
from rag.settings import get_settings
from rag.status import gpu_presence
from tests.conftest import ROOT
from tests.gpu.fakes import MIB, FakeGpu, ScriptedNvml, chat_stream

PAGE = str(ROOT / "pages" / "gpu.py")
MODEL = "qwen2.5:7b-instruct"
CARD = "NVIDIA GeForce RTX 4060 Laptop GPU"
EXPIRES = "2099-06-01T12:05:00.000000000+02:00"


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def use_nvml() -> Iterator[Callable[[ScriptedNvml], None]]:
    """Registers a stand-in under a fresh name and makes it the page's NVML source."""

    def use(nvml: ScriptedNvml) -> None:
        name = f"scripted-{uuid.uuid4().hex[:8]}"
        register_nvml(name, lambda: nvml)
        select_nvml(name)

    TIMELINE.clear()
    yield use
    select_nvml("pynvml")
    TIMELINE.clear()


@pytest.fixture
def ollama(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[HTTPServer]:
    """OLLAMA_HOST pointing at the stand-in for the pages (Settings are read once per process)."""
    monkeypatch.setenv("OLLAMA_HOST", httpserver.url_for("/").rstrip("/"))
    get_settings.cache_clear()
    yield httpserver
    get_settings.cache_clear()


@pytest.fixture
def ollama_process(tmp_path: Path) -> Iterator[int]:
    """A real process named 'ollama' (a copy of sleep), for NVML to list as holding VRAM."""
    binary = tmp_path / "ollama"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", binary)
    proc = subprocess.Popen([str(binary), "60"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def serve_ps(server: HTTPServer, *models: tuple[str, int, int]) -> None:
    server.expect_request("/api/ps", method="GET").respond_with_json(
        {
            "models": [
                {
                    "name": name,
                    "model": name,
                    "size": size,
                    "size_vram": vram,
                    "digest": "d" * 12,
                    "details": {"format": "gguf", "family": "qwen2"},
                    "expires_at": EXPIRES,
                    "context_length": 4096,
                }
                for name, size, vram in models
            ]
        }
    )


def serve_tags(server: HTTPServer, *names: str) -> None:
    server.expect_request("/api/tags", method="GET").respond_with_json(
        {
            "models": [
                {
                    "name": n,
                    "model": n,
                    "modified_at": "2025-01-14T10:00:00Z",
                    "size": 4_683_087_332,
                    "digest": "d" * 12,
                    "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B"},
                }
                for n in names
            ]
        }
    )


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def open_page(nvml: ScriptedNvml | None = None, ticks: int = 2) -> AppTest:
    """Run the page once (the sampler starts), let it take `ticks` samples, and run it again."""
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    if nvml is not None:
        wait_for(lambda: nvml.count("nvmlDeviceGetMemoryInfo") >= ticks or nvml.init_error is not None)
    at.run()
    assert not at.exception, at.exception
    return at


def chart(at: AppTest) -> dict[str, Any]:
    (element,) = at.get("plotly_chart")
    return json.loads(element.proto.spec)


def traces(at: AppTest) -> list[str]:
    return [t["name"] for t in chart(at)["data"]]


def phase_legend(spec: dict[str, Any]) -> list[str]:
    return [t["name"] for t in spec["data"] if t.get("legendgroup") == "phases"]


def generation_labels(spec: dict[str, Any]) -> list[str]:
    return [a["text"] for a in spec["layout"].get("annotations", ()) if a.get("hovertext")]


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def texts(elements: Any) -> list[str]:
    return [e.value for e in elements]


def table(at: AppTest, column: str) -> Any:
    """The (only) table on the page that has `column`, as a DataFrame."""
    frames = [getattr(d.value, "data", d.value) for d in at.dataframe]  # a Styler holds its frame in .data
    (found,) = [f for f in frames if column in f.columns]
    return found


# --- without a GPU ------------------------------------------------------------------------------


def test_the_model_box_speaks_chinese(use_nvml: Callable[[ScriptedNvml], None]) -> None:
    """A walk found "· embedded, on the CPU" in English in the Chinese UI."""
    from ui import i18n

    nvml = ScriptedNvml([FakeGpu()], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    use_nvml(nvml)
    at = open_page(nvml)
    at.session_state[i18n.CHOICE_KEY] = "zh"  # what the sidebar's 中文 button's callback leaves
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="gpu_model").options == ["qwen2.5-coder-1.5b · 内置，在 CPU 上运行"]
    # A walk: the figures' labels, the window's lengths and the chart's dates were English in the Chinese UI.
    assert set(metrics(at)) == {"CPU", "内存 (GiB)"}
    (window,) = [c for c in at.container(key="gpu_controls").children.values() if c.type == "button_group"]
    assert [o.content for o in window.proto.options] == ["1 分钟", "2 分钟", "5 分钟", "10 分钟"]
    assert at.session_state["gpu_window"] == "2 min"  # the value stays the key the page reads
    axis = chart(at)["layout"]["xaxis"]
    assert axis["tickformat"] == "%H:%M:%S" and axis["hoverformat"] == "%H:%M:%S"  # no month name in English


def test_without_a_gpu_the_page_is_calm_and_shows_cpu_and_ram(use_nvml: Callable[[ScriptedNvml], None]) -> None:
    nvml = ScriptedNvml([FakeGpu()], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    use_nvml(nvml)
    at = open_page(nvml)
    assert not at.error and not at.warning
    info = texts(at.info)
    assert info[0].startswith(
        "No NVIDIA GPU is visible to this app. NVML says: “Driver Not Loaded” "
        "(the NVIDIA driver is installed but not loaded: run 'nvidia-smi'"
    )
    host = get_settings().ollama_host
    assert f"Ollama is not reachable at {host}: start it ('ollama serve') or set OLLAMA_HOST." in info
    assert (
        f"Ollama is not reachable at {host}. The embedded model generates on the CPU instead: watch the CPU chart."
    ) in texts(at.caption)
    assert at.selectbox(key="gpu_model").options == ["qwen2.5-coder-1.5b · embedded, on the CPU"]
    assert set(metrics(at)) == {"CPU", "RAM (GiB)"}
    assert traces(at) == ["CPU", "RAM used", "RAM total"]
    assert [b.key for b in at.button] == ["gpu_generate", "gpu_stop"]  # nothing to unload
    assert at.get("download_button")


def test_without_ollama_the_embedded_model_generates_on_the_cpu_chart(use_nvml: Callable[[ScriptedNvml], None]) -> None:
    """The real embedded model (llama.cpp): started, stopped after a few words, its phases drawn
    on the CPU and RAM charts."""
    nvml = ScriptedNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    use_nvml(nvml)
    at = open_page()
    at.text_area(key="gpu_prompt").set_value("Write a long story about a lighthouse keeper.")
    at.button(key="gpu_generate").click().run()
    assert not at.exception and not at.error
    generation = at.session_state["gpu_generation"]
    wait_for(lambda: len(generation.view().text.split()) >= 3 or not generation.running, 120)
    at.button(key="gpu_stop").click().run()
    assert generation.wait(30)
    at.run()
    assert not at.exception and not at.error
    view = generation.view()
    assert view.error is None and view.model == "local:qwen2.5-coder-1.5b"
    assert view.text.strip() and view.text in texts(at.markdown)
    assert view.stats is not None and view.stats.eval_count
    assert view.stats.done_reason in ("stopped", "stop", "length")
    assert [m.phase for m in view.marks][-1] == "output"
    spec = chart(at)
    assert generation_labels(spec) == ["gpu page: local:qwen2.5-coder-1.5b"]
    rects = [s for s in spec["layout"]["shapes"] if s["type"] == "rect"]
    assert len(rects) == len(view.marks) * 2  # each phase on the CPU and the RAM chart
    assert not any(t.startswith("Stopped: Ollama") for t in texts(at.caption))


def test_without_a_gpu_a_model_on_the_cpu_is_information_not_alarm(
    use_nvml: Callable[[ScriptedNvml], None], ollama: HTTPServer
) -> None:
    use_nvml(ScriptedNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    serve_ps(ollama, (MODEL, 5_000_000_000, 0))
    serve_tags(ollama, MODEL)
    at = open_page()
    assert not at.error
    assert any(
        "on the CPU, as expected, since this app sees no NVIDIA GPU (NVML Shared Library Not Found)" in t
        for t in texts(at.info)
    )
    assert list(table(at, "Placement")["Placement"]) == ["100% CPU"]


def test_this_machine_with_the_real_nvml() -> None:
    """The default source: on this machine (no GPU) the page repeats NVML's reason."""
    assert selected_nvml() == "pynvml"
    at = open_page()
    presence = gpu_presence()
    if presence.found:
        assert any(name in m.value for m in at.markdown for name in presence.names)
    else:
        reason = presence.reason.removeprefix("NVML: ")
        assert any(f"NVML says: “{reason}”" in t for t in texts(at.info))
        assert "CPU" in traces(at)


# --- with a GPU ---------------------------------------------------------------------------------


def test_with_a_gpu_devices_processes_and_100_percent_gpu(
    use_nvml: Callable[[ScriptedNvml], None], ollama: HTTPServer, ollama_process: int
) -> None:
    nvml = ScriptedNvml([FakeGpu(compute=[(ollama_process, 4_700 * MIB), (os.getpid(), 200 * MIB)])])
    use_nvml(nvml)
    serve_ps(ollama, (MODEL, 4_928_307_200, 4_928_307_200))
    serve_tags(ollama, MODEL)
    at = open_page(nvml)
    assert not at.error
    assert f"**{CARD}** · driver 576.02 · CUDA 12.9" in texts(at.markdown)
    assert "The model runs 100% on the GPU." in texts(at.success)
    placement = table(at, "Placement")
    assert list(placement["Placement"]) == ["100% GPU"]
    assert list(placement["Context"]) == [4096]
    shown = metrics(at)
    assert shown["VRAM"] == "2.2 / 8.0 GiB"
    assert (shown["GPU util"], shown["Memory util"], shown["Temperature"]) == ("6 %", "3 %", "58 °C")
    assert shown["Power"] == "24 / 110 W" and shown["Clocks (MHz)"] == "2100 / 8001"
    assert set(shown) >= {"CPU", "RAM (GiB)"}
    procs = table(at, "Process")
    assert next(iter(procs["Process"])) == "ollama" and list(procs["Ollama"]) == [True, False]
    assert list(procs["VRAM (MiB)"]) == [4700, 200]
    names = traces(at)
    assert not phase_legend(chart(at))  # nothing generated yet
    for name in (
        "VRAM used",
        "VRAM total",
        "VRAM held by Ollama",
        "GPU util",
        "memory util",
        "power draw",
        "power limit",
        "CPU",
    ):
        assert name in names
    assert [b.key for b in at.button] == [f"gpu_unload_{MODEL}", "gpu_generate", "gpu_stop"]
    assert at.button(key="gpu_stop").disabled


def test_a_model_on_the_cpu_while_a_gpu_exists_raises_the_red_banner(
    use_nvml: Callable[[ScriptedNvml], None], ollama: HTTPServer
) -> None:
    nvml = ScriptedNvml([FakeGpu()])
    use_nvml(nvml)
    serve_ps(ollama, (MODEL, 4_928_307_200, 0))
    serve_tags(ollama, MODEL)
    at = open_page(nvml)
    (banner,) = texts(at.error)
    assert banner.startswith(f"**{MODEL} (100% CPU) runs on the CPU although this machine has a GPU ({CARD}).**")
    assert "docker compose exec ollama nvidia-smi" in banner
    assert "docker run --rm --gpus all ubuntu nvidia-smi" in banner
    assert "free VRAM now 5.8 GiB of 8.0 GiB" in banner
    assert list(table(at, "Placement")["Placement"]) == ["100% CPU"]


def test_a_lost_gpu_is_an_error_on_the_page(use_nvml: Callable[[ScriptedNvml], None]) -> None:
    card = FakeGpu()
    nvml = ScriptedNvml([card])
    use_nvml(nvml)
    at = open_page(nvml)
    asked = nvml.count("nvmlDeviceGetMemoryInfo")
    card.lost = True
    wait_for(lambda: nvml.count("nvmlDeviceGetMemoryInfo") > asked)  # the sampler met the lost GPU

    def shown() -> bool:
        at.run()
        assert not at.exception
        return any("GPU is lost" in t for t in texts(at.error))

    wait_for(shown)
    assert f"GPU 0 ({CARD}): GPU is lost. NVML can no longer read it: reset the GPU or reboot." in texts(at.error)
    assert f"**{CARD}** · driver 576.02 · CUDA 12.9" in texts(at.markdown)  # still named: it was found


def test_generate_while_watching_draws_the_phases_and_the_speed(
    use_nvml: Callable[[ScriptedNvml], None], ollama: HTTPServer
) -> None:
    nvml = ScriptedNvml([FakeGpu()])
    use_nvml(nvml)
    serve_ps(ollama, (MODEL, 4_928_307_200, 4_928_307_200))
    serve_tags(ollama, MODEL)
    ollama.expect_request("/api/chat", method="POST").respond_with_data(
        chat_stream("The capital", " is Zubrowka."), content_type="application/x-ndjson"
    )
    at = open_page(nvml)
    at.text_area(key="gpu_prompt").set_value("What is the capital of Freedonia?")
    at.button(key="gpu_generate").click().run()
    assert not at.exception
    generation = at.session_state["gpu_generation"]
    assert generation.wait(10)
    at.run()
    assert not at.exception and not at.error
    assert "The capital is Zubrowka." in texts(at.markdown)
    shown = metrics(at)
    assert shown["Tokens/s"] == f"{282 / 4.535599:.1f}"
    assert shown["Load time"] == "0.00 s"
    assert shown["Prompt eval (26 tokens)"] == f"{26 / 0.342546:.0f} tok/s"
    assert shown["Output tokens"] == "282"
    assert shown["Time to first token"].endswith(" s")
    spec = chart(at)
    assert phase_legend(spec) == ["model load", "prompt evaluation", "output"]
    assert generation_labels(spec) == [f"gpu page: {MODEL}"]
    rects = [s for s in spec["layout"]["shapes"] if s["type"] == "rect"]
    assert len(rects) == 3 * 4  # three phases, on each of the four charts
    chats = [json.loads(r.get_data()) for r, _ in ollama.log if r.path == "/api/chat"]
    assert [(c["model"], c["messages"]) for c in chats] == [
        (MODEL, [{"role": "user", "content": "What is the capital of Freedonia?"}])
    ]


def test_generations_marked_elsewhere_appear_on_the_timeline(use_nvml: Callable[[ScriptedNvml], None]) -> None:
    nvml = ScriptedNvml([FakeGpu()])
    use_nvml(nvml)
    now = time.time()
    TIMELINE.mark_generation(
        "chat: deepseek-r1:1.5b", now - 20, now - 10, None, first_token_at=now - 18, first_content_at=now - 14
    )
    at = open_page(nvml)
    spec = chart(at)
    assert phase_legend(spec) == ["prompt evaluation", "thinking", "output"]
    assert generation_labels(spec) == ["chat: deepseek-r1:1.5b"]


def test_generations_that_start_close_together_share_one_label(use_nvml: Callable[[ScriptedNvml], None]) -> None:
    nvml = ScriptedNvml([FakeGpu()])
    use_nvml(nvml)
    now = time.time()
    TIMELINE.mark_generation("chat: a", now - 100, now - 90, None, first_token_at=now - 95)
    TIMELINE.mark_generation("gpu page: b", now - 92, now - 80, None, first_token_at=now - 85)
    TIMELINE.mark_generation("chat: c", now - 30, now - 20, None, first_token_at=now - 25)
    at = open_page(nvml)  # a 2-minute window: 12 s apart is close, 62 s is not
    spec = chart(at)
    assert generation_labels(spec) == ["chat: a · gpu page: b", "chat: c"]
    anchors = [a["xanchor"] for a in spec["layout"]["annotations"] if a.get("hovertext")]
    assert anchors == ["left", "right"]  # the late one is written leftwards, inside the chart


def test_unload_asks_ollama_with_keep_alive_zero(use_nvml: Callable[[ScriptedNvml], None], ollama: HTTPServer) -> None:
    nvml = ScriptedNvml([FakeGpu()])
    use_nvml(nvml)
    serve_ps(ollama, (MODEL, 4_928_307_200, 4_928_307_200))
    serve_tags(ollama, MODEL)
    ollama.expect_request("/api/generate", method="POST").respond_with_json(
        {"model": MODEL, "created_at": "2025-01-14T10:00:00Z", "response": "", "done": True, "done_reason": "unload"}
    )
    at = open_page(nvml)
    at.button(key=f"gpu_unload_{MODEL}").click().run()
    assert not at.exception
    assert f"Asked Ollama to unload {MODEL}: watch VRAM drop." in texts(at.success)
    (body,) = [json.loads(r.get_data()) for r, _ in ollama.log if r.path == "/api/generate"]
    assert body == {"model": MODEL, "stream": False, "keep_alive": 0}


@pytest.fixture
def slow_ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[HTTPServer]:
    """A threaded stand-in, so that /api/ps and /api/tags answer while a chat streams slowly."""
    server = HTTPServer(threaded=True)
    server.start()
    monkeypatch.setenv("OLLAMA_HOST", server.url_for("/").rstrip("/"))
    get_settings.cache_clear()
    try:
        yield server
    finally:
        get_settings.cache_clear()
        server.clear()
        server.stop()


def test_stop_ends_the_generation_with_what_it_has(
    use_nvml: Callable[[ScriptedNvml], None], slow_ollama: HTTPServer
) -> None:
    from werkzeug import Request, Response

    def slow_chat(request: Request) -> Response:
        def words() -> Iterator[str]:
            for i in range(100):
                yield (
                    json.dumps(
                        {
                            "model": MODEL,
                            "created_at": "2025-01-14T10:00:00Z",
                            "message": {"role": "assistant", "content": f"word{i} "},
                            "done": False,
                        }
                    )
                    + "\n"
                )
                time.sleep(0.1)

        return Response(words(), content_type="application/x-ndjson")

    nvml = ScriptedNvml([FakeGpu()])
    use_nvml(nvml)
    serve_ps(slow_ollama, (MODEL, 4_928_307_200, 4_928_307_200))
    serve_tags(slow_ollama, MODEL)
    slow_ollama.expect_request("/api/chat", method="POST").respond_with_handler(slow_chat)
    at = open_page(nvml)
    at.button(key="gpu_generate").click().run()
    generation = at.session_state["gpu_generation"]
    wait_for(lambda: "word2" in generation.view().text)
    assert not at.button(key="gpu_stop").disabled and at.button(key="gpu_generate").disabled
    at.button(key="gpu_stop").click().run()
    assert generation.wait(10)
    at.run()
    assert not at.exception and not at.error
    view = generation.view()
    assert view.stats is not None and view.stats.done_reason == "stopped"
    assert view.text.startswith("word0 word1 word2") and "word99" not in view.text
    assert [m.phase for m in view.marks] == ["prompt", "output"]
    assert any(t.startswith("Stopped: Ollama sends no timings") for t in texts(at.caption))
    assert not at.button(key="gpu_generate").disabled and at.button(key="gpu_stop").disabled


def test_the_router_opens_the_gpu_page(use_nvml: Callable[[ScriptedNvml], None]) -> None:
    nvml = ScriptedNvml([FakeGpu()], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    use_nvml(nvml)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception
    at.switch_page("pages/gpu.py").run()
    assert not at.exception
    assert [t.value for t in at.title] == ["GPU monitor"]
    assert any("NVML says: “Driver Not Loaded”" in t for t in texts(at.info))


def test_the_app_samples_from_its_start_not_from_the_gpu_page(use_nvml: Callable[[ScriptedNvml], None]) -> None:
    """Chat generations made before the GPU page is opened have their samples under them."""
    nvml = ScriptedNvml([FakeGpu()])
    use_nvml(nvml)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()  # the Upload page
    assert not at.exception
    wait_for(lambda: nvml.count("nvmlDeviceGetMemoryInfo") >= 2)


def test_the_window_buttons_sit_in_a_row_sized_by_their_content() -> None:
    # In a fixed 2/7 column the four buttons did not fit at 1400 px and "10 min" was cut off; a
    # horizontal row that wraps gives each control the width it needs.
    at = open_page()
    row = at.container(key="gpu_controls")
    flex = row.proto.flex_container
    assert flex.direction == flex.Direction.HORIZONTAL and flex.wrap
    kinds = [child.type for child in row.children.values()]
    assert kinds == ["button_group", "toggle", "download_button"]
    (window,) = [child for child in row.children.values() if child.type == "button_group"]
    assert list(window.proto.options[i].content for i in range(len(window.proto.options))) == [
        "1 min",
        "2 min",
        "5 min",
        "10 min",
    ]
