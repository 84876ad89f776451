"""The GUI's one Settings object: loaded once, saved off the Qt thread.

Every page edits ``store.settings`` in place and calls ``store.save()``; saves run on a
worker thread one after another (each writes a snapshot atomically), so the Qt thread
never waits on the disk. ``save_now()`` is for the close path, where no loop may run.
The theme the settings name is applied by ``hearth.ui.style.theme``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from pathlib import Path

from hearth.config.paths import default_paths
from hearth.config.settings import Settings, load_settings, save_settings
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)


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
