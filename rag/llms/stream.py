"""The one background runner for streamed generation, and the one fold of its events.

A generation (a model's stream, an agent's turn) blocks while it waits for the next token. Run on
a `Runner`'s daemon thread, it keeps going while a page redraws, a stop button is read or another
request is served, and everything it yields is kept with its arrival time. `fold` turns the
`StreamEvent`s of a generation into the answer, its thinking and its statistics, the same way for
the chat page, the GPU page and the CLI. A runner started with a `Keepalive` is stopped by the process's
`Watchdog` once nobody follows it (a page's closed tab), so an answer no one reads stops holding the
model.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rag.errors import RagError
from rag.llms.types import GenerationStats, StreamEvent
from rag.text import Text, text_of

log = logging.getLogger(__name__)

T = TypeVar("T")

POLL_SECONDS = 0.05
"""How often `follow` looks at its stop events: the longest a stop can go unnoticed."""

ABANDON_AFTER = 30.0
"""Seconds a generation runs on with nobody following it before the watchdog stops it. A page touches
its generation every 0.1 s while it follows it, and a connected browser session counts as following
(`Keepalive.attended`): only a session gone stops it. Streamlit stops a disconnected session's script
and keeps the session 120 s for a reconnect (`server.disconnectedSessionTTL`), which reruns the page;
30 s lets a network drop or a slow rerun come back to its answer, and frees the one embedded model
soon after a tab is closed (before: its answer ran to the end, the CPU busy 12 and 17 minutes later)."""


@dataclass(frozen=True)
class Keepalive:
    """How a `Runner` with nobody following it is noticed and stopped (see `Watchdog`)."""

    after: float = ABANDON_AFTER
    """Seconds without a sign of its follower before it is stopped."""
    attended: Callable[[], bool] | None = None
    """Asked from the watchdog's thread about once a second: whether its follower is there (a browser
    session still connected), a sign as good as a `touch`; None: only touches count."""


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
        keepalive: Keepalive | None = None,
    ) -> None:
        """`log_unexpected=False` for a consumer that `follow`s and words the producer's exceptions
        itself (a model's stream): they are then not logged here as well. With `keepalive` the process's
        `Watchdog` stops the runner once its follower has neither touched it nor been attended for
        `keepalive.after` seconds (`abandoned` is then set)."""
        self.stop_event = threading.Event()
        self.started = time.monotonic()
        self.last_seen = self.started
        """When its follower last showed itself (`touch`, or the keepalive's `attended`)."""
        self.keepalive = keepalive
        self.abandoned = False
        """Stopped by the watchdog: nobody followed it any more."""
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
        if keepalive is not None:
            WATCHDOG.watch(self)

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

    def touch(self) -> None:
        """Its follower is there (a page following it calls this every time it looks)."""
        self.last_seen = time.monotonic()

    def abandon(self) -> None:
        """Stop it because nobody follows it any more (the watchdog's stop)."""
        self.abandoned = True
        self.stop()

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


class Watchdog:
    """One daemon thread per process that stops the `Runner`s nobody follows any more.

    A generation blocks in its model (waiting for a token, or in line for the embedded model), so it
    cannot notice by itself that the page following it is gone; the watchdog looks at every watched
    runner about once a second (more often for a shorter `Keepalive.after`) and abandons one whose
    follower has not shown itself for `after` seconds. Its thread starts with the first runner watched.
    """

    LONGEST_POLL = 1.0

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: list[Runner[Any]] = []
        self._thread: threading.Thread | None = None

    def watch(self, runner: Runner[Any]) -> None:
        with self._cond:
            self._watched.append(runner)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="generation-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def watching(self) -> int:
        """How many runners it watches now."""
        with self._cond:
            return len(self._watched)

    def check(self, now: float | None = None) -> None:
        """One look at every watched runner: the ended ones are let go, the abandoned ones stopped."""
        with self._cond:
            runners = list(self._watched)
        now = time.monotonic() if now is None else now
        for runner in runners:
            keepalive = runner.keepalive
            if runner.done or runner.stop_requested or keepalive is None:
                self._forget(runner)
                continue
            if keepalive.attended is not None and _attended(keepalive.attended):
                runner.touch()
                continue
            idle = now - runner.last_seen
            if idle > keepalive.after:
                log.info("Stopping a generation nobody followed for %.0f s (%s)", idle, runner._thread.name)
                runner.abandon()
                self._forget(runner)

    def _forget(self, runner: Runner[Any]) -> None:
        with self._cond:
            if runner in self._watched:
                self._watched.remove(runner)

    def _poll(self) -> float:
        with self._cond:
            afters = [r.keepalive.after for r in self._watched if r.keepalive is not None]
        return min([self.LONGEST_POLL, *(a / 4 for a in afters)])

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._watched))
            time.sleep(self._poll())
            try:
                self.check()
            except Exception:  # the watchdog must outlive any one runner's trouble
                log.exception("the generation watchdog's check failed")


def _attended(probe: Callable[[], bool]) -> bool:
    try:
        return bool(probe())
    except Exception as exc:  # noqa: BLE001 - a probe that fails says nothing: the touches decide
        log.debug("a keepalive probe failed: %s", exc)
        return False


WATCHDOG = Watchdog()
"""The process's one watchdog (every `Runner` made with a `Keepalive` registers with it)."""


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


TICK_SECONDS = 0.25
"""How often `collect` calls its `tick` while the model reads its prompt or writes: a page's Stop lands this soon."""


def collect(
    produce: Callable[[threading.Event], Iterable[StreamEvent]],
    *,
    enough: Callable[[str], bool] = lambda text: False,
    on_place: Callable[[int], None] | None = None,
    tick: Callable[[], None] | None = None,
    name: str = "generation",
) -> str:
    """The content a short generation writes (a follow-up's rewrite, a summary), run on a `Runner`: stopped once
    `enough(content so far)`; `on_place` told its place in line for a model that answers one question at a time;
    `tick` called every `TICK_SECONDS` meanwhile, from which a page's Stop raises (a click ends a Streamlit run at
    its next yield point): the model is stopped then and the exception goes on, as does the producer's own (a
    ModelError). Iterated in the caller's thread instead, the model's minutes of reading a prompt on a CPU had no
    yield point, and no Stop."""
    written = ""
    runner: Runner[StreamEvent] = Runner(produce, name=name, log_unexpected=False)
    seen = 0
    try:
        while True:
            events, finished = runner.wait(seen, TICK_SECONDS)
            seen += len(events)
            for event in events:
                if event.kind == "content":
                    written += event.text  # not joined again from its parts at every token
                    if enough(written):
                        runner.stop()
                elif event.kind == "queue" and event.place is not None and on_place is not None:
                    on_place(event.place)
            if finished:
                break
            if tick is not None:
                tick()
    except BaseException:
        runner.stop()  # what `tick` raised: the model is let go, and the caller hears it
        raise
    if runner.exception is not None:
        raise runner.exception
    return written
