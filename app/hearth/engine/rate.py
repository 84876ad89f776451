"""The recent decode rate, from a sliding window of decode steps.

The scheduler records every step it decodes; the status route reads the rate. The
window is trimmed when a step is recorded, not when the rate is read: a worker nobody
asks for its status (the GUI, ``hearth serve`` without ``--ttl``) would otherwise keep
one entry per step for as long as a model stays loaded.
"""

from __future__ import annotations

import collections
import threading

DEFAULT_WINDOW_S = 10.0
# A hard cap on top of the time window, in case the clock or the step rate misbehaves:
# at this many entries the window still spans 10 s of steps at 3,200 steps/s.
MAX_SAMPLES = 32_768


class DecodeRate:
    """Tokens decoded per second over the last ``window_s`` seconds.

    ``record`` runs on the scheduler thread and ``tokens_per_s`` on any other; the lock
    keeps a reader from seeing the window mid-trim.
    """

    def __init__(self, window_s: float = DEFAULT_WINDOW_S, max_samples: int = MAX_SAMPLES):
        self._window_s = window_s
        self._samples: collections.deque[tuple[float, int]] = collections.deque(maxlen=max_samples)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many steps the window holds now (bounded by the window and the cap)."""
        return len(self._samples)

    def record(self, now: float, n_tokens: int) -> None:
        """One decode step that produced ``n_tokens`` outputs at ``now`` (perf_counter)."""
        cutoff = now - self._window_s
        with self._lock:
            samples = self._samples
            samples.append((now, n_tokens))
            while samples[0][0] < cutoff:
                samples.popleft()

    def tokens_per_s(self, now: float) -> float:
        cutoff = now - self._window_s
        with self._lock:
            recent = [sample for sample in self._samples if sample[0] >= cutoff]
        if len(recent) < 2:
            return 0.0
        span = recent[-1][0] - recent[0][0]
        return sum(n for _, n in recent[1:]) / span if span > 0 else 0.0
