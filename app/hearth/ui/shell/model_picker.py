"""The model picker: the top bar's model (status, memory) with Eject, and the
searchable list of library models with fit chips it opens (Ctrl+L), followed by the
remote engines' models (``engine/model``).

Choosing a library model asks for the Load dialog (``chosen``), as Library's Load does.
The list is read off the Qt thread (``Library.models()`` scans files), then each
model's fit for this machine is judged from its header, also on a worker thread, as
Library's chips are (``library_rows.estimates``): with the draft model the model's
saved Load-dialog choices name, since loading it brings that draft along.
Remote models come from the worker's ``/v1/models`` (it asks the engines); choosing
one needs no loading: the chat talks to it through the worker (``ChatModel``).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from hearth.config.engines import EngineConfigError, EngineRegistry
from hearth.core.units import format_bytes
from hearth.hardware.speed import active_fraction
from hearth.library import LocalModel
from hearth.supervisor import SupervisorError, WorkerError
from hearth.ui.app_settings import SettingsStore
from hearth.ui.chat.model import ChatModel
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.library.rows import estimates
from hearth.ui.pages.services import AppServices
from hearth.ui.shell.model_bar import ModelBar
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.fit_chip import FitChip, chip_for_estimate

log = logging.getLogger(__name__)

REMOTE_ROLE = Qt.ItemDataRole.UserRole + 1  # a remote row's model id (engine/model)


class ModelPicker(QDialog):
    """The searchable list; ``chosen`` carries the model file to load."""

    chosen = Signal(Path)
    remote_chosen = Signal(str)

    def __init__(
        self,
        services: AppServices,
        speed: MachineSpeed,
        tasks: TaskSet,
        parent: QWidget,
        *,
        store: SettingsStore | None = None,
    ) -> None:
        """``store`` holds the Load dialog's saved choices (default: the settings store
        ``speed`` keeps the bandwidth in, which is the app's one store)."""
        super().__init__(parent)
        self.setObjectName("modelPicker")
        self.setWindowTitle("Choose a model")
        self.setAccessibleName("Choose a model to load")
        self.resize(560, 420)
        self.services, self.speed, self._tasks = services, speed, tasks
        self.store = store if store is not None else speed.store
        self.models: list[LocalModel] = []
        self.remote_models: list[str] = []
        self.chat_model: ChatModel | None = None
        self.search = QLineEdit(self)
        self.search.setObjectName("modelSearch")
        self.search.setPlaceholderText("Search your models…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._filter)
        self.search.installEventFilter(self)
        self.list = QListWidget(self)
        self.list.setObjectName("modelList")
        self.list.setAccessibleName("Models in your library")
        self.list.itemActivated.connect(self._activate)
        self.list.itemClicked.connect(self._activate)
        self.note = QLabel(self)
        self.note.setObjectName("pickerNote")
        self.note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.note)
        self.loaded: asyncio.Task[None] | None = None

    def open_list(self) -> asyncio.Task[None]:
        """Show the dialog and (re)read the library."""
        self.search.clear()
        self.open()
        self.search.setFocus()
        self.loaded = self._tasks.spawn(self._load(), name="model-picker")
        return self.loaded

    def attach_remote(self, chat_model: ChatModel, bar: ModelBar) -> None:
        """List the remote engines' models too; choosing one sets ``chat_model``'s
        remote model (shown in ``bar``), choosing a library model clears it."""
        self.chat_model = chat_model
        chat_model.remote_changed.connect(bar.set_remote)
        bar.status_seen.connect(chat_model.on_status)
        self.chosen.connect(lambda _path: chat_model.use_remote(None))

    async def _load(self) -> None:
        self.note.setText("Reading your library…")
        models = await asyncio.to_thread(self.services.library.models)
        self.models = [m for m in models if m.kind == "model"]
        self.remote_models = []
        self.list.clear()
        for model in self.models:
            self._add_row(model)
        self._filter(self.search.text())
        self.note.setText(
            "Pick one: the Load dialog follows (GPU layers, context)."
            if self.models
            else "No models yet: Discover has picks that fit this computer."
        )
        await asyncio.gather(self._judge_fit(), self._load_remote())

    async def _judge_fit(self) -> None:
        try:
            system = await self.services.system()
            bandwidth = await self.speed.bandwidth(system)
            models = self.models
            fits = await asyncio.to_thread(estimates, models, system, self.store)
        except Exception:  # the chips are a hint: the list stays usable without them
            log.exception("could not judge the models' fit")
            return
        if models is not self.models:
            return  # the list was read again meanwhile: its own judging fills the chips
        for row, (model, est) in enumerate(zip(models, fits, strict=True)):
            chip = self.chip(row)
            if chip is None:
                continue
            if est is None:
                chip.set_unknown("Unknown", model.error or "")
            elif model.metadata is not None:
                chip.set_chip(chip_for_estimate(est, bandwidth, active_fraction(model.metadata)))

    async def _load_remote(self) -> None:
        """The engines' models, through the worker (one is started, without a local
        model, when none runs: remote models are served by it)."""
        if self.chat_model is None or not await in_thread(_have_engines):
            return
        note = self.note.text()
        self.note.setText(f"{note} Asking your remote engines…")
        try:
            client = await self.chat_model.ensure_worker()
            metas = await client.model_meta()
        except (WorkerError, SupervisorError) as exc:
            self.note.setText(f"{note} Remote engines: {getattr(exc, 'message', exc)}")
            return
        self.remote_models = [m.id for m in metas if m.remote]
        for model_id in self.remote_models:
            self._add_remote_row(model_id)
        self._filter(self.search.text())
        found = (
            "Remote models (engine/model) need no loading."
            if self.remote_models
            else "Your remote engines answered with no models (see Settings → Engines)."
        )
        self.note.setText(f"{note} {found}")

    def _add_remote_row(self, model_id: str) -> None:
        item = QListWidgetItem(self.list)
        item.setData(REMOTE_ROLE, model_id)
        item.setData(Qt.ItemDataRole.AccessibleTextRole, f"{model_id}, remote")
        row = QWidget(self.list)
        line = QHBoxLayout(row)
        line.setContentsMargins(SPACE["s"], SPACE["xs"], SPACE["s"], SPACE["xs"])
        name = QLabel(model_id, row)
        name.setObjectName("pickerModelName")
        where = QLabel("Remote · " + model_id.split("/", 1)[0], row)
        where.setObjectName("pickerModelSize")
        line.addWidget(name, 1)
        line.addWidget(where)
        item.setSizeHint(row.sizeHint())
        self.list.setItemWidget(item, row)

    def _add_row(self, model: LocalModel) -> None:
        item = QListWidgetItem(self.list)
        item.setData(Qt.ItemDataRole.UserRole, str(model.path))
        item.setData(Qt.ItemDataRole.AccessibleTextRole, model.name)
        row = QWidget(self.list)
        line = QHBoxLayout(row)
        line.setContentsMargins(SPACE["s"], SPACE["xs"], SPACE["s"], SPACE["xs"])
        name = QLabel(model.name, row)
        name.setObjectName("pickerModelName")
        size = QLabel(format_bytes(model.size_bytes), row)
        size.setObjectName("pickerModelSize")
        line.addWidget(name, 1)
        line.addWidget(size)
        line.addWidget(FitChip(row))
        item.setSizeHint(row.sizeHint())
        self.list.setItemWidget(item, row)

    def chip(self, row: int) -> FitChip | None:
        item = self.list.item(row)
        widget = self.list.itemWidget(item) if item is not None else None
        return widget.findChild(FitChip) if widget is not None else None

    def _names(self) -> list[str]:
        """Each row's name, in row order: library models, then remote ones."""
        return [m.name for m in self.models] + self.remote_models

    def visible_names(self) -> list[str]:
        names = self._names()
        return [names[i] for i in range(self.list.count()) if not self.list.item(i).isHidden()]

    def _filter(self, text: str) -> None:
        words = text.lower().split()
        first: int | None = None
        hays = [f"{m.name} {m.id}".lower() for m in self.models] + [
            m.lower() for m in self.remote_models
        ]
        for i, hay in enumerate(hays):
            hidden = not all(w in hay for w in words)
            self.list.item(i).setHidden(hidden)
            if not hidden and first is None:
                first = i
        if first is not None:
            self.list.setCurrentRow(first)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        """Up/Down move in the list and Enter chooses, while typing in the search."""
        if watched is self.search and event.type() == QEvent.Type.KeyPress:
            assert isinstance(event, QKeyEvent)
            if event.key() in (Qt.Key.Key_Up, Qt.Key.Key_Down):
                self.list.keyPressEvent(event)
                return True
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                item = self.list.currentItem()
                if item is not None and not item.isHidden():
                    self._activate(item)
                return True
        return super().eventFilter(watched, event)

    def _activate(self, item: QListWidgetItem) -> None:
        remote = item.data(REMOTE_ROLE)
        if remote and self.chat_model is not None:
            self.accept()
            self.chat_model.use_remote(str(remote))
            self.remote_chosen.emit(str(remote))
            return
        path = item.data(Qt.ItemDataRole.UserRole)
        if path:
            self.accept()
            self.chosen.emit(Path(path))


def _have_engines() -> bool:
    """Whether any remote engine is registered (a bad engines file counts as none)."""
    try:
        return bool(EngineRegistry().engines())
    except EngineConfigError as exc:
        log.warning("remote engines: %s", exc)
        return False
