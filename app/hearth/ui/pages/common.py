"""Small shared pieces of the pages: number formatting and a table button helper."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget


def human_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def human_count(n: int | None) -> str:
    if not n:
        return "?"
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def button(
    text: str, accessible: str, slot: Callable[[], object], parent: QWidget | None = None
) -> QPushButton:
    """A push button with an accessible name whose click calls ``slot()``."""
    btn = QPushButton(text, parent)
    btn.setAccessibleName(accessible)
    btn.clicked.connect(lambda _checked=False: slot())
    return btn


def button_cell(*buttons: QPushButton) -> QWidget:
    """A compact widget holding ``buttons`` side by side, for a table cell."""
    cell = QWidget()
    row = QHBoxLayout(cell)
    row.setContentsMargins(2, 0, 2, 0)
    row.setSpacing(4)
    for btn in buttons:
        row.addWidget(btn)
    return cell
