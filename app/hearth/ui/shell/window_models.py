"""The window's loaded models: the chips in the top bar, the chat's choice among them,
Eject of one model, and a load beside the others (the Load dialog's "Load alongside"
or "Replace").

Kept out of ``main_window.py`` (which wires it in) and ``window_extras.py`` (the Load
dialog and the whole-worker Eject): this part owns the window's copy of what the worker
holds (``Residents``) and hands it to the bar, the chat and the Load dialog.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QLabel, QWidget

from hearth.core.residency import LoadedModel
from hearth.supervisor import LoadOptions, Supervisor, WorkerError, WorkerStatus
from hearth.supervisor.client import ResidencyStatus
from hearth.ui.chat.session import ChatController
from hearth.ui.shell.model_bar import ModelBar
from hearth.ui.shell.model_loads import ModelLoads
from hearth.ui.shell.residents import Residents
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)


class ModelsWindow(Protocol):
    """What this part uses of the main window (which is one)."""

    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def chat(self) -> ChatController: ...
    @property
    def model_bar(self) -> ModelBar: ...
    @property
    def loads(self) -> ModelLoads: ...
    @property
    def status_label(self) -> QLabel: ...
    def eject_all(self) -> asyncio.Task[None]: ...


class WindowModels(QObject):
    def __init__(self, window: ModelsWindow, tasks: TaskSet, parent: QWidget) -> None:
        super().__init__(parent)
        self.window = window
        self._tasks = tasks
        self.residents = Residents(window.supervisor, tasks, self)
        self._loading: str | None = None  # a load beside the others, while it runs
        self.residents.changed.connect(self._show)
        window.chat.model.local_changed.connect(lambda _id: self._show())
        window.model_bar.eject_model.connect(self.eject)
        window.model_bar.use_model.connect(window.chat.model.use_local)

    def on_status(self, status: WorkerStatus) -> None:
        self.residents.on_status(status)

    def snapshot(self) -> ResidencyStatus | None:
        """The loaded models for the Load dialog (None: no worker holds any)."""
        models = self.residents.models
        return ResidencyStatus(models, self.residents.limits) if models else None

    def _show(self) -> None:
        chat = self.window.chat.model
        ids = self.residents.ids
        chat.set_loaded(ids)
        self.window.model_bar.set_loaded(self.residents.models, chat.local_id)
        if ids and self.window.supervisor.ready and not self._loading:  # names them all
            self.window.status_label.setText(f"Ready: {', '.join(ids)}")

    # ------------------------------------------------------------------ eject
    def eject(self, model_id: str) -> asyncio.Task[None]:
        """Unload ``model_id`` only; the last one loaded stops the worker, as Eject does."""
        if self.residents.ids == [model_id]:
            return self.window.eject_all()
        return self._tasks.spawn(self._unload(model_id), name="eject-one")

    async def _unload(self, model_id: str) -> None:
        if self.window.supervisor.client is None:
            return
        if self.window.chat.model.model_id == model_id:
            self.window.chat.stop()  # its reply would end with an error anyway
        try:
            await self.window.supervisor.unload(model_id)  # not brought back after a crash
        except WorkerError as exc:
            self.window.status_label.setText(f"Could not eject {model_id}: {exc.message}")
        await self.residents.refresh()

    # ------------------------------------------------------------------ load
    def load(self, path: Path, options: LoadOptions, *, replace: bool) -> asyncio.Task[None]:
        """Load ``path`` into the running worker, alongside or instead of its models."""
        return self.window.loads.start_beside(path, options, replace=replace, listener=self)

    def load_progress(self, name: str | None, progress: float | None) -> None:
        self._loading = name
        self.window.model_bar.set_side_load(name, progress)
        if name is not None:
            pct = "" if progress is None else f" {round(progress * 100)}%"
            self.window.status_label.setText(f"Loading {name}…{pct}")

    def load_done(self, loaded: LoadedModel) -> None:
        self.window.status_label.setText(f"Ready: {loaded.info.id}")
        self.window.chat.model.use_local(loaded.info.id)  # the chat talks to it now
        self.residents.refresh()

    def load_failed(self, name: str, message: str) -> None:
        self.window.status_label.setText(f"Could not load {name}: {message}")
        self.residents.refresh()
