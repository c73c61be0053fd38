"""The background runner and the fold of stream events (rag.llms.stream)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from rag.errors import ModelError
from rag.llms.stream import WATCHDOG, Folded, Keepalive, Runner, fold
from rag.llms.types import GenerationStats, StreamEvent


def test_runner_keeps_every_item_with_its_arrival_time() -> None:
    runner = Runner(lambda stop: iter([1, 2, 3]), name="test-runner")
    assert runner.join(2.0)
    assert runner.done and runner.items() == [1, 2, 3]
    arrivals = runner.arrivals()
    assert len(arrivals) == 3 and arrivals == sorted(arrivals)
    assert runner.first_item == arrivals[0]
    assert runner.started <= runner.first_item <= runner.finished
    assert runner.error == "" and runner.exception is None


def test_wait_returns_what_came_after_seen() -> None:
    gate = threading.Event()

    def produce(stop: threading.Event) -> Iterator[str]:
        yield "a"
        gate.wait(2.0)
        yield "b"

    runner = Runner(produce)
    items, done = runner.wait(0, 2.0)
    assert items == ["a"] and not done
    gate.set()
    assert runner.join(2.0)
    assert runner.wait(1, 0.1) == (["b"], True)


def test_stop_sets_the_event_the_producer_watches_and_later_items_are_kept() -> None:
    def produce(stop: threading.Event) -> Iterator[str]:
        yield "first"
        stop.wait(5.0)
        yield "done after stop"

    runner = Runner(produce)
    runner.wait(0, 2.0)
    assert not runner.stop_requested
    runner.stop()
    assert runner.stop_requested
    assert runner.join(2.0)
    assert runner.items() == ["first", "done after stop"]


def test_a_rag_error_is_the_users_line_and_items_before_stay() -> None:
    def produce(stop: threading.Event) -> Iterator[str]:
        yield "partial"
        raise ModelError("Ollama is not reachable: start it")

    runner = Runner(produce)
    assert runner.join(2.0)
    assert runner.items() == ["partial"]
    assert runner.error == "Ollama is not reachable: start it"
    assert isinstance(runner.exception, ModelError)


def test_any_other_exception_is_worded_as_unexpected(caplog: pytest.LogCaptureFixture) -> None:
    def produce(stop: threading.Event) -> Iterator[str]:
        raise KeyError("boom")
        yield "never"  # pragma: no cover

    runner = Runner(produce)
    assert runner.join(2.0)
    assert runner.error == "The generation failed unexpectedly (KeyError: 'boom')"
    assert isinstance(runner.exception, KeyError)
    assert "the generation failed" in caplog.text


def test_a_generator_left_at_stop_is_closed() -> None:
    closed = threading.Event()

    def produce(stop: threading.Event) -> Iterator[int]:
        def gen() -> Iterator[int]:
            try:
                n = 0
                while True:
                    n += 1
                    yield n
                    time.sleep(0.01)
            finally:
                closed.set()

        for item in gen():
            if stop.is_set():
                break
            yield item

    runner = Runner(produce)
    runner.wait(0, 2.0)
    runner.stop()
    assert runner.join(2.0)
    assert closed.is_set()


def test_follow_yields_as_items_arrive_and_reraises_after_them() -> None:
    def produce(stop: threading.Event) -> Iterator[int]:
        yield 1
        time.sleep(0.05)
        yield 2
        raise ModelError("broke mid-answer")

    runner = Runner(produce)
    got: list[int] = []
    with pytest.raises(ModelError, match="broke mid-answer"):
        for item in runner.follow():
            got.append(item)
    assert got == [1, 2]


def test_follow_returns_at_once_when_a_stop_event_is_set() -> None:
    release = threading.Event()

    def produce(stop: threading.Event) -> Iterator[int]:
        yield 1
        release.wait(60)  # set below, once the follow has returned
        yield 2

    runner = Runner(produce)
    caller_stop = threading.Event()
    got: list[int] = []
    for item in runner.follow(caller_stop, poll=0.01):
        got.append(item)
        caller_stop.set()
    assert got == [1]
    assert not runner.done  # it returned while the producer was still held, not once the producer ended
    # its own stop ends a follow just the same
    runner.stop()
    assert list(runner.follow()) == []
    release.set()
    assert runner.join(2.0)


def test_follow_of_a_finished_runner_yields_everything() -> None:
    runner = Runner(lambda stop: ["x", "y"])
    assert runner.join(2.0)
    assert list(runner.follow()) == ["x", "y"]


STATS = GenerationStats(done_reason="stop", eval_count=3, eval_duration=1.5)


def test_fold_joins_content_and_thinking_and_keeps_the_last_stats() -> None:
    events = [
        StreamEvent("thinking", " hmm "),
        StreamEvent("content", " Paris"),
        StreamEvent("content", " [1]. "),
        StreamEvent("done", stats=STATS),
    ]
    folded = fold(events, [10.0, 11.0, 12.0, 13.0])
    assert folded == Folded("Paris [1].", "hmm", STATS, False, 10.0, 11.0)
    raw = fold(events, strip=False)
    assert (raw.text, raw.thinking) == (" Paris [1]. ", " hmm ")
    assert raw.first_token_at is None and raw.first_content_at is None


def test_fold_skips_other_items_and_empty_pieces() -> None:
    events = ["a step", StreamEvent("content", ""), StreamEvent("content", "ok"), StreamEvent("done", stats=STATS)]
    folded = fold(events, [1.0, 2.0, 3.0, 4.0])  # type: ignore[list-item]
    assert folded.text == "ok" and folded.first_token_at == 3.0 and folded.first_content_at == 3.0


@pytest.mark.parametrize(
    ("events", "stop_requested", "stopped"),
    [
        ([StreamEvent("done", stats=GenerationStats(done_reason="stopped"))], False, True),
        ([StreamEvent("content", "half")], True, True),
        ([StreamEvent("content", "half")], False, False),
        ([StreamEvent("done", stats=STATS)], True, False),
    ],
)
def test_fold_tells_a_stopped_generation(events: list[StreamEvent], stop_requested: bool, stopped: bool) -> None:
    assert fold(events, stop_requested=stop_requested).stopped is stopped


def test_fold_of_nothing() -> None:
    assert fold([]) == Folded("", "", None, False, None, None)


# -- the watchdog: a generation nobody follows is stopped ----------------------------------------------


def blocked_generation(stop: threading.Event) -> Iterator[str]:
    """Stands in for a model between tokens (or in line for the model): it yields only when stopped."""
    yield "first"
    stop.wait(30.0)
    yield "after the stop"


def test_a_generation_whose_follower_stops_touching_it_is_stopped_within_the_deadline() -> None:
    after = 0.4
    runner = Runner(blocked_generation, name="test-abandoned", keepalive=Keepalive(after))
    # Followed (touched every 0.1 s, as the page does) for three deadlines: it keeps going.
    followed_until = time.monotonic() + 3 * after
    while time.monotonic() < followed_until:
        runner.touch()
        time.sleep(0.1)
    assert not runner.stop_requested and not runner.abandoned
    last_touch = runner.last_seen  # the tab is closed: nobody touches it any more

    assert runner.join(5.0)
    assert runner.abandoned and runner.stop_requested and runner.finished is not None
    stopped_after = runner.finished - last_touch
    assert after <= stopped_after < after + 1.0, stopped_after  # the deadline, plus one look (after / 4)
    assert runner.items() == ["first", "after the stop"]  # what it yielded stays, as after a Stop
    assert until(lambda: runner not in WATCHDOG._watched)  # let go of


def test_an_attended_generation_runs_on_without_touches_and_stops_when_its_session_is_gone() -> None:
    connected = threading.Event()
    connected.set()
    after = 0.3
    runner = Runner(blocked_generation, name="test-attended", keepalive=Keepalive(after, connected.is_set))
    time.sleep(4 * after)  # no touch at all: the session on another page, still connected
    assert not runner.stop_requested
    connected.clear()  # the websocket closed
    gone = time.monotonic()
    assert runner.join(5.0)
    assert runner.abandoned and runner.finished is not None
    # The watchdog's last look that found it connected was at most one look (after / 4) before.
    assert 0.75 * after <= runner.finished - gone < after + 1.0


def test_a_probe_that_fails_counts_as_no_sign_and_runners_without_keepalive_are_not_watched() -> None:
    def broken() -> bool:
        raise RuntimeError("no runtime")

    runner = Runner(blocked_generation, name="test-broken-probe", keepalive=Keepalive(0.2, broken))
    assert runner.join(5.0) and runner.abandoned
    plain = Runner(blocked_generation, name="test-plain")
    assert plain not in WATCHDOG._watched
    time.sleep(0.5)
    assert not plain.stop_requested  # the CLI's `rag ask` and the benchmarks: no deadline
    plain.stop()
    assert plain.join(2.0) and not plain.abandoned


def until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
