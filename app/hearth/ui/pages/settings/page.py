"""Settings: models (how many stay loaded, their memory, the prompt cache:
``models_box.py``), models folders, download limits, the Hugging Face account, remote
engines, theme, and where the data lives.

Folders go to the library's index (``Library.add_folder``/``remove_folder``); the
rest goes to the Settings file through the shared ``SettingsStore``. Disk work runs
on worker threads. The "Folders" box (``folders_box.py``) shows the data, settings,
logs and models folders in use, each with a "Show in file manager" button. The
"Hugging Face account" box (``hf_account_box.py``) logs in and out with a token kept
where ``hearth login`` keeps it. The "Remote engines" box (``engines_box.py``) adds,
tests, edits and removes the engines whose models Hearth serves as ``name/model``.
The "Tools (MCP servers)" box (``tools_box.py``) edits ``mcp.json``, imports other
apps' servers and lists the standing tool permissions.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from hearth.config.folders import user_folders
from hearth.config.secrets import SecretStore, store_for_setting
from hearth.library import Library, LibraryError
from hearth.tools.mcp_config import default_config_path
from hearth.tools.mcp_file import McpFile
from hearth.tools.mcp_import import ImportSource
from hearth.tools.permissions import ToolPermissions
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.settings.engines_box import EnginesBox
from hearth.ui.pages.settings.engines_dialog import WorkerSource
from hearth.ui.pages.settings.folders_box import FoldersBox, Opener
from hearth.ui.pages.settings.hf_account_box import HfAccountBox
from hearth.ui.pages.settings.models_box import ModelsBox
from hearth.ui.pages.settings.tools_box import ToolsBox
from hearth.ui.style.theme import THEMES, apply_theme
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.section import Message, Section, SectionIndex

log = logging.getLogger(__name__)

KIB = 1024
CONTENT_MAX_WIDTH = 960  # a readable column on a wide window, as in LM Studio and Jan
INDEX_MIN_PAGE_PX = 1000  # narrower (a 900 px window), the sections take the width
LIST_PX = 100  # three or four folders; the list scrolls past that


class SettingsPage(QWidget):
    folders_changed = Signal()
    changed = Signal()

    def __init__(
        self,
        store: SettingsStore,
        library: Library | None = None,
        parent: QWidget | None = None,
        *,
        opener: Opener | None = None,
        log_dir: Path | None = None,
        engines_worker: WorkerSource | None = None,
        mcp_file: McpFile | None = None,
        tool_permissions: ToolPermissions | None = None,
        import_sources: Callable[[], list[ImportSource]] | None = None,
    ) -> None:
        """``opener`` opens a folder URL (default: the file manager; tests record it);
        ``log_dir`` is the worker's log folder when the window was given its own;
        ``engines_worker`` hands out the worker that tests remote engines;
        ``mcp_file``, ``tool_permissions`` and ``import_sources`` are the Tools box's
        (default: ``mcp.json`` and the permissions in the config folder, and the other
        apps' files where they keep them on this OS)."""
        super().__init__(parent)
        self.setAccessibleName("Settings")
        self.store = store
        self.library = library or Library()
        self._opener = opener
        self._log_dir = log_dir
        self._engines_worker = engines_worker
        self._mcp_file = mcp_file or McpFile(default_config_path(), self._secret_store)
        self._tool_permissions = tool_permissions or ToolPermissions()
        self._import_sources = import_sources
        self._tasks = TaskSet()
        self._build()
        QTimer.singleShot(0, self.refresh_folders)
        QTimer.singleShot(0, self.engines_box.refresh)
        QTimer.singleShot(0, self.tools_box.refresh)

    def _secret_store(self) -> SecretStore:
        """The configured store, as for the HF token (``HEARTH_SECRET_STORE`` wins)."""
        return store_for_setting(self.store.settings.secret_store)

    def _build(self) -> None:
        s = self.store.settings
        self.hf_account = HfAccountBox(self.store, self)
        self.models_box = ModelsBox(self.store, self)  # residency and the prompt cache
        self.engines_box = EnginesBox(self._engines_worker, self)
        self.tools_box = ToolsBox(
            self._mcp_file, self._tool_permissions, self,
            import_sources=self._import_sources, log_dir=self._log_dir,
        )  # fmt: skip
        folders = user_folders(
            self.library.paths, config_dir=self.store.path.parent, logs_dir=self._log_dir
        )
        self.folders_box = FoldersBox(folders, opener=self._opener, parent=self)
        self.folders_box.fields["config"].setToolTip(f"Settings file: {self.store.path}")
        self.data_field = self.folders_box.fields["data"]
        self.sections: list[Section] = [
            self.models_box,
            self._models_section(),
            self._downloads_section(s.download_concurrency, s.bandwidth_limit_bps),
            self.hf_account,
            self.engines_box,
            self.tools_box,
            self._appearance_section(s.theme),
            self.folders_box,
        ]

        title = QLabel("Settings", self)
        title.setProperty("role", "title")
        subtitle = QLabel("Changes are saved as you make them.", self)
        subtitle.setObjectName("settingsSubtitle")
        subtitle.setProperty("role", "muted")
        self.sections_area = QScrollArea(self)
        self.sections_area.setObjectName("settingsSections")
        self.sections_area.setWidgetResizable(True)
        self.sections_area.setFrameShape(QFrame.Shape.NoFrame)
        content = QWidget(self.sections_area)
        content.setObjectName("settingsContent")
        column = QWidget(content)
        column.setObjectName("settingsColumn")
        column.setMaximumWidth(CONTENT_MAX_WIDTH)
        col = QVBoxLayout(column)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(SPACE["l"])
        header = QVBoxLayout()
        header.setSpacing(SPACE["xs"])
        header.addWidget(title)
        header.addWidget(subtitle)
        col.addLayout(header)
        for section in self.sections:
            col.addWidget(section)
        col.addStretch(1)
        centre = QHBoxLayout(content)
        centre.setContentsMargins(SPACE["xl"], SPACE["l"], SPACE["xl"], SPACE["xl"])
        centre.addStretch(1)  # the sides take what the column's maximum width leaves
        centre.addWidget(column, 1000)
        centre.addStretch(1)
        self.sections_area.setWidget(content)
        self.index_panel = QWidget(self)
        self.index_panel.setObjectName("settingsIndexPanel")
        self.index_panel.setVisible(False)  # until the page is wide enough (resizeEvent)
        self.index = SectionIndex(self.sections_area, self.sections, self.index_panel)
        side = QVBoxLayout(self.index_panel)
        side.setContentsMargins(SPACE["l"], SPACE["xl"] + SPACE["xxl"], 0, 0)
        side.addWidget(self.index)
        side.addStretch(1)
        page = QHBoxLayout(self)
        page.setContentsMargins(0, 0, 0, 0)
        page.setSpacing(0)
        page.addWidget(self.index_panel)
        page.addWidget(self.sections_area, 1)

        self.concurrency_spin.valueChanged.connect(self._save_downloads)
        self.bandwidth_spin.valueChanged.connect(self._save_downloads)
        self.theme_combo.currentIndexChanged.connect(self._save_theme)

    def _models_section(self) -> Section:
        box = Section(
            "Models folders",
            "Folders Hearth scans for GGUF models besides its own. Their models show up "
            "in the Library; the files stay where they are.",
            self,
            icon_kind="folders",
        )
        box.setObjectName("modelsFoldersSection")
        self.own_folder_label = QLabel(
            f"Hearth's own folder, always scanned: {self.library.models_dir}", box
        )
        self.own_folder_label.setProperty("role", "muted")
        self.own_folder_label.setWordWrap(True)
        self.own_folder_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.folders_list = QListWidget(box)
        self.folders_list.setAccessibleName("Models folders")
        self.folders_list.setObjectName("modelsFolders")
        self.folders_list.setFixedHeight(LIST_PX)
        self.folders_list.setVisible(False)  # until there is a folder to list
        self.add_folder_button = QPushButton("Add folder…", box)
        self.add_folder_button.setAccessibleName("Add a models folder")
        self.add_folder_button.clicked.connect(self._choose_folder)
        self.remove_folder_button = QPushButton("Remove", box)
        self.remove_folder_button.setAccessibleName("Remove the selected models folder")
        self.remove_folder_button.clicked.connect(self.remove_selected_folder)
        self.remove_folder_button.setEnabled(False)
        self.folders_list.currentRowChanged.connect(
            lambda row: self.remove_folder_button.setEnabled(row >= 0)
        )
        self.folders_message = Message(box)
        buttons = QHBoxLayout()
        buttons.setSpacing(SPACE["s"])
        buttons.addWidget(self.add_folder_button)
        buttons.addWidget(self.remove_folder_button)
        buttons.addStretch(1)
        box.body.addWidget(self.own_folder_label)
        box.body.addWidget(self.folders_list)
        box.body.addLayout(buttons)
        box.body.addWidget(self.folders_message)
        return box

    def _downloads_section(self, concurrency: int, limit_bps: int) -> Section:
        box = Section(
            "Downloads",
            "How downloads from Hugging Face share this machine's connection.",
            self,
            icon_kind="downloads",
        )
        box.setObjectName("downloadsSection")
        self.concurrency_spin = QSpinBox(box)
        self.concurrency_spin.setAccessibleName("Downloads at once")
        self.concurrency_spin.setRange(1, 8)
        self.concurrency_spin.setValue(max(1, min(8, concurrency)))
        self.bandwidth_spin = QSpinBox(box)
        self.bandwidth_spin.setAccessibleName("Bandwidth limit")
        self.bandwidth_spin.setRange(0, 10_000_000)
        self.bandwidth_spin.setSingleStep(512)
        self.bandwidth_spin.setSuffix(" KiB/s")
        self.bandwidth_spin.setSpecialValueText("No limit")
        self.bandwidth_spin.setValue(limit_bps // KIB)
        box.add_row(
            "Downloads at once",
            self.concurrency_spin,
            "Files that download in parallel; the others wait in the queue.",
        )
        box.add_row("Bandwidth limit", self.bandwidth_spin, "For all downloads together.")
        return box

    def _appearance_section(self, theme: str) -> Section:
        box = Section("Appearance", "How Hearth looks.", self, icon_kind="appearance")
        box.setObjectName("appearanceSection")
        self.theme_combo = QComboBox(box)
        self.theme_combo.setAccessibleName("Theme")
        self.theme_combo.addItems([t.capitalize() for t in THEMES])
        self.theme_combo.setCurrentIndex(THEMES.index(theme if theme in THEMES else "system"))
        box.add_row(
            "Theme",
            self.theme_combo,
            "Light, dark, or System: as your desktop is, switching when it does.",
        )
        return box

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        """The section index shows beside the sections only where both fit."""
        self.index_panel.setVisible(event.size().width() >= INDEX_MIN_PAGE_PX)
        super().resizeEvent(event)

    # ------------------------------------------------------------------ values
    def _save_downloads(self) -> None:
        s = self.store.settings
        s.download_concurrency = self.concurrency_spin.value()
        s.bandwidth_limit_bps = self.bandwidth_spin.value() * KIB
        self.store.save()
        self.changed.emit()

    def _save_theme(self) -> None:
        theme = THEMES[max(0, self.theme_combo.currentIndex())]
        self.store.settings.theme = theme
        apply_theme(theme)
        self.store.save()
        self.changed.emit()

    def show_section(self, title: str) -> Section:
        """Scroll to the section called ``title`` and mark it in the index: where a
        message sends the user ("add a token in Settings > Hugging Face account")."""
        row = [section.title() for section in self.sections].index(title)
        self.index.setCurrentRow(row)
        self.index.go_to(row)  # also when it was already the marked one
        return self.sections[row]

    def open_data_folder(self) -> asyncio.Task[bool]:
        return self.folders_box.show_folder("data")

    # ------------------------------------------------------------------ folders
    def refresh_folders(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self._refresh(), name="settings-folders")

    async def _refresh(self) -> None:
        folders = await in_thread(self.library.folders)
        self.folders_list.clear()
        self.folders_list.addItems([str(f) for f in folders])
        self.folders_list.setVisible(bool(folders))
        self.folders_changed.emit()

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a models folder")
        if folder:
            self.add_folder(folder)

    def add_folder(self, folder: str | Path) -> asyncio.Task[None]:
        return self._tasks.spawn(self._add(Path(folder)), name="settings-add-folder")

    async def _add(self, folder: Path) -> None:
        try:
            added = await in_thread(self.library.add_folder, folder)
        except LibraryError as exc:
            self.folders_message.setText(str(exc))
            await self._refresh()
            return
        self.folders_message.setText(f"Added {added}; its models show up in the library.")
        await self._refresh()

    def remove_selected_folder(self) -> asyncio.Task[None] | None:
        item = self.folders_list.currentItem()
        if item is None:
            self.folders_message.setText("Select a folder to remove.")
            return None
        return self._tasks.spawn(self._remove(Path(item.text())), name="settings-remove-folder")

    async def _remove(self, folder: Path) -> None:
        await in_thread(self.library.remove_folder, folder)
        self.folders_message.setText(f"Removed {folder} (its files stay on disk).")
        await self._refresh()
