"""When a loaded model is unloaded for idleness: its session time (the server's TTL, the
just-in-time TTL, or the last request's Ollama ``keep_alive``) after the last request
that used it, and never while one still does.

Kept apart from :class:`~hearth.server.model_manager.ModelManager`, which decides how
models load and switch; each loaded model has its own clock, which only decides when
its unload is due (and which idle model was used least recently); the manager performs
the unload under its lifecycle lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator

log = logging.getLogger(__name__)

# While a stream outlives its handler, an expired model is checked again this often.
BUSY_RECHECK_S = 0.25


class IdleClock:
    """The idle timer's inputs: the session time, the requests in use, the last use."""

    def __init__(self, ttl_s: float | None, wake: asyncio.Event | None = None) -> None:
        self._default_ttl = ttl_s
        self.session_s = ttl_s  # how long the model stays loaded after the last request
        self._in_use = 0
        self._last_used = time.monotonic()
        # The inputs changed: the timer looks again (one event shared by every model's
        # clock, so one timer watches them all).
        self.wake = wake if wake is not None else asyncio.Event()

    @property
    def last_used(self) -> float:
        """When a request last used the model (monotonic): the least recent goes first."""
        return self._last_used

    @property
    def in_use_count(self) -> int:
        """Requests using the model now (their handlers still run)."""
        return self._in_use

    def touch(self) -> None:
        self._last_used = time.monotonic()
        self.wake.set()

    @contextlib.contextmanager
    def in_use(self) -> Iterator[None]:
        """Count a request that uses the model; an idle unload waits for none to remain."""
        self._in_use += 1
        try:
            yield
        finally:
            self._in_use -= 1
            self.touch()

    def retime(self, ttl_s: float | None) -> None:
        """A new default session time (a just-in-time model the user now loaded)."""
        self._default_ttl = self.session_s = ttl_s
        self.touch()

    def keep_alive(self, keep_alive: float | None) -> None:
        """The session time a request asked for (seconds; 0 unloads once idle, negative
        keeps the model); a request without one restores the server's own TTL."""
        self.session_s = (
            self._default_ttl if keep_alive is None else None if keep_alive < 0 else keep_alive
        )
        self.touch()

    def expires_in(self, loaded: bool) -> float | None:
        """Seconds until an idle unload if nothing uses the model; None while it is kept
        (no TTL, ``keep_alive`` < 0, or nothing ``loaded``); the whole session while a
        request uses it."""
        session = self.session_s
        if session is None or not loaded:
            return None
        if self._in_use:
            return session
        return max(0.0, self._last_used + session - time.monotonic())

    def expiry(self, loaded: bool) -> float | None:
        """When the model may be unloaded for idleness (monotonic time), if ever: not
        while a request uses it."""
        session = self.session_s
        if session is None or not loaded or self._in_use:
            return None
        return self._last_used + session

    async def run(
        self,
        *,
        loaded: Callable[[], bool],
        changing: Callable[[], bool],
        unload_if_idle: Callable[[], Awaitable[bool]],
    ) -> None:
        """This clock's timer alone (see :func:`run_timer`)."""
        await run_timer(
            self.wake, lambda: self.expiry(loaded()), changing=changing, unload_due=unload_if_idle
        )


async def run_timer(
    wake: asyncio.Event,
    next_expiry: Callable[[], float | None],
    *,
    changing: Callable[[], bool],
    unload_due: Callable[[], Awaitable[bool]],
) -> None:
    """Wait for each expiry (the earliest of every model's, ``next_expiry``) and call
    ``unload_due`` (False: a stream still runs on a due model, look again shortly); none
    while a lifecycle change is ``changing`` the models (it wakes the timer when done)."""
    while True:
        wake.clear()
        deadline = next_expiry()
        delay = None if deadline is None else deadline - time.monotonic()
        if changing():
            delay = None
        if delay is None or delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), delay)
            continue
        if not await unload_due():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), BUSY_RECHECK_S)
