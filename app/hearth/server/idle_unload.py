"""When the loaded model is unloaded for idleness: its session time (the server's TTL,
or the last request's Ollama ``keep_alive``) after the last request that used it, and
never while one still does.

Kept apart from :class:`~hearth.server.model_manager.ModelManager`, which decides how
models load and switch; this clock only decides when an unload is due, and the manager
performs it under its lifecycle lock.
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

    def __init__(self, ttl_s: float | None) -> None:
        self._default_ttl = ttl_s
        self.session_s = ttl_s  # how long the model stays loaded after the last request
        self._in_use = 0
        self._last_used = time.monotonic()
        self.wake = asyncio.Event()  # the inputs changed: the timer looks again

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
        """Wait for each expiry and call ``unload_if_idle`` (False: a stream still runs,
        look again shortly); none while a lifecycle change is ``changing`` the model
        (it wakes the timer when done)."""
        while True:
            self.wake.clear()
            deadline = self.expiry(loaded())
            delay = None if deadline is None else deadline - time.monotonic()
            if changing():
                delay = None
            if delay is None or delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), delay)
                continue
            if not await unload_if_idle():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), BUSY_RECHECK_S)
