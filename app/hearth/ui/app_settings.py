"""The GUI's one Settings object: loaded once, saved off the Qt thread, themed.

Every page edits ``store.settings`` in place and calls ``store.save()``; saves run on a
worker thread one after another (each writes a snapshot atomically), so the Qt thread
never waits on the disk. ``save_now()`` is for the close path, where no loop may run.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from pathlib import Path

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from hearth.config.paths import default_paths
from hearth.config.settings import Settings, load_settings, save_settings
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

THEMES = ("system", "light", "dark")


class SettingsStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_paths().settings_file
        self.settings: Settings = load_settings(self.path)
        self._lock = threading.Lock()
        self._tasks = TaskSet()
        self._generation = 0  # bumped per save; an older snapshot never overwrites a newer
        self._written = 0

    def _write(self, snapshot: Settings, generation: int) -> None:
        with self._lock:
            if generation < self._written:
                return
            save_settings(snapshot, self.path)
            self._written = generation

    def _snapshot(self) -> tuple[Settings, int]:
        self._generation += 1
        return copy.deepcopy(self.settings), self._generation

    def save(self) -> asyncio.Task[None] | None:
        """Write the current settings on a worker thread (the latest save wins)."""
        snapshot, generation = self._snapshot()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._write(snapshot, generation)  # no loop (tests, shutdown): write now
            return None
        return self._tasks.spawn(in_thread(self._write, snapshot, generation), name="save-settings")

    def save_now(self) -> None:
        try:
            self._write(*self._snapshot())
        except OSError:
            log.exception("could not save the settings to %s", self.path)


# --------------------------------------------------------------------------- theme

_DARK = {
    QPalette.ColorRole.Window: "#2b2b2b",
    QPalette.ColorRole.WindowText: "#e6e6e6",
    QPalette.ColorRole.Base: "#1f1f1f",
    QPalette.ColorRole.AlternateBase: "#2f2f2f",
    QPalette.ColorRole.ToolTipBase: "#3a3a3a",
    QPalette.ColorRole.ToolTipText: "#f0f0f0",
    QPalette.ColorRole.Text: "#e6e6e6",
    QPalette.ColorRole.Button: "#353535",
    QPalette.ColorRole.ButtonText: "#e6e6e6",
    QPalette.ColorRole.BrightText: "#ff6b6b",
    QPalette.ColorRole.Highlight: "#3d7bd9",
    QPalette.ColorRole.HighlightedText: "#ffffff",
    QPalette.ColorRole.Link: "#6aa7ff",
    QPalette.ColorRole.PlaceholderText: "#8c8c8c",
}
_LIGHT = {
    QPalette.ColorRole.Window: "#f3f3f3",
    QPalette.ColorRole.WindowText: "#1b1b1b",
    QPalette.ColorRole.Base: "#ffffff",
    QPalette.ColorRole.AlternateBase: "#f6f6f6",
    QPalette.ColorRole.ToolTipBase: "#ffffdc",
    QPalette.ColorRole.ToolTipText: "#1b1b1b",
    QPalette.ColorRole.Text: "#1b1b1b",
    QPalette.ColorRole.Button: "#ececec",
    QPalette.ColorRole.ButtonText: "#1b1b1b",
    QPalette.ColorRole.BrightText: "#c0392b",
    QPalette.ColorRole.Highlight: "#2f6fd0",
    QPalette.ColorRole.HighlightedText: "#ffffff",
    QPalette.ColorRole.Link: "#1f5fbf",
    QPalette.ColorRole.PlaceholderText: "#8a8a8a",
}


def theme_palette(theme: str) -> QPalette | None:
    """The palette for ``theme``; None for "system" (the platform's own)."""
    colors = {"dark": _DARK, "light": _LIGHT}.get(theme)
    if colors is None:
        return None
    palette = QPalette()
    for role, color in colors.items():
        palette.setColor(role, QColor(color))
    disabled = QColor("#7a7a7a")
    for role in (
        QPalette.ColorRole.Text,
        QPalette.ColorRole.ButtonText,
        QPalette.ColorRole.WindowText,
    ):
        palette.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return palette


def apply_theme(theme: str) -> None:
    """Apply "light", "dark" or "system" to the whole application.

    App-wide rather than per window: dialogs, menus and tooltips must follow it too.
    "system" sets an empty palette, which Qt resolves against the platform's own (so a
    desktop in dark mode stays dark, unlike the style's fixed standard palette).
    """
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    palette = theme_palette(theme)
    app.setPalette(QPalette() if palette is None else palette)
