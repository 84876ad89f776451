"""The main window's model-loading, server, settings and first-run parts.

Kept out of ``main_window.py`` so that file only wires them in: the Load dialog
("Open model…" and the model picker, Ctrl+L, go through it), load Cancel and Eject,
the Server and Settings pages (Ctrl+, shows Settings), Help > Welcome and recommended
models (the first-run window, shown once on first start), and the window's geometry
and splitter sizes saved in Settings.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QByteArray, QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenuBar, QPushButton, QSplitter, QStatusBar, QWidget

from hearth.core.errors import HearthError
from hearth.hub.picks import Pick
from hearth.supervisor import LoadOptions, Supervisor, WorkerOptions, WorkerState, WorkerStatus
from hearth.ui.app_settings import SettingsStore
from hearth.ui.chat.session import ChatController
from hearth.ui.dialogs.load_dialog import LoadDialog, saved_load_options
from hearth.ui.dialogs.load_errors import plain_load_error
from hearth.ui.pages.discover.page import DiscoverPage
from hearth.ui.pages.server.panel import ServerPanel
from hearth.ui.pages.services import AppServices
from hearth.ui.pages.settings.page import SettingsPage
from hearth.ui.shell.crash_recovery import CrashRecovery
from hearth.ui.shell.window_models import WindowModels
from hearth.ui.welcome.first_run import WELCOME_TITLE, FirstRunDialog
from hearth.ui.welcome.quick_start import QuickStart

log = logging.getLogger(__name__)


class ExtrasWindow(Protocol):
    """What these parts use of the main window (which is one); naming only these keeps
    this module and the window out of an import circle."""

    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def chat(self) -> ChatController: ...
    @property
    def services(self) -> AppServices: ...
    @property
    def recovery(self) -> CrashRecovery: ...
    @property
    def discover_page(self) -> DiscoverPage: ...
    @property
    def quick_start(self) -> QuickStart: ...
    @property
    def splitter(self) -> QSplitter: ...
    @property
    def open_action(self) -> QAction: ...
    @property
    def loaded_models(self) -> WindowModels: ...
    def add_page(self, name: str, widget: QWidget, *, scroll: bool = False) -> int: ...
    def open_model_picker(self) -> object: ...
    def show_page(self, name: str) -> object: ...
    def choose_model(self) -> None: ...
    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]: ...
    def open_model(
        self, path: str | Path, options: LoadOptions | None = None
    ) -> asyncio.Task[None]: ...
    def cancel_load(self) -> bool: ...
    # Qt's own names, from QMainWindow
    def menuBar(self) -> QMenuBar: ...  # noqa: N802
    def statusBar(self) -> QStatusBar: ...  # noqa: N802
    def addAction(self, action: QAction) -> None: ...  # noqa: N802
    def restoreGeometry(self, geometry: QByteArray) -> bool: ...  # noqa: N802
    def saveGeometry(self) -> QByteArray: ...  # noqa: N802


class WindowExtras(QObject):
    def __init__(
        self, window: ExtrasWindow, parent: QWidget, store: SettingsStore | None = None
    ) -> None:
        super().__init__(parent)
        self.window = window
        self.widget = parent  # the dialogs' and actions' parent: the window itself
        self.store = store or SettingsStore()
        self.load_dialog: LoadDialog | None = None
        self.first_run: FirstRunDialog | None = None
        self._eject_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ build
    def install(self) -> None:
        """Add the pages, actions and status-bar controls (after the window's own)."""
        w = self.window
        self.server_panel = ServerPanel(w.supervisor, self.store, self.widget)
        self.settings_page = SettingsPage(
            self.store, parent=self.widget, engines_worker=w.chat.model.ensure_worker
        )
        models_box, residents = self.settings_page.models_box, w.loaded_models.residents
        w.supervisor.worker_options = models_box.options()
        models_box.changed.connect(self._worker_options_changed)
        residents.changed.connect(lambda: models_box.show_limits(residents.limits))
        w.add_page("Server", self.server_panel, scroll=True)
        w.add_page("Settings", self.settings_page)

        self.load_action = QAction("&Load model…", self.widget)
        self.load_action.setShortcut(QKeySequence("Ctrl+L"))
        self.load_action.setToolTip("Choose a model to load (Ctrl+L)")
        self.load_action.triggered.connect(w.open_model_picker)
        self.eject_action = QAction("&Eject model", self.widget)
        self.eject_action.setShortcut(QKeySequence("Ctrl+E"))
        self.eject_action.setToolTip("Unload the model and stop its worker")
        self.eject_action.triggered.connect(self.eject)
        self.preferences_action = QAction("Se&ttings", self.widget)
        self.preferences_action.setShortcut(QKeySequence("Ctrl+,"))
        self.preferences_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.preferences_action.triggered.connect(lambda: w.show_page("Settings"))
        self.welcome_action = QAction(f"&{WELCOME_TITLE}", self.widget)
        self.welcome_action.triggered.connect(self.show_first_run)

        model_menu = w.menuBar().addMenu("&Model")
        model_menu.addAction(w.open_action)
        model_menu.addAction(self.load_action)
        model_menu.addAction(self.eject_action)
        w.menuBar().addMenu("&Edit").addAction(self.preferences_action)
        w.menuBar().addMenu("&Help").addAction(self.welcome_action)
        for action in (self.load_action, self.eject_action, self.preferences_action):
            w.addAction(action)  # shortcuts work wherever the focus is
        # Load and Eject are on the top bar's model picker, not the toolbar too.

        self.cancel_load_button = QPushButton("Cancel", self.widget)
        self.cancel_load_button.setObjectName("cancelLoadButton")
        self.cancel_load_button.setAccessibleName("Cancel loading the model")
        self.cancel_load_button.clicked.connect(self.cancel_load)
        self.cancel_load_button.hide()
        w.statusBar().addPermanentWidget(self.cancel_load_button)
        self.restore_window_state()

    def _worker_options_changed(self, options: WorkerOptions) -> None:
        """Settings → Models changed: the next worker starts with them."""
        self.window.supervisor.worker_options = options

    # ------------------------------------------------------------------ status
    def status_changed(self, status: WorkerStatus) -> None:
        loading = status.state in (WorkerState.STARTING, WorkerState.LOADING)
        self.cancel_load_button.setVisible(loading)
        self.eject_action.setEnabled(self.window.supervisor.process is not None or loading)
        self.server_panel.supervisor_changed()

    @staticmethod
    def plain_error(status: WorkerStatus) -> str | None:
        if status.state is WorkerState.ERROR:
            return plain_load_error(status.message)
        return status.message

    # ------------------------------------------------------------------ load
    def saved_options(self, path: str | Path) -> LoadOptions | None:
        return saved_load_options(self.store, path)

    def load_current(self) -> None:
        """Ctrl+L: the Load dialog for the current (or last) model, else pick a file."""
        current = self.window.supervisor.model_path
        last = self.store.settings.last_model_path
        path = current or (Path(last) if last else None)
        if path is not None and path.is_file():
            self.show_load_dialog(path)
        else:
            self.window.choose_model()

    def open_file(self, path: Path) -> asyncio.Task[None]:
        """File > Open: the file joins the library (in place, off the Qt thread), so the
        worker and other clients know it by its library name; then the Load dialog."""
        return self.window.spawn(self._import_then_load(path), name="open-file")

    async def _import_then_load(self, path: Path) -> None:
        services = self.window.services
        try:
            model = await asyncio.to_thread(services.library.import_in_place, path)
        except HearthError as exc:  # not a usable GGUF: the Load dialog says why
            log.info("could not add %s to the library: %s", path, exc)
        else:
            path = model.path
            services.library_changed.emit()
        self.show_load_dialog(path)

    def show_load_dialog(self, path: str | Path) -> LoadDialog:
        """Open the Load dialog for ``path``; confirming it loads the model."""
        if self.load_dialog is not None:
            self.load_dialog.close()
        dialog = LoadDialog(
            path,
            self.store,
            parent=self.widget,
            backend=self.window.services.backend,
            loaded=self.window.loaded_models.snapshot(),
        )
        dialog.accepted.connect(self._load_accepted)
        dialog.finished.connect(self._load_finished)
        self.load_dialog = dialog
        dialog.open()
        return dialog

    def _load_accepted(self) -> None:
        """Load alongside or Replace in the running worker when it holds models (the
        dialog asked which); else a fresh worker for the model."""
        dialog = self.load_dialog
        if dialog is None:
            return
        models = self.window.loaded_models
        if dialog.residents.asking and self.window.supervisor.ready and models.residents.models:
            replace = dialog.residents.replace
            models.load(dialog.model_path, dialog.load_options(), replace=replace)
        else:
            self.window.open_model(dialog.model_path, dialog.load_options())

    def _load_finished(self, _result: int) -> None:
        dialog, self.load_dialog = self.load_dialog, None
        if dialog is not None:
            dialog.deleteLater()

    def cancel_load(self) -> None:
        """Stop a load in progress: the worker being started is stopped."""
        self.window.cancel_load()

    def eject(self) -> asyncio.Task[None]:
        """Unload the model: stop the worker (a load in progress is cancelled)."""
        self.window.recovery.cancel()  # no automatic restart after a crash either
        self.cancel_load()
        self.window.chat.stop()
        self._eject_task = self.window.spawn(self.window.supervisor.stop(), name="eject-model")
        return self._eject_task

    # ------------------------------------------------------------------ first run
    def _open_recommended(self, repo: str, _file: str) -> None:
        """A Welcome card was clicked: show its quantizations in Discover."""
        self.window.show_page("Discover")
        self.window.discover_page.open_model(repo)
        if self.first_run is not None:
            self.first_run.close()

    def _download_recommended(self, pick: Pick) -> None:
        """A card's "Download": the quick start gets that model and loads it, its
        progress on the Chat page (the empty state) and the status bar."""
        self.window.show_page("Chat")
        self.window.quick_start.start(pick)

    def maybe_show_first_run(self) -> FirstRunDialog | None:
        """Show the welcome window if it has never been shown."""
        if self.store.settings.first_run_done:
            return None
        self.store.settings.first_run_done = True
        self.store.save()
        return self.show_first_run()

    def show_first_run(self) -> FirstRunDialog:
        if self.first_run is not None:
            self.first_run.raise_()
            return self.first_run
        dialog = FirstRunDialog(
            backend_probe=self.window.services.backend,
            speed=self.window.discover_page.speed,  # one bandwidth measurement, shared
            parent=self.widget,
        )
        dialog.finished.connect(self._first_run_closed)
        dialog.model_chosen.connect(self._open_recommended)
        dialog.browse_requested.connect(lambda: self.window.show_page("Discover"))
        dialog.download_requested.connect(self._download_recommended)
        self.first_run = dialog
        dialog.show()
        return dialog

    def _first_run_closed(self, _result: int) -> None:
        dialog, self.first_run = self.first_run, None
        if dialog is not None:
            dialog.deleteLater()

    # ------------------------------------------------------------------ window state
    def restore_window_state(self) -> None:
        s = self.store.settings
        if s.window_geometry:
            try:
                raw = base64.b64decode(s.window_geometry.encode())
                self.window.restoreGeometry(QByteArray(raw))
            except ValueError:
                log.info("ignoring an unreadable saved window geometry")
        sizes = s.splitter_sizes.get("chat")
        if sizes and len(sizes) == self.window.splitter.count():
            self.window.splitter.setSizes([int(x) for x in sizes])

    def save_window_state(self) -> None:
        s = self.store.settings
        s.window_geometry = base64.b64encode(bytes(self.window.saveGeometry().data())).decode()
        s.splitter_sizes["chat"] = list(self.window.splitter.sizes())
        self.server_panel.shutdown()
        self.store.save_now()
