"""Requests the server has received but not yet queued, so the scheduler can wait for them.

The count spans parsing, chat rendering and tokenizing, which happen on the event loop
or in a worker thread before ``Scheduler.submit``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# How long a newly started request waits for others the server is still parsing.
_GATHER_S = 0.025
# From idle, how long after the last arrival it waits for the next one.
_QUIET_S = 0.003


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

    def gather(
        self, admit: Callable[[], int], all_busy: Callable[[], bool], was_idle: bool
    ) -> None:
        """Let requests sent at the same moment join the step that prefills this one
        (the scheduler's loop calls this after ``admit`` started one).

        Clients often send several requests at once; starting the first alone and the
        rest one step later stalls the early streams behind the late prefills. Requests
        the server is still parsing are waited for; from idle, so are requests that reach
        a handler within ``_QUIET_S`` of the last one. Never longer than ``_GATHER_S``.
        """
        deadline = time.perf_counter() + _GATHER_S
        while not all_busy():
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return
            if self.pending:
                self.wait_for_change(remaining)
                admit()
            elif not was_idle or not self.wait_for_pending(min(_QUIET_S, remaining)):
                return
