"""A terminal progress line with speed and ETA, redrawn at most a few times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


class ProgressLine:
    """``update(done, total)``; bytes are shown as sizes when ``unit == "bytes"``."""

    def __init__(self, label: str, *, unit: str = "bytes", stream: TextIO | None = None,
                 min_interval_s: float = 0.2) -> None:  # fmt: skip
        self.label = label
        self.unit = unit
        self.stream = stream or sys.stderr
        self.min_interval_s = min_interval_s
        self._started = time.monotonic()
        self._last_draw = 0.0
        self._tty = self.stream.isatty()

    def update(self, done: float, total: float | None, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_draw < self.min_interval_s:
            return
        self._last_draw = now
        elapsed = max(now - self._started, 1e-6)
        rate = done / elapsed
        parts = [self.label]
        if total:
            fraction = min(done / total, 1.0)
            bar = "#" * int(fraction * 24)
            parts.append(f"[{bar:<24}] {fraction:6.1%}")
        if self.unit == "bytes":
            parts.append(human_bytes(done) + (f" / {human_bytes(total)}" if total else ""))
            parts.append(f"{human_bytes(rate)}/s")
        if total and rate > 0 and done < total:
            parts.append(f"ETA {human_duration((total - done) / rate)}")
        line = "  ".join(parts)
        self.stream.write(("\r" + line + "\x1b[K") if self._tty else line + "\n")
        self.stream.flush()

    def close(self, message: str = "") -> None:
        if self._tty:
            self.stream.write("\n")
        if message:
            self.stream.write(message + "\n")
        self.stream.flush()
