"""OllamaChatModel: a streamed POST /api/chat through the one client, stoppable at once.

The stream is read on a `Runner` thread, so that a stop is seen within 50 ms even while Ollama is
still loading the model; stopping closes the HTTP stream (its socket shut down), which is what
makes Ollama stop generating.
"""

from __future__ import annotations

import enum
import logging
import socket
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from typing import Any, Final, cast

import httpx
import ollama

from rag.errors import GenerationError, ModelError
from rag.llms.ollama.admin import model_capabilities, ollama_loaded_models, show_model
from rag.llms.ollama.client import METADATA_TIMEOUT, client, response_message
from rag.llms.ollama.errors import display_host, invalid_answer_message, one_line, unreachable_message
from rag.llms.ollama.names import same_model, strip_latest
from rag.llms.ollama.think import ThinkSplitter
from rag.llms.stream import Runner
from rag.llms.types import GenerationStats, Message, StreamEvent, check_messages
from rag.model_ref import ModelRef
from rag.text import Text

log = logging.getLogger(__name__)

DEFAULT_OLLAMA_NUM_CTX = 4096
"""Assumed when neither the request nor the Modelfile sets num_ctx. Ollama's own default has varied
between versions; once the model is loaded, /api/ps tells the real window."""


class _End(enum.Enum):
    """The end of the streamed chunks: an enum member, so that `chunk is _END` narrows `chunk`."""

    END = enum.auto()


_END: Final = _End.END


class OllamaChatModel:
    """Streamed POST /api/chat through the official client."""

    def __init__(self, host: str, model: str, *, timeout: float = 120.0, num_ctx: int | None = None) -> None:
        model = strip_latest(model)
        if not model:
            raise ModelError(Text("No Ollama chat model given: use RAG_CHAT_MODEL=ollama:<model>"))
        self._host = host
        self._model = model
        self._timeout = timeout
        self._num_ctx = num_ctx
        """num_ctx sent when a call gives none; then the last one a call gave."""
        self._capabilities: list[str] | None = None

    def __repr__(self) -> str:
        return f"OllamaChatModel(host={self._host!r}, model={self._model!r})"

    @property
    def name(self) -> str:
        return str(ModelRef("ollama", self._model))

    @property
    def model(self) -> str:
        return self._model

    @property
    def host(self) -> str:
        return self._host

    # -- metadata ------------------------------------------------------------------------------

    def show(self, timeout: float = METADATA_TIMEOUT) -> ollama.ShowResponse:
        """POST /api/show for this model; ModelError when Ollama cannot say."""
        return show_model(self._host, self._model, timeout)

    def _capability(self, name: str) -> bool:
        if self._capabilities is None:
            try:
                shown = self.show()
            except ModelError as exc:
                log.info("Cannot tell whether %s supports %s: %s", self.name, name, exc)
                return False  # not cached: Ollama may come up later
            self._capabilities = model_capabilities(shown)
        return name in self._capabilities

    @property
    def supports_tools(self) -> bool:
        return self._capability("tools")

    @property
    def supports_thinking(self) -> bool:
        return self._capability("thinking")

    def context_length(self) -> int:
        loaded = ollama_loaded_models(self._host)
        for m in loaded or []:
            if same_model(m.name, self._model) and m.context_length:
                return m.context_length
        shown = self.show()
        info = dict(shown.modelinfo or {})
        arch = info.get("general.architecture")
        trained = info.get(f"{arch}.context_length") if arch else None
        in_use = self._num_ctx or _modelfile_num_ctx(shown.parameters) or DEFAULT_OLLAMA_NUM_CTX
        if isinstance(trained, int) and trained > 0:
            return min(trained, in_use)
        return in_use

    # -- generation ----------------------------------------------------------------------------

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        num_ctx: int | None = None,
        think: bool | None = None,
        stop_event: threading.Event | None = None,
    ) -> Iterator[StreamEvent]:
        items = check_messages(messages)
        options: dict[str, Any] = {"temperature": temperature}
        if num_ctx is not None:
            self._num_ctx = num_ctx
        if self._num_ctx is not None:
            options["num_ctx"] = self._num_ctx
        payload = [{"role": m.role, "content": m.content} for m in items]
        return self._generate(payload, options, think, stop_event)

    def _generate(
        self,
        payload: list[dict[str, str]],
        options: dict[str, Any],
        think: bool | None,
        stop_event: threading.Event | None,
    ) -> Iterator[StreamEvent]:
        responses: list[httpx.Response] = []
        http = client(self._host, self._timeout, event_hooks={"response": [responses.append]})

        def chat(stop: threading.Event) -> Iterator[ollama.ChatResponse]:
            # ollama annotates the stream as an Iterator, but it is a generator (Client._request's `inner`),
            # and close() is what ends its HTTP response early.
            stream = cast(
                "Generator[ollama.ChatResponse, None, None]",
                http.chat(model=self._model, messages=payload, stream=True, think=think, options=options),
            )
            try:
                for part in stream:
                    if stop.is_set():
                        return
                    yield part
            finally:
                stream.close()

        started = time.perf_counter()
        first: float | None = None
        last = started
        chunks = 0
        content: list[str] = []
        thinking: list[str] = []
        splitter = ThinkSplitter()

        def events(pieces: list[tuple[str, str]]) -> Iterator[StreamEvent]:
            for kind, text in pieces:
                (thinking if kind == "thinking" else content).append(text)
                yield StreamEvent(kind, text)

        runner: Runner[ollama.ChatResponse] = Runner(chat, name=f"ollama-chat-{self._model}", log_unexpected=False)
        parts = runner.follow(stop_event)
        finished = aborted = False
        try:
            while True:
                try:
                    chunk = next(parts, _END)
                except ollama.ResponseError as exc:
                    if exc.status_code == -1:  # an {"error": ...} line in the stream
                        raise GenerationError(
                            Text(
                                "Ollama failed mid-answer with '{model}' ({error}): try again, or see Ollama's "
                                "server log",
                                model=self._model,
                                error=one_line(str(exc.error)),
                            ),
                            "".join(content),
                            "".join(thinking),
                        ) from exc
                    raise GenerationError(
                        response_message(exc, self._model, self._host, "/api/chat"),
                        "".join(content),
                        "".join(thinking),
                    ) from exc
                except (ConnectionError, httpx.TransportError) as exc:
                    raise self._transport_error(exc, content, thinking, chunks) from exc
                except ValueError as exc:
                    raise GenerationError(
                        invalid_answer_message(self._host, "/api/chat", exc),
                        "".join(content),
                        "".join(thinking),
                    ) from exc
                if chunk is _END and stop_event is not None and stop_event.is_set():
                    self._abort(runner, http, responses)
                    aborted = True
                    yield from events(splitter.flush())
                    yield StreamEvent(
                        "done",
                        stats=GenerationStats(
                            done_reason="stopped",
                            total_duration=time.perf_counter() - started,
                            eval_count=chunks,
                            eval_duration=(last - first) if first is not None and chunks > 1 else None,
                        ),
                    )
                    return
                if chunk is _END:
                    yield from events(splitter.flush())
                    raise GenerationError(
                        Text(
                            "Ollama at {host} ended the answer without finishing it: check that it is still "
                            "running ('ollama serve') and try again",
                            host=display_host(self._host),
                        ),
                        "".join(content),
                        "".join(thinking),
                    )
                message = chunk.message
                if message is not None and (message.thinking or message.content):
                    chunks += 1
                    last = time.perf_counter()
                    if first is None:
                        first = last
                if message is not None and message.thinking:
                    thinking.append(message.thinking)
                    yield StreamEvent("thinking", message.thinking)
                if message is not None and message.content:
                    yield from events(splitter.feed(message.content))
                if chunk.done:
                    yield from events(splitter.flush())
                    finished = True
                    yield StreamEvent("done", stats=GenerationStats.from_ollama(chunk))
                    return
        finally:
            if finished:
                runner.join(1.0)  # Ollama closes the stream right after the final chunk
                http.close()
            elif not aborted:  # an error, or the caller dropped the iterator
                self._abort(runner, http, responses)

    @staticmethod
    def _abort(runner: Runner[Any], http: ollama.Client, responses: list[httpx.Response]) -> None:
        """Close the HTTP stream now: Ollama stops generating when its client goes away."""
        runner.stop()
        for response in responses:
            # close() alone does not wake a thread blocked reading the socket on Linux; shutdown does.
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        try:
            http.close()
        except Exception:
            log.debug("closing the Ollama client after a stop failed", exc_info=True)

    def _transport_error(
        self, exc: BaseException, content: list[str], thinking: list[str], chunks: int
    ) -> GenerationError:
        if chunks == 0 and not isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError)):
            return GenerationError(
                unreachable_message(self._host, exc, self._timeout), "".join(content), "".join(thinking)
            )
        if isinstance(exc, httpx.TimeoutException):
            return GenerationError(
                Text(
                    "Ollama sent nothing for {seconds} s in the middle of the answer with '{model}': try again, "
                    "or raise RAG_OLLAMA_TIMEOUT if the machine is busy",
                    seconds=f"{self._timeout:g}",
                    model=self._model,
                ),
                "".join(content),
                "".join(thinking),
            )
        detail = one_line(str(exc), 160) or type(exc).__name__
        return GenerationError(
            Text(
                "The connection to Ollama at {host} broke mid-answer ({detail}): check that it is still "
                "running ('ollama serve') and try again",
                host=display_host(self._host),
                detail=detail,
            ),
            "".join(content),
            "".join(thinking),
        )


def _modelfile_num_ctx(parameters: str | None) -> int | None:
    """num_ctx from /api/show's `parameters` text ('num_ctx                        8192\\n...')."""
    for line in (parameters or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx":
            try:
                return int(value.strip().strip('"'))
            except ValueError:
                return None
    return None
