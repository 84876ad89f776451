"""A token bucket shared by every download: a global cap in bytes per second.

Callers take the bytes they are about to write; when the bucket runs dry they sleep
for exactly the deficit. Taking more than is available puts the bucket into debt that
later callers also wait out, so the long-run rate is exact no matter how many
downloads share it, and a burst is bounded by the capacity.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    """``rate`` bytes/s (None: unlimited), holding at most ``burst`` bytes of credit."""

    def __init__(
        self,
        rate: float | None,
        *,
        burst: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._rate: float | None = None
        self._burst = 0.0
        self._explicit_burst = burst
        self._tokens = 0.0
        self._stamp = clock()
        self.set_rate(rate)

    @property
    def rate(self) -> float | None:
        return self._rate

    @property
    def burst(self) -> float:
        return self._burst

    def set_rate(self, rate: float | None) -> None:
        """Change the cap; ``None`` or 0 removes it. Applies from the next chunk on."""
        self._refill()
        if rate is not None and rate < 0:
            raise ValueError("the bandwidth limit must be positive (or None for no limit)")
        self._rate = float(rate) if rate else None
        if self._rate is None:
            self._burst = 0.0
            self._tokens = 0.0
            return
        # Default burst: a tenth of a second of traffic, at least one 64 KiB chunk.
        self._burst = self._explicit_burst or max(self._rate / 10, 64 * 1024.0)
        self._tokens = min(self._tokens, self._burst)

    def _refill(self) -> None:
        now = self._clock()
        if self._rate is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now

    def reserve(self, nbytes: int) -> float:
        """Take ``nbytes`` now and return how many seconds the caller must wait."""
        if self._rate is None or nbytes <= 0:
            return 0.0
        self._refill()
        self._tokens -= nbytes
        return 0.0 if self._tokens >= 0 else -self._tokens / self._rate

    async def acquire(self, nbytes: int) -> None:
        """Wait until ``nbytes`` may pass under the cap."""
        delay = self.reserve(nbytes)
        if delay > 0:
            await asyncio.sleep(delay)
