"""How Hearth writes sizes, durations and counts for people: one place, one style.

Bytes use binary (IEC) units, because that is how RAM, VRAM and the memory-fit
estimate are measured and how llama.cpp reports them; a download size and the memory
it needs are then in the same units on the same screen. Every view (CLI, GUI, error
messages) formats through here so "4.2 GiB" means the same thing everywhere.
"""

from __future__ import annotations

KIB = 1024
MIB = 1024**2
GIB = 1024**3

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_COUNT_UNITS = (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3))


def format_bytes(n: float | None) -> str:
    """``512 B``, ``1.5 KiB``, ``4.2 GiB``; ``?`` for an unknown size (None)."""
    if n is None:
        return "?"
    value = float(n)
    for unit in _BYTE_UNITS:
        if abs(value) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable: the last unit always returns")


def format_duration(seconds: float | None) -> str:
    """``4m05s`` or ``2h03m`` (an ETA: seconds stop mattering after an hour)."""
    if seconds is None:
        return "?"
    whole = int(max(seconds, 0))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def format_count(n: int | None) -> str:
    """A parameter count the way model cards say it: ``135M``, ``7.2B``; ``?`` unknown."""
    if not n:
        return "?"
    for unit, scale in _COUNT_UNITS:
        if n >= scale:
            value = n / scale
            return f"{value:.0f}{unit}" if value >= 100 else f"{value:.1f}{unit}"
    return str(n)
