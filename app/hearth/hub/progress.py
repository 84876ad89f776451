"""Download states and the progress events a UI or CLI listens to."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path


class DownloadState(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    RETRYING = "retrying"  # waiting out a backoff after a network error
    VERIFYING = "verifying"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (DownloadState.COMPLETED, DownloadState.FAILED, DownloadState.CANCELLED)

    @property
    def active(self) -> bool:
        return self in (DownloadState.RUNNING, DownloadState.RETRYING, DownloadState.VERIFYING)


@dataclass(frozen=True)
class DownloadEvent:
    """A snapshot of one download. Sent on every state change and, while bytes flow,
    at most ``1 / progress_interval`` times a second."""

    download_id: int
    repo_id: str
    filename: str
    dest: Path
    state: DownloadState
    bytes_done: int
    total: int | None
    speed_bps: float  # bytes per second, averaged over the last few seconds
    eta_s: float | None  # None when unknown (no speed yet, or size unknown)
    error: str | None = None
    error_code: str | None = None

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, self.bytes_done / self.total)


EventCallback = Callable[[DownloadEvent], None]


class SpeedMeter:
    """Bytes per second over a sliding window of recent samples."""

    def __init__(self, window_s: float = 3.0, clock: Callable[[], float] = time.monotonic):
        self._window = window_s
        self._clock = clock
        self._samples: deque[tuple[float, int]] = deque()

    def reset(self) -> None:
        self._samples.clear()

    def add(self, bytes_done: int) -> None:
        now = self._clock()
        self._samples.append((now, bytes_done))
        while len(self._samples) > 2 and now - self._samples[0][0] > self._window:
            self._samples.popleft()

    @property
    def speed(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        (t0, b0), (t1, b1) = self._samples[0], self._samples[-1]
        if t1 <= t0:
            return 0.0
        return max(0.0, (b1 - b0) / (t1 - t0))

    def eta(self, bytes_done: int, total: int | None) -> float | None:
        speed = self.speed
        if total is None or speed <= 0:
            return None
        return max(0.0, (total - bytes_done) / speed)


class Throttle:
    """True at most once per ``interval`` seconds (the first call always passes)."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval
        self._clock = clock
        self._last: float | None = None

    def ready(self) -> bool:
        now = self._clock()
        if self._last is not None and now - self._last < self._interval:
            return False
        self._last = now
        return True
