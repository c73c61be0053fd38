"""A lock that serves its waiters in arrival order and tells each its place in line.

The embedded llama.cpp model answers one question at a time. With a plain `threading.Lock` the
sessions waiting for it were neither ordered nor told anything, and gave up after 300 s with "the
local chat model is busy". Here each waiter holds a `Ticket`: it knows its place (1: next), sees it
change as the line moves, and can leave the line (a Stop, a session gone) without ever taking the
lock. Releasing hands the lock straight to the first in line, so a newcomer cannot jump the queue.
"""

from __future__ import annotations

import threading
from collections import deque


class FifoLock:
    """One holder at a time; the others wait in a first-in, first-out line of `Ticket`s."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holder: Ticket | None = None
        self._line: deque[Ticket] = deque()

    def enter(self) -> Ticket:
        """A ticket at the end of the line; it holds the lock at once when nobody does."""
        ticket = Ticket(self)
        with self._cond:
            if self._holder is None and not self._line:
                self._holder = ticket
            else:
                self._line.append(ticket)
            self._cond.notify_all()
        return ticket

    @property
    def waiting(self) -> int:
        """How many tickets are in line (the holder not counted)."""
        with self._cond:
            return len(self._line)

    @property
    def held(self) -> bool:
        with self._cond:
            return self._holder is not None

    def acquire(self, timeout: float | None = None) -> Ticket | None:
        """Wait in line up to `timeout` seconds (None: as long as it takes); the holding ticket, or None
        after leaving the line at the time-out. Release it with `ticket.leave()`."""
        ticket = self.enter()
        if ticket.wait_for_turn(timeout):
            return ticket
        ticket.leave()
        return None

    def _place(self, ticket: Ticket) -> int:
        if self._holder is ticket:
            return 0
        try:
            return self._line.index(ticket) + 1
        except ValueError:
            return -1

    def _leave(self, ticket: Ticket) -> None:
        with self._cond:
            if self._holder is ticket:
                self._holder = self._line.popleft() if self._line else None
            elif ticket in self._line:
                self._line.remove(ticket)
            else:
                return
            self._cond.notify_all()


class Ticket:
    """A place in a `FifoLock`'s line, or the lock itself once its turn came."""

    def __init__(self, lock: FifoLock) -> None:
        self._lock = lock

    @property
    def place(self) -> int:
        """0: it holds the lock; n >= 1: n-th in line (1 goes next); -1: it left."""
        with self._lock._cond:
            return self._lock._place(self)

    @property
    def holds(self) -> bool:
        return self.place == 0

    def wait(self, timeout: float) -> int:
        """Wait up to `timeout` seconds for its place to change; the place then (see `place`)."""
        lock = self._lock
        with lock._cond:
            before = lock._place(self)
            if before > 0:
                lock._cond.wait_for(lambda: lock._place(self) != before, timeout)
            return lock._place(self)

    def wait_for_turn(self, timeout: float | None = None) -> bool:
        """Wait until it holds the lock (up to `timeout` seconds; None: no limit); whether it does."""
        lock = self._lock
        with lock._cond:
            return lock._cond.wait_for(lambda: lock._place(self) <= 0, timeout) and lock._place(self) == 0

    def leave(self) -> None:
        """Leave the line, or release the lock to the next in line; again: nothing."""
        self._lock._leave(self)
