"""Requests the server has received but not yet queued, so the scheduler can wait for them.

The count spans parsing, chat rendering and tokenizing, which happen on the event loop
or in a worker thread before ``Scheduler.submit``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Arrival:
    """One counted request; settled once, when queued or abandoned."""

    def __init__(self) -> None:
        self.settled = False


class Arrivals:
    def __init__(self) -> None:
        self._pending = 0
        self._cond = threading.Condition()

    @property
    def pending(self) -> int:
        return self._pending

    @contextmanager
    def expect(self) -> Iterator[Arrival]:
        """Count one request from its arrival until it is settled or this block ends."""
        arrival = Arrival()
        with self._cond:
            self._pending += 1
            self._cond.notify_all()
        try:
            yield arrival
        finally:
            self.settle(arrival)

    def settle(self, arrival: Arrival) -> None:
        with self._cond:
            if arrival.settled:
                return
            arrival.settled = True
            self._pending -= 1
            self._cond.notify_all()

    def wait_for_pending(self, timeout: float) -> bool:
        """Wait until some request is pending; False if none arrived in time."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending > 0, timeout)

    def wait_for_change(self, timeout: float) -> bool:
        """Wait until one pending request is queued or dropped; False if none is pending."""
        with self._cond:
            if self._pending == 0:
                return False
            before = self._pending
            return self._cond.wait_for(lambda: self._pending != before, timeout)
