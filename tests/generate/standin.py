"""An Ollama stand-in for the engine's and the chat page's tests: its documented NDJSON stream chunks,
and a threaded server that streams one word per 50 ms (to stop it half-way)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from rag.generate import Live, Turn
from rag.llms import Message, OllamaChatModel
from rag.llms.stream import Runner
from rag.settings import get_settings
from tests.ollama_wire import CREATED, MODEL, NDJSON, chunk
from tests.ollama_wire import ndjson as ndjson  # for the tests that import the stand-in

QUESTION = "How much did revenue rise?"
TAGS = {
    "models": [
        {
            "name": f"{MODEL}",
            "model": f"{MODEL}",
            "size": 4683087332,
            "digest": "845dbda0",
            "details": {"format": "gguf", "family": "qwen2"},
        }
    ]
}
SHOW = {
    "modelfile": "FROM qwen2.5",
    "parameters": 'stop "<|im_end|>"',
    "template": "{{ .System }}",
    "details": {"format": "gguf", "family": "qwen2"},
    "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
    "capabilities": ["completion"],
}
FINAL = {
    "model": MODEL,
    "created_at": CREATED,
    "message": {"role": "assistant", "content": ""},
    "done": True,
    "done_reason": "stop",
    "total_duration": 900_000_000,
    "load_duration": 1_000_000,
    "prompt_eval_count": 180,
    "prompt_eval_duration": 200_000_000,
    "eval_count": 24,
    "eval_duration": 600_000_000,
}


def bodies(server: HTTPServer, path: str) -> list[dict[str, Any]]:
    return [json.loads(request.get_data()) for request, _ in server.log if request.path == path]


@pytest.fixture
def slow_ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[HTTPServer, threading.Event]]:
    """A threaded stand-in streaming one word per 50 ms for 10 s; the event is set when the
    client hangs up."""
    server = HTTPServer(threaded=True)
    server.start()
    hangup = threading.Event()

    def slow_chat(request: Request) -> Response:
        def lines() -> Iterator[bytes]:
            try:
                for i in range(200):
                    yield (json.dumps(chunk(f"word{i} ")) + "\n").encode()
                    time.sleep(0.05)
                yield (json.dumps(FINAL) + "\n").encode()
            finally:
                hangup.set()

        return Response(lines(), content_type=NDJSON)

    server.expect_request("/api/chat", method="POST").respond_with_handler(slow_chat)
    server.expect_request("/api/tags", method="GET").respond_with_json(TAGS)
    server.expect_request("/api/ps", method="GET").respond_with_json({"models": []})
    server.expect_request("/api/show", method="POST").respond_with_json(SHOW)
    monkeypatch.setenv("OLLAMA_HOST", server.url_for("/").rstrip("/"))
    get_settings.cache_clear()
    try:
        yield server, hangup
    finally:
        server.clear()
        server.stop()
        get_settings.cache_clear()


def live_answer(host: str) -> Live:
    """A live turn streaming from the stand-in at `host`, as the page keeps it in session state."""
    turn = Turn(id=uuid.uuid4().hex[:8], question=QUESTION, query=QUESTION, kbs=("fin",), model=f"ollama:{MODEL}")
    model = OllamaChatModel(host, MODEL, timeout=5)
    return Live(turn, Runner(lambda stop: model.stream([Message("user", QUESTION)], stop_event=stop)))
