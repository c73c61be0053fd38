"""The embedded model's line (rag.llms.fifo): waiters are served in arrival order, each sees its place
change as the line moves, and one that leaves never takes the lock. Real threads, no sleeps of more
than a fraction of a second."""

from __future__ import annotations

import threading
import time

from rag.llms.fifo import FifoLock, Ticket
from tests.llms.test_stream import until


def test_three_waiters_get_places_one_two_three_and_go_in_that_order() -> None:
    lock = FifoLock()
    holder = lock.enter()
    assert holder.place == 0 and holder.holds
    order: list[str] = []
    seen: dict[str, list[int]] = {}
    tickets: dict[str, Ticket] = {}
    done = {name: threading.Event() for name in "abc"}

    def wait_in_line(name: str) -> None:
        ticket = tickets[name]
        places = seen[name]
        while (place := ticket.wait(0.05)) != 0:
            if place != places[-1]:
                places.append(place)
        places.append(0)
        order.append(name)
        done[name].wait(5.0)  # holds the lock until the test lets it go
        ticket.leave()

    threads = []
    for name in "abc":
        tickets[name] = lock.enter()
        seen[name] = [tickets[name].place]
        threads.append(threading.Thread(target=wait_in_line, args=(name,), daemon=True))
    assert [seen[n][0] for n in "abc"] == [1, 2, 3]
    assert lock.waiting == 3
    for t in threads:
        t.start()

    holder.leave()
    assert until(lambda: order == ["a"] and seen["b"][-1] == 1 and seen["c"][-1] == 2)
    done["a"].set()
    assert until(lambda: order == ["a", "b"] and seen["c"][-1] == 1)
    done["b"].set()
    assert until(lambda: order == ["a", "b", "c"])
    done["c"].set()
    for t in threads:
        t.join(5.0)

    # Each saw the line move up one place at a time until its turn.
    assert seen == {"a": [1, 0], "b": [2, 1, 0], "c": [3, 2, 1, 0]}
    assert not lock.held and lock.waiting == 0


def test_a_waiter_that_is_stopped_leaves_the_line_and_the_others_move_up() -> None:
    lock = FifoLock()
    holder = lock.enter()
    first, second, third = lock.enter(), lock.enter(), lock.enter()
    got: list[str] = []

    def take(name: str, ticket: Ticket) -> None:
        if ticket.wait_for_turn(5.0):
            got.append(name)
            ticket.leave()

    waiter = threading.Thread(target=take, args=("third", third), daemon=True)
    waiter.start()
    second.leave()  # a Stop while second in line

    assert second.place == -1
    assert (first.place, third.place) == (1, 2)
    second.leave()  # leaving twice is nothing
    first.leave()  # and the first too
    assert third.place == 1
    holder.leave()
    waiter.join(5.0)
    assert got == ["third"]  # the ones that left never held it
    assert not lock.held and lock.waiting == 0


def test_wait_returns_as_soon_as_the_place_changes() -> None:
    lock = FifoLock()
    holder = lock.enter()
    ticket = lock.enter()
    timer = threading.Timer(0.1, holder.leave)
    timer.start()
    started = time.monotonic()
    assert ticket.wait(5.0) == 0
    assert time.monotonic() - started < 2.0
    assert ticket.wait(0.01) == 0  # held: returns at once
    ticket.leave()


def test_acquire_with_a_time_out_leaves_the_line_when_it_runs_out() -> None:
    lock = FifoLock()
    holder = lock.acquire()
    assert holder is not None and holder.holds
    assert lock.acquire(timeout=0.05) is None
    assert lock.waiting == 0  # the one that gave up is not left in line to get the lock later
    late = threading.Thread(target=lambda: until(lambda: lock.waiting == 1) and holder.leave(), daemon=True)
    late.start()
    ticket = lock.acquire(timeout=5.0)
    assert ticket is not None and ticket.holds
    ticket.leave()
    assert not lock.held
