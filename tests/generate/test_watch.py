"""rag/generate/watch.py: a generation watched on the background runner: its text, timings and marks,
against a scripted model and a pytest-httpserver Ollama.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from rag.errors import ModelError
from rag.generate.watch import WatchChoices, WatchedGeneration, watch_choices
from rag.llms import OllamaChatModel
from rag.llms.telemetry import Timeline
from rag.llms.types import Message, StreamEvent
from tests.gpu.fakes import MODEL, NDJSON, STATS, Clock, chat_stream, host_of


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

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        num_ctx: int | None = None,
        think: bool | None = None,
        stop_event: Any = None,
    ) -> Iterator[StreamEvent]:
        self.messages = list(messages)
        yield from self.events
        if self.error is not None:
            raise self.error


def test_watched_generation_collects_text_timings_and_marks() -> None:
    events = [
        StreamEvent("thinking", "Hmm."),
        StreamEvent("content", "Zub"),
        StreamEvent("content", "rowka."),
        StreamEvent("done", stats=STATS),
    ]
    timeline = Timeline()
    clock = Clock(start=1000.0, step=0.25)
    model = ScriptedModel(events)
    watched = WatchedGeneration(model, "Capital of Freedonia?", timeline=timeline, clock=clock).start()
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
    timeline = Timeline()
    watched = WatchedGeneration(model, "q", timeline=timeline).start()
    assert watched.wait(10)
    view = watched.view()
    assert (view.text, view.error) == ("Zub", "Ollama failed mid-answer")
    assert [m.phase for m in view.marks] == ["prompt", "output"]

    nothing = WatchedGeneration(ScriptedModel([], error=ModelError("not reachable")), "q", timeline=timeline)
    assert nothing.start().wait(10)
    assert nothing.view().error == "not reachable" and nothing.view().marks == ()
    with pytest.raises(ValueError, match="the prompt is empty"):
        WatchedGeneration(model, "  ")


def test_watched_generation_against_ollamas_stream(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/chat", method="POST").respond_with_data(
        chat_stream("The capital", " is Zubrowka."), content_type=NDJSON
    )
    timeline = Timeline()
    watched = WatchedGeneration(
        OllamaChatModel(host_of(httpserver), MODEL, timeout=5), "Capital?", timeline=timeline
    ).start()
    assert watched.wait(10)
    view = watched.view()
    assert view.error is None and view.text == "The capital is Zubrowka."
    assert view.stats is not None and view.stats.eval_count == 282
    assert [m.phase for m in timeline.marks()] == ["load", "prompt", "output"]
    ((request, _),) = httpserver.log
    body = json.loads(request.get_data())
    assert body["model"] == MODEL and body["messages"] == [{"role": "user", "content": "Capital?"}]
    assert body["stream"] is True


def test_the_watch_offers_ollamas_chat_models_then_the_embedded_one(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags", method="GET").respond_with_json(
        {
            "models": [
                {
                    "name": n,
                    "model": n,
                    "modified_at": "2025-01-14T10:00:00Z",
                    "size": 1,
                    "digest": "d" * 12,
                    "details": {"family": family},
                }
                for n, family in ((MODEL, "qwen2"), ("nomic-embed-text:latest", "nomic-bert"))
            ]
        }
    )
    host = host_of(httpserver)
    assert watch_choices(host, (True, "")) == WatchChoices((f"ollama:{MODEL}", "local"), "")
    assert watch_choices(host, (False, "pip install it")) == WatchChoices((f"ollama:{MODEL}",), "")


def test_the_watch_says_why_ollama_offers_nothing(httpserver: HTTPServer, dead_host: str) -> None:
    httpserver.expect_request("/api/tags", method="GET").respond_with_json({"models": []})
    host = host_of(httpserver)
    assert watch_choices(host, (False, "pip install llama-cpp-python")) == WatchChoices(
        (), "Ollama has no chat model: run 'ollama pull qwen2.5:7b-instruct'. (pip install llama-cpp-python)"
    )
    assert watch_choices(dead_host, (True, "")) == WatchChoices(
        ("local",),
        f"Ollama is not reachable at {dead_host}. The embedded model generates on the CPU instead: "
        "watch the CPU chart.",
    )
