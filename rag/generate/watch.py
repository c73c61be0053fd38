"""A generation the GPU page watches: one prompt streamed on the background `Runner`, so that the
page keeps redrawing its charts while the model answers, and its phases marked on the timeline
when it ends (finished, stopped or failed).

The watch reads its own clock (injectable, epoch seconds by default) once per event, because the
marks must sit on the wall clock of the GPU samples; `fold` turns the events so far into the view.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rag.llms.ollama.admin import list_ollama_chat_models
from rag.llms.ollama.names import SUGGESTED_OLLAMA_MODEL
from rag.llms.stream import Runner, fold
from rag.llms.telemetry import TIMELINE, Mark, Timeline
from rag.llms.types import ChatModel, GenerationStats, Message, StreamEvent
from rag.model_ref import ModelRef, shown_name
from rag.text import Text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GenerationView:
    """What a watched generation has done so far."""

    model: str
    prompt: str
    text: str
    thinking: str
    running: bool
    started_at: float
    first_token_at: float | None
    finished_at: float | None
    stats: GenerationStats | None
    error: str | None
    marks: tuple[Mark, ...]

    @property
    def time_to_first_token(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.started_at

    @property
    def tokens_per_second(self) -> float | None:
        return self.stats.tokens_per_second if self.stats else None

    @property
    def load_seconds(self) -> float | None:
        return self.stats.load_duration if self.stats else None


class WatchedGeneration:
    """Streams one generation on a `Runner` once started; `view()` tells how far it got."""

    def __init__(
        self,
        model: ChatModel,
        prompt: str,
        *,
        label: str | None = None,
        timeline: Timeline | None = None,
        clock: Callable[[], float] = time.time,
        num_ctx: int | None = None,
    ) -> None:
        if not prompt.strip():
            raise ValueError(Text("the prompt is empty: type a question first"))
        self._model = model
        self._prompt = prompt
        self._label = label or Text("gpu page: {model}", model=shown_name(model.name))
        self._timeline = timeline if timeline is not None else TIMELINE
        self._clock = clock
        self._num_ctx = num_ctx
        self._started = clock()
        self._times: list[float] = []
        """The clock when each event arrived, parallel to the runner's items (appended first)."""
        self._lock = threading.Lock()
        self._finished: float | None = None
        self._marks: tuple[Mark, ...] = ()
        self._runner: Runner[StreamEvent] | None = None

    def start(self) -> WatchedGeneration:
        if self._runner is None:
            self._started = self._clock()
            self._runner = Runner(self._produce, name="watched-generation")
        return self

    def stop(self) -> None:
        """Ask the model to stop; the generation ends with what it has."""
        if self._runner is not None:
            self._runner.stop()

    def wait(self, timeout: float | None = None) -> bool:
        """True once the generation has ended (its marks are made by then)."""
        return self._runner is not None and self._runner.join(timeout)  # type: ignore[arg-type]

    @property
    def running(self) -> bool:
        return self._runner is not None and not self._runner.done

    def _produce(self, stop: threading.Event) -> Iterator[StreamEvent]:
        events: list[StreamEvent] = []
        try:
            for event in self._model.stream([Message("user", self._prompt)], num_ctx=self._num_ctx, stop_event=stop):
                self._times.append(self._clock())
                events.append(event)
                yield event
        finally:  # on the runner's thread, before it reports done: finished, stopped or failed
            self._mark(events, stop.is_set())

    def _mark(self, events: list[StreamEvent], stop_requested: bool) -> None:
        finished = self._clock()
        folded = fold(events, self._times, stop_requested=stop_requested, strip=False)
        marks: list[Mark] = []
        if folded.stats is not None or folded.first_token_at is not None:
            try:
                marks = self._timeline.mark_generation(
                    self._label,
                    self._started,
                    finished,
                    folded.stats,
                    first_token_at=folded.first_token_at,
                    # thinking that never reached an answer (stopped) is thinking to the end
                    first_content_at=folded.first_content_at or (finished if folded.thinking else None),
                )
            except ValueError:  # a clock that went backwards: no marks rather than a crash
                log.warning("could not mark the generation's phases", exc_info=True)
        with self._lock:
            self._finished = finished
            self._marks = tuple(marks)

    def view(self) -> GenerationView:
        runner = self._runner
        running = self.running  # read first: once done, the items below are all there are
        events = runner.items() if runner is not None else []
        folded = fold(
            events, self._times[: len(events)], strip=False, stop_requested=runner is not None and runner.stop_requested
        )
        with self._lock:
            finished, marks = self._finished, self._marks
        return GenerationView(
            model=self._model.name,
            prompt=self._prompt,
            text=folded.text,
            thinking=folded.thinking,
            running=running,
            started_at=self._started,
            first_token_at=folded.first_token_at,
            finished_at=finished,
            stats=folded.stats,
            error=(runner.error or None) if runner is not None else None,
            marks=marks,
        )


@dataclass(frozen=True)
class WatchChoices:
    """The models the GPU page can generate with."""

    choices: tuple[str, ...]
    """'ollama:<model>' for each chat model Ollama has, then 'local' (the embedded model, as
    rag.llms.resolve_chat_model reads it) when it can run here."""
    note: str
    """Why Ollama offers no model and what to do or watch instead; '' when it offers some."""


def watch_choices(host: str, local: tuple[bool, str]) -> WatchChoices:
    """The choices for Ollama at `host` and the embedded model's (available, reason)."""
    chat_models = list_ollama_chat_models(host)
    local_ok, local_reason = local
    choices = tuple(str(ModelRef("ollama", m)) for m in chat_models or ()) + (("local",) if local_ok else ())
    fallback = (
        Text(" The embedded model generates on the CPU instead: watch the CPU chart.")
        if local_ok
        else Text(" ({reason})", reason=local_reason)
    )
    note: str
    if chat_models is None:
        note = Text("Ollama is not reachable at {host}.{fallback}", host=host, fallback=fallback)
    elif not chat_models:
        note = Text(
            "Ollama has no chat model: run 'ollama pull {model}'.{fallback}",
            model=SUGGESTED_OLLAMA_MODEL,
            fallback=fallback,
        )
    else:
        note = ""
    return WatchChoices(choices, note)
