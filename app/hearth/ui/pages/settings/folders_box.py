"""Settings' "Data folders" section: where data, settings, logs and models live, and a way there.

Each row shows the real path (selectable, to paste into a bug report) and a "Show in
file manager" button. The button creates the folder first (a fresh install has no logs
folder yet, and a file manager cannot open what does not exist) on a worker thread,
then hands a ``file://`` URL to the opener: ``QDesktopServices.openUrl`` in the app, a
recorder in tests (offscreen Qt has no file manager to watch).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QGridLayout, QLabel, QLineEdit, QPushButton, QWidget

from hearth.config.folders import UserFolder
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.section import Message, Section

log = logging.getLogger(__name__)

Opener = Callable[[QUrl], bool]


def open_in_file_manager(url: QUrl) -> bool:
    """The platform's file manager (Finder, Explorer, xdg-open); False if none answered."""
    return QDesktopServices.openUrl(url)


def _make_folder(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


class FoldersBox(Section):
    """One row per folder: label, read-only path, "Show in file manager"."""

    opened = Signal(str, bool)  # folder key, whether the opener accepted it

    def __init__(
        self,
        folders: Sequence[UserFolder],
        opener: Opener | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(
            "Data folders",
            "Where Hearth keeps its data, settings, logs and downloaded models. Copy a path "
            "into a bug report, or open the folder.",
            parent,
            icon_kind="data_folders",
        )
        self.setObjectName("foldersSection")
        self.folders = {f.key: f for f in folders}
        self._opener: Opener = opener or open_in_file_manager
        self._tasks = TaskSet()
        self.fields: dict[str, QLineEdit] = {}
        self.buttons: dict[str, QPushButton] = {}
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(SPACE["s"])
        grid.setVerticalSpacing(SPACE["s"])
        for row, folder in enumerate(folders):
            name = folder.label.lower()
            field = QLineEdit(str(folder.path), self)
            field.setReadOnly(True)
            field.setAccessibleName(f"{folder.label} folder location")
            field.setCursorPosition(0)
            button = QPushButton("Show in file manager", self)
            button.setAccessibleName(f"Show the {name} folder in the file manager")
            button.setToolTip(f"Open {folder.path}")
            button.clicked.connect(lambda _=False, key=folder.key: self.show_folder(key))
            grid.addWidget(QLabel(folder.label, self), row, 0)
            grid.addWidget(field, row, 1)
            grid.addWidget(button, row, 2)
            self.fields[folder.key] = field
            self.buttons[folder.key] = button
        self.message = Message(self)
        self.message.setAccessibleName("Folders message")
        grid.addWidget(self.message, len(folders), 0, 1, 3)
        grid.setColumnStretch(1, 1)
        self.body.addLayout(grid)

    def show_folder(self, key: str) -> asyncio.Task[bool]:
        """Create the folder if needed, then open it; the task's result says if it opened."""
        return self._tasks.spawn(self._show(self.folders[key]), name=f"show-folder-{key}")

    async def _show(self, folder: UserFolder) -> bool:
        try:
            await in_thread(_make_folder, folder.path)
        except OSError as exc:
            log.warning("could not create %s: %s", folder.path, exc)
            self.message.setText(f"Could not create {folder.path}: {exc.strerror or exc}")
            self.opened.emit(folder.key, False)
            return False
        ok = self._opener(QUrl.fromLocalFile(str(folder.path)))
        if ok:
            self.message.clear()
        else:
            log.info("no file manager opened %s", folder.path)
            self.message.setText(f"No file manager could open {folder.path}; copy the path.")
        self.opened.emit(folder.key, ok)
        return ok
