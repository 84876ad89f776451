"""A terminal progress line with speed and ETA, redrawn at most a few times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from hearth.core.units import format_bytes, format_duration


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
            parts.append(format_bytes(done) + (f" / {format_bytes(total)}" if total else ""))
            parts.append(f"{format_bytes(rate)}/s")
        if total and rate > 0 and done < total:
            parts.append(f"ETA {format_duration((total - done) / rate)}")
        line = "  ".join(parts)
        self.stream.write(("\r" + line + "\x1b[K") if self._tty else line + "\n")
        self.stream.flush()

    def close(self, message: str = "") -> None:
        if self._tty:
            self.stream.write("\n")
        if message:
            self.stream.write(message + "\n")
        self.stream.flush()
