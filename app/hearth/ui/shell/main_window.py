"""The main window: open a model, see the worker's state, chat.

Layout: the conversation list (search, new, rename, delete, export) on the left, the
chat in the middle, the chat's settings (system prompt, preset, sampling) on the
right. All worker and store I/O runs as asyncio tasks on the qasync loop or on the
store's own thread; slots only start tasks. A model loads one at a time
(``model_loads.ModelLoads``). Closing the window stops the worker first
(asynchronously, ``window_close.WindowClose``), then really closes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QResizeEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QMainWindow,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from hearth.chats import AsyncChatStore
from hearth.config.paths import default_paths
from hearth.supervisor import LoadOptions, Supervisor, WorkerState
from hearth.ui.chat.image_hint import VisionHint
from hearth.ui.chat.panels import COMPACT_WIDTH, ChatPanels
from hearth.ui.chat.session import ChatController
from hearth.ui.chat.settings_panel import ChatSettingsPanel
from hearth.ui.chat.sidebar import ChatSidebar
from hearth.ui.chat.turns import ChatSettings
from hearth.ui.chat.view import ChatView
from hearth.ui.pages.discover.page import DiscoverPage
from hearth.ui.pages.downloads.page import DownloadsPage
from hearth.ui.pages.library.page import LibraryPage
from hearth.ui.pages.services import AppServices
from hearth.ui.shell.crash_recovery import CrashRecovery
from hearth.ui.shell.model_bar import ModelBar
from hearth.ui.shell.model_loads import ModelLoads
from hearth.ui.shell.model_picker import ModelPicker
from hearth.ui.shell.page_rail import PageRail
from hearth.ui.shell.top_bar import TopBar
from hearth.ui.shell.window_close import WindowClose
from hearth.ui.shell.window_extras import WindowExtras
from hearth.ui.shell.window_models import WindowModels
from hearth.ui.shell.window_status import WindowStatus
from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import Tokens
from hearth.ui.tasks import TaskSet
from hearth.ui.welcome.quick_start import QuickStart

log = logging.getLogger(__name__)


class _StatusBridge(QObject):
    """Delivers supervisor status callbacks as a Qt signal (safe from any thread)."""

    changed = Signal(object)


class MainWindow(QMainWindow):
    closed = Signal()
    """Emitted once the window has really closed (after the worker stopped)."""

    # Built by helpers after __init__'s first lines; declared for the parts that read them.
    discover_page: DiscoverPage
    panels: ChatPanels

    def __init__(
        self,
        *,
        log_dir: Path | None = None,
        load_options: LoadOptions | None = None,
        chat_settings: ChatSettings | None = None,
        start_timeout: float = 120.0,
        chats_db: Path | None = None,
        services: AppServices | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Hearth")
        self.resize(1200, 760)
        self.tokens: Tokens = tokens_for(self.palette())
        self.load_options = load_options
        self._tasks = TaskSet()
        self.closer = WindowClose(self, self._tasks, self.closed.emit)
        self._bridge = _StatusBridge(self)
        self.supervisor = Supervisor(
            on_status=self._bridge.changed.emit, log_dir=log_dir, start_timeout=start_timeout
        )

        # The store opens (migrations, recovery of interrupted replies) on its own thread.
        self.chats_db = AsyncChatStore(chats_db or default_paths().chats_db)
        self.services = services or AppServices(parent=self)  # Discover/Downloads/Library
        # Load dialog, Server and Settings pages, first run, window state, shortcuts.
        self.extras = WindowExtras(self, self)
        self.recovery = CrashRecovery(self._auto_restart, parent=self)
        self.chat_view = ChatView(self)
        self.chat = ChatController(
            self.chat_view, self.supervisor, self._tasks, chat_settings, db=self.chats_db
        )
        self.loads = ModelLoads(self.supervisor, self.chat, self._tasks)
        self.sidebar = ChatSidebar(self.chats_db, self.chat, self._tasks, self)
        self.settings_panel = ChatSettingsPanel(self.chats_db, self.chat, self._tasks, self)
        self.status_view = WindowStatus(self, self._tasks, self)  # banner, status bar, meter
        self.banner, self.banner_label = self.status_view.banner, self.status_view.banner_label
        self.restart_button = self.status_view.restart_button
        self.status_label, self.progress_bar = self.status_view.label, self.status_view.progress_bar
        central = QWidget(self)
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.banner)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, central)
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(self.chat_view)
        self.splitter.addWidget(self.settings_panel)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([240, 700, 260])
        # An explicit minimum: the side panels' widths must not hold the window wide
        # (under ~1000 px they fold, see ChatPanels; a resize comes before that).
        self.splitter.setMinimumWidth(400)
        layout.addWidget(self.splitter, 1)
        central.setFocusProxy(self.chat_view.input)  # showing Chat puts the cursor there
        self._build_pages(central)
        self._build_actions()
        self.loaded_models = WindowModels(self, self._tasks, self)  # chips, one-model Eject
        self.extras.install()
        self.status_view.install()
        self._bridge.changed.connect(self.status_view.show)
        self._bridge.changed.connect(self.loaded_models.on_status)
        self.chat_view.load_model_requested.connect(self._empty_load)
        # "Get a recommended model", with Discover's bandwidth measurement
        self.quick_start = QuickStart(self, self.discover_page.speed, self._tasks, self)
        self.chat_view.recommended_requested.connect(self.quick_start.start)
        self.quick_start.status.connect(self.chat_view.empty_state.text_label.setText)
        self.quick_start.status.connect(self.status_label.setText)
        self.chat_view.empty_changed.connect(self.panels.set_empty)
        # Whether the chat's model sees images; if not, the vision pick that fits here.
        speed = self.discover_page.speed
        self.vision = VisionHint(
            self.chat.model, self.services.system, speed.bandwidth, self._tasks, self
        )
        self.vision.changed.connect(self.chat_view.composer.set_vision)
        self._bridge.changed.connect(self.vision.on_status)
        self.chat_view.composer.discover_requested.connect(self.open_in_discover)
        self.pages.currentChanged.connect(self._page_changed)
        self.panels.set_empty(self.chat_view.showing_empty_state)
        self.refresh_icons()
        self.status_view.show(self.supervisor.status)
        QTimer.singleShot(0, self._load_history)

    def _load_history(self) -> None:
        self.sidebar.refresh()
        self.settings_panel.load_presets()

    # ------------------------------------------------------------------ pages
    def _build_pages(self, chat_page: QWidget) -> None:
        """A navigation list on the left; the pages (Chat first) in a stack."""
        self.pages = QStackedWidget(self)
        self.nav = PageRail(self.pages, self.tokens, self)
        self.model_bar = ModelBar(self.tokens, self)  # the model picker, on every page
        self.top_bar = TopBar(self.model_bar, self)  # actions, panel toggles, picker
        shell = QWidget(self)
        row = QHBoxLayout(shell)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(self.nav)
        column = QVBoxLayout()
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.top_bar)
        column.addWidget(self.pages, 1)
        row.addLayout(column, 1)
        self.setCentralWidget(shell)
        self.add_page("Chat", chat_page)
        self.discover_page = DiscoverPage(self.services, self._tasks, self, store=self.extras.store)
        self.downloads_page = DownloadsPage(self.services, self._tasks, self)
        self.library_page = LibraryPage(
            self.services, self._tasks, self, speed=self.discover_page.speed
        )
        self.model_picker = ModelPicker(self.services, self.discover_page.speed, self._tasks, self)
        self.model_picker.chosen.connect(self._load_from_library)
        self.model_picker.attach_remote(self.chat.model, self.model_bar)  # engine/model
        self.model_bar.pick_requested.connect(self.open_model_picker)
        self.model_bar.eject_requested.connect(self.extras.eject)
        self.add_page("Discover", self.discover_page)
        self.add_page("Downloads", self.downloads_page)
        self.add_page("Library", self.library_page)
        for page in (self.library_page, self.downloads_page, self.discover_page):
            page.load_requested.connect(self._load_from_library)  # via the Load dialog
        self.downloads_page.active_changed.connect(lambda n: self.nav.set_badge("Downloads", n))
        for page in (self.library_page, self.downloads_page, self.discover_page):
            page.recommended_requested.connect(self.extras.show_first_run)
        for page in (self.library_page, self.downloads_page):
            page.discover_requested.connect(lambda: self.show_page("Discover"))
        self.nav.setCurrentRow(0)
        QTimer.singleShot(0, self._start_pages)

    def add_page(self, name: str, widget: QWidget, *, scroll: bool = False) -> int:
        """Append a page to the rail (e.g. "Server", "Settings"); its index. Ctrl+N
        shows the Nth page. ``scroll``: a tall page scrolls (see ``PageRail``)."""
        index = self.nav.add_page(name, widget, scroll=scroll)
        if index < 9:
            action = QAction(f"Show {name}", self)
            action.setShortcut(QKeySequence(f"Ctrl+{index + 1}"))
            action.triggered.connect(lambda _checked=False, n=name: self.show_page(n))
            self.addAction(action)
        return index

    def show_page(self, name: str) -> QWidget:
        """Switch to the page called ``name``; returns its widget."""
        return self.nav.show_page(name)

    def open_in_discover(self, repo: str) -> None:
        """Show Discover, on ``repo``'s page when one is named."""
        self.show_page("Discover")
        if repo:
            self.discover_page.open_model(repo)

    def page_names(self) -> list[str]:
        return self.nav.page_names()

    # ------------------------------------------------------------------ look
    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            tokens = tokens_for(self.palette())
            if tokens is not self.tokens:
                self.tokens = tokens
                self.refresh_icons()
        super().changeEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.panels.window_resized(self.width())
        self.top_bar.set_compact(self.width() < COMPACT_WIDTH)

    def refresh_icons(self) -> None:
        """Icons are tinted for the theme: (re)make them for the current one."""
        t = self.tokens
        self.nav.set_tokens(t)
        self.model_bar.set_tokens(t)
        actions = {
            "open": self.open_action,
            "new_chat": self.new_chat_action,
            "chats": self.chats_action,
            "chat_settings": self.settings_action,
            "load": self.extras.load_action,
            "eject": self.extras.eject_action,
            "settings": self.extras.preferences_action,
        }
        for kind, action in actions.items():
            action.setIcon(icon(kind, t))

    def _page_changed(self, index: int) -> None:
        self.top_bar.show_chat_tools(index == 0)  # Chat is the first page

    def _empty_load(self) -> None:
        """The empty state's "Load a model you have": the Load dialog for the last
        model when there is one, else the Library (with its own next steps)."""
        last = self.extras.store.settings.last_model_path
        if last and Path(last).is_file():
            self.extras.load_current()
        else:
            self.show_page("Library")

    def open_model_picker(self) -> asyncio.Task[None]:
        """Ctrl+L, or the top bar: the searchable list of your models."""
        return self.model_picker.open_list()

    def _start_pages(self) -> None:
        if not self.services.closed:  # unfinished downloads from the last run, paused
            self._tasks.spawn(self.downloads_page.restore(), name="restore-downloads")

    def _load_from_library(self, path: Path) -> None:
        """Load from Library, Downloads or Discover: the Load dialog; loading shows Chat."""
        dialog = self.extras.show_load_dialog(path)
        dialog.accepted.connect(lambda: self.show_page("Chat"))

    # ------------------------------------------------------------------ build
    def _build_actions(self) -> None:
        self.open_action = QAction("&Open model…", self)
        self.open_action.setShortcut(QKeySequence.StandardKey.Open)
        self.open_action.triggered.connect(self.choose_model)
        self.new_chat_action = QAction("&New chat", self)
        self.new_chat_action.setShortcut(QKeySequence.StandardKey.New)
        self.new_chat_action.triggered.connect(self.chat.new_chat)
        self.search_action = QAction("&Search chats", self)
        self.search_action.setShortcut(QKeySequence("Ctrl+K"))
        self.search_action.triggered.connect(self.sidebar.focus_search)
        self.panels = ChatPanels(self, self.sidebar, self.settings_panel)
        self.chats_action = self.panels.chats_action
        self.settings_action = self.panels.settings_action
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(self.open_action)
        file_menu.addAction(self.new_chat_action)
        file_menu.addAction(self.search_action)
        file_menu.addSeparator()
        file_menu.addAction(quit_action)
        self.top_bar.add_actions(
            [self.open_action, self.new_chat_action], [self.chats_action, self.settings_action]
        )
        self.addAction(self.search_action)  # Ctrl+K works wherever the focus is

    # ------------------------------------------------------------------ model
    def choose_model(self) -> None:
        """Pick a GGUF file; the Load dialog for it follows (File > Open, Ctrl+O)."""
        path, _ = QFileDialog.getOpenFileName(
            self, "Open model", "", "GGUF models (*.gguf);;All files (*)"
        )
        if path:  # into the library first, then the Load dialog (loads on confirm)
            self.extras.open_file(Path(path))

    def open_model(
        self, path: str | Path, options: LoadOptions | None = None
    ) -> asyncio.Task[None]:
        """Load ``path`` in a fresh worker (replacing any current one).

        Options: ``options``, else the window's, else those last chosen for this model.
        """
        chosen = options or self.load_options or self.extras.saved_options(path)
        self.recovery.cancel()
        return self.loads.start(Path(path), chosen)

    @property
    def loading(self) -> bool:
        """Whether a load (or the wait for a previous one) is in progress."""
        return self.loads.loading

    def cancel_load(self) -> bool:
        """Stop a load in progress (the worker being started is stopped); False if none."""
        return self.loads.cancel()

    def eject_all(self) -> asyncio.Task[None]:
        """Unload every model: stop the worker (Ctrl+E, or the last model's Eject)."""
        return self.extras.eject()

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run ``coro`` as one of the window's tasks (cancelled when the window closes)."""
        return self._tasks.spawn(coro, name=name)

    def restart_worker(self) -> asyncio.Task[None] | None:
        """The banner's Restart: after a crash, bring back every model the worker held;
        after a failed load (Retry), relaunch with that model."""
        if self.supervisor.model_path is None:
            return None
        if self.supervisor.status.state is WorkerState.CRASHED:
            self.recovery.cancel()
            return self.loads.restart()
        return self.open_model(self.supervisor.model_path, self.supervisor.options)

    def _auto_restart(self) -> None:
        """After a crash (see CrashRecovery): the same restart, keeping its banner."""
        if self.supervisor.model_path is None or self.closer.closing:
            return
        self.loads.restart()

    # ------------------------------------------------------------------ close
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        """Stop the worker, MCP servers and downloads first (``WindowClose``)."""
        self.closer.close_event(event)
