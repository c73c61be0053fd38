"""The one background runner for streamed generation, and the one fold of its events.

A generation (a model's stream, an agent's turn) blocks while it waits for the next token. Run on
a `Runner`'s daemon thread, it keeps going while a page redraws, a stop button is read or another
request is served, and everything it yields is kept with its arrival time. `fold` turns the
`StreamEvent`s of a generation into the answer, its thinking and its statistics, the same way for
the chat page, the GPU page and the CLI.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rag.errors import RagError
from rag.llms.types import GenerationStats, StreamEvent
from rag.text import Text, text_of

log = logging.getLogger(__name__)

T = TypeVar("T")

POLL_SECONDS = 0.05
"""How often `follow` looks at its stop events: the longest a stop can go unnoticed."""


class Runner(Generic[T]):
    """Runs produce(stop_event) -> Iterable[T] on a daemon thread and keeps every item it yields.

    Started on construction. `stop()` sets `stop_event`, which the producer is expected to watch
    (models' streams do, every 50 ms); what it yields after that (e.g. a final 'done' event) is
    still kept. A RagError ends it with `error` set to its text; any other exception is logged and
    worded as an unexpected failure. Either way `exception` keeps what was raised, and the items
    yielded before stay in `items()`.
    """

    def __init__(
        self,
        produce: Callable[[threading.Event], Iterable[T]],
        *,
        name: str = "generation",
        log_unexpected: bool = True,
    ) -> None:
        """`log_unexpected=False` for a consumer that `follow`s and words the producer's exceptions
        itself (a model's stream): they are then not logged here as well."""
        self.stop_event = threading.Event()
        self.started = time.monotonic()
        self.finished: float | None = None
        self.first_item: float | None = None
        self.error = ""
        self.exception: BaseException | None = None
        self._items: list[T] = []
        self._arrivals: list[float] = []
        self._done = False
        self._cond = threading.Condition()
        self._log_unexpected = log_unexpected
        self._thread = threading.Thread(target=self._run, args=(produce,), name=name, daemon=True)
        self._thread.start()

    def _run(self, produce: Callable[[threading.Event], Iterable[T]]) -> None:
        error = ""
        exception: BaseException | None = None
        try:
            iterator = iter(produce(self.stop_event))
            try:
                for item in iterator:
                    now = time.monotonic()
                    with self._cond:
                        if self.first_item is None:
                            self.first_item = now
                        self._items.append(item)
                        self._arrivals.append(now)
                        self._cond.notify_all()
            finally:
                # A generator left early (it watched stop_event) still runs its own `finally`
                # now, e.g. to release the one llama.cpp model or close an HTTP stream.
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
        except RagError as exc:
            error, exception = text_of(exc), exc
        except Exception as exc:
            if self._log_unexpected:
                log.exception("the generation failed")
            error = Text(
                "The generation failed unexpectedly ({error}: {detail})", error=type(exc).__name__, detail=str(exc)
            )
            exception = exc
        finally:
            with self._cond:
                self.error = error
                self.exception = exception
                self._done = True
                self.finished = time.monotonic()
                self._cond.notify_all()

    def stop(self) -> None:
        """Ask the producer to end now; what it has yielded stays."""
        self.stop_event.set()

    @property
    def stop_requested(self) -> bool:
        return self.stop_event.is_set()

    @property
    def done(self) -> bool:
        with self._cond:
            return self._done

    def items(self) -> list[T]:
        with self._cond:
            return list(self._items)

    def arrivals(self) -> list[float]:
        """The monotonic time each item arrived, parallel to `items()`."""
        with self._cond:
            return list(self._arrivals)

    def wait(self, seen: int, timeout: float) -> tuple[list[T], bool]:
        """Items after the first `seen` (waiting up to `timeout` for one), and whether that is all."""
        with self._cond:
            if len(self._items) <= seen and not self._done:
                self._cond.wait(timeout)
            return self._items[seen:], self._done

    def join(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the thread to end; whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def follow(self, stop_event: threading.Event | None = None, poll: float = POLL_SECONDS) -> Iterator[T]:
        """The items as they arrive, for a consumer on another thread.

        Returns once the producer is done and every item was yielded, or at once when `stop_event`
        (or this runner's own) is set: a stop is checked before each item. After the last item of a
        producer that raised, re-raises its exception.
        """
        seen = 0
        while True:
            if self.stop_event.is_set() or (stop_event is not None and stop_event.is_set()):
                return
            with self._cond:
                if len(self._items) <= seen and not self._done:
                    self._cond.wait(poll)
                fresh = self._items[seen : seen + 1]
                done = self._done and len(self._items) <= seen
            if fresh:
                seen += 1
                yield fresh[0]
            elif done:
                if self.exception is not None:
                    raise self.exception
                return


@dataclass(frozen=True)
class Folded:
    """A generation's stream events folded into what it produced."""

    text: str
    """The answer: every 'content' piece joined (stripped unless asked otherwise)."""
    thinking: str
    stats: GenerationStats | None
    """The statistics of the last 'done' event; None when the stream never finished."""
    stopped: bool
    """Ended by a stop: the model said so, or a stop was requested and it never finished."""
    first_token_at: float | None
    """When the first thinking or content text arrived, in the clock of the given times."""
    first_content_at: float | None
    """When the first content text arrived."""
    looped: bool = False
    """The model began repeating itself and the repetition was cut off (rag.llms.loops)."""


def fold(
    events: Sequence[StreamEvent],
    times: Sequence[float] | None = None,
    *,
    stop_requested: bool = False,
    strip: bool = True,
) -> Folded:
    """The answer, thinking and statistics of `events` (other items are skipped, so a Runner's
    items may be passed as they are); `times`, parallel to `events`, dates the first token and the
    first content. `strip=False` keeps the texts as streamed, for a view of a running generation."""
    content: list[str] = []
    thinking: list[str] = []
    stats: GenerationStats | None = None
    first_token: float | None = None
    first_content: float | None = None
    looped = False
    for i, event in enumerate(events):
        if not isinstance(event, StreamEvent):
            continue
        at = times[i] if times is not None and i < len(times) else None
        if event.kind == "done":
            stats = event.stats
        elif event.kind == "loop" and event.keep is not None:
            content = ["".join(content)[: event.keep]]
            looped = True
        elif event.kind in ("thinking", "content") and event.text:
            if first_token is None:
                first_token = at
            if event.kind == "content":
                content.append(event.text)
                if first_content is None:
                    first_content = at
            else:
                thinking.append(event.text)
    text, thought = "".join(content), "".join(thinking)
    if strip:
        text, thought = text.strip(), thought.strip()
    stopped = bool(stats and stats.done_reason == "stopped") or (stop_requested and stats is None)
    return Folded(text, thought, stats, stopped, first_token, first_content, looped)
