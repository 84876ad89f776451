"""The Library page: local models with their metadata; import, delete, quantize, load.

A table of ``Library.models()`` (scanned in a thread) under the page's header (the
count and size, or what just happened; import a file in place, add a folder), and
per-row Load / Open folder / Delete. Load opens the Load dialog (``load_requested``;
the main window shows it). Each model has chips for what its header says it can do
(tools, reasoning, fill-in-middle, embedding) and a fit chip for this machine at a 4K
context, with its estimated speed (``ui.fit_chip``). How a row looks is
``library_rows.py``, the table drawing the rows ``library_table.py``; the "Found on
this disk" section (other apps' GGUFs, to import) is ``library_found.py``; quantizing
is ``quantize_panel.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from hearth.core.errors import HearthError
from hearth.core.units import format_bytes
from hearth.library import DiscoveredModel, Library, LocalModel, ModelSource, discover_all
from hearth.library.capabilities import Capability
from hearth.library.quantize_job import JobState, QuantizeJob
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.common import button, button_cell, plural
from hearth.ui.pages.library.found import FoundPanel
from hearth.ui.pages.library.quantize_panel import QuantizePanel, output_path
from hearth.ui.pages.library.rows import (
    COLUMNS,
    NARROW_BELOW,
    CapabilityChips,
    capabilities_of,
    estimates,
)
from hearth.ui.pages.library.table import LibraryTable
from hearth.ui.pages.services import AppServices
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.widgets.empty_state import CardSpec, EmptyState
from hearth.ui.widgets.fit_chip import FitChip
from hearth.ui.widgets.page_style import IconButton, PageHeader, page_layout

log = logging.getLogger(__name__)
__all__ = ["COLUMNS", "LibraryPage"]


def _message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, HearthError) else str(exc)


def _listing(library: Library) -> tuple[list[LocalModel], list[tuple[Capability, ...]]]:
    """The models and what each can do (both read from disk and headers: a thread's work)."""
    models = library.models()
    return models, capabilities_of(models)


class LibraryPage(QWidget):
    load_requested = Signal(object)  # Path of the model's first file
    recommended_requested = Signal()  # the empty state's "Get a recommended model"
    discover_requested = Signal()  # the empty state's "Find models on Hugging Face"

    def __init__(
        self,
        services: AppServices,
        tasks: TaskSet,
        parent: QWidget | None = None,
        *,
        discover: Callable[[], list[DiscoveredModel]] = discover_all,
        speed: MachineSpeed | None = None,
    ) -> None:
        """``speed`` is the shared bandwidth measurement (Discover's), for the chips."""
        super().__init__(parent)
        self.speed = speed or MachineSpeed()
        self.services = services
        self._tasks = tasks
        self.models: list[LocalModel] = []
        self._refresh_task: asyncio.Task[None] | None = None
        self.scanned_once = False

        self.refresh_button = IconButton("regenerate", "Refresh the library", self.refresh)
        self.import_button = IconButton("open", "Import a GGUF file", self._choose_file,
                                        "Import file…")  # fmt: skip
        self.folder_button = IconButton("folders", "Add a models folder", self._choose_folder,
                                        "Add folder…")  # fmt: skip
        self.open_dir_button = IconButton(
            "disk", "Open the models folder", self.open_models_folder, "Open folder"
        )
        self.header = PageHeader("Library", self)
        for btn in (self.import_button, self.folder_button, self.open_dir_button,
                    self.refresh_button):  # fmt: skip
            self.header.add_action(btn)
        self.status = self.header.subtitle  # the count, or what just happened
        self.status.setAccessibleName("Library status")
        self.table = LibraryTable(self)
        self.empty_state = EmptyState(
            "libraryEmptyState",
            "Your library is empty",
            "Models you download or import show up here, ready to load.",
            [
                CardSpec(
                    "libraryRecommendedCard",
                    "recommended",
                    "Get a recommended model",
                    "Picks that fit this computer's memory.",
                    self.recommended_requested.emit,
                ),
                CardSpec(
                    "libraryImportCard",
                    "open",
                    "Import a GGUF file",
                    "Use a model already on this disk, where it is.",
                    self._choose_file,
                ),
                CardSpec(
                    "libraryDiscoverCard",
                    "discover",
                    "Find models",
                    "Search Hugging Face for GGUF models.",
                    self.discover_requested.emit,
                ),
            ],
            self,
        )
        self.empty_state.hide()
        self.quantize = QuantizePanel(tasks, self)
        self.quantize.start_button.clicked.connect(self._quantize_selected)
        self.quantize.finished.connect(self._quantized)
        self.found_panel = FoundPanel(discover, self)
        self.found_panel.import_requested.connect(self.import_found)
        self.found_panel.scan_requested.connect(self.scan_disk)
        self.found_table = self.found_panel.table
        self.scan_button = self.found_panel.scan_button
        self.found_status = self.found_panel.status

        page = page_layout(self)
        page.addWidget(self.header)
        page.addWidget(self.table, 1)
        page.addWidget(self.empty_state, 1)
        page.addWidget(self.quantize)
        page.addSpacing(SPACE["m"])
        page.addWidget(self.found_panel)
        page.addStretch(0)  # under a short library
        services.library_changed.connect(self.refresh)

    # ------------------------------------------------------------------ scanning
    def refresh(self) -> asyncio.Task[None]:
        """Re-list the library in a thread; the table updates when it is done."""
        if self._refresh_task is not None and not self._refresh_task.done():
            self._refresh_task.cancel()
        self._refresh_task = self._tasks.spawn(self._refresh(), name="library-refresh")
        return self._refresh_task

    async def _refresh(self) -> None:
        try:
            models, capabilities = await asyncio.to_thread(_listing, self.services.library)
        except Exception as exc:
            self.status.say(f"Could not list the library: {_message(exc)}", error=True)
            return
        self.models = models
        self.table.fill(models, capabilities, self._actions)
        problem = self.services.library.index_problem()
        size = format_bytes(sum(m.size_bytes for m in models))
        count = f"{plural(len(models), 'model')} · {size} on disk"
        broken = sum(1 for m in models if m.error)
        if broken:
            count += f" · {broken} can't load (hover the red chip for why)"
        self.status.say(problem or (count if models else "No models yet."), error=bool(problem))
        empty = not models and not problem
        self.empty_state.setVisible(empty)
        self.table.setVisible(not empty)
        self.quantize.setVisible(not empty)
        await self._judge(models)  # the fit chips, last: the table is usable meanwhile

    def _actions(self, model: LocalModel) -> QWidget:
        """Load (the row's main action, first), then its folder and Delete as icons."""
        load = button("Load", f"Load {model.name}", partial(self.load_model, model))
        load.setProperty("primary", True)
        usable = model.ok and model.kind == "model"
        load.setEnabled(usable)
        if not usable:
            load.setToolTip(model.error or "Not a chat model: embeddings and projectors load "
                            "with the model that uses them.")  # fmt: skip
        folder = IconButton("open", f"Open the folder of {model.name}",
                            partial(self.open_folder, model))  # fmt: skip
        delete = IconButton("delete", f"Delete {model.name}", partial(self.delete_model, model))
        return button_cell(load, folder, delete)

    async def _judge(self, models: list[LocalModel]) -> None:
        """Each model's fit chip, from its header, for this machine (off the Qt thread)."""
        try:
            system = await self.services.system()
            bandwidth = await self.speed.bandwidth(system)
            fits = await asyncio.to_thread(estimates, models, system, self.speed.store)
        except Exception:
            log.exception("could not judge the library's models for this machine")
            return
        if models is not self.models:
            return  # a newer refresh replaced the table
        self.table.show_fit(fits, bandwidth)

    def fit_chip(self, row: int) -> FitChip | None:
        return self.table.fit_chip(row)

    def capability_chips(self, row: int) -> CapabilityChips | None:
        return self.table.capability_chips(row)

    def scan_disk(self) -> asyncio.Task[None]:
        """Look for GGUFs of other apps (LM Studio, Ollama, HF cache...) in a thread."""
        self.scanned_once = True
        return self._tasks.spawn(self._scan_disk(), name="discover-models")

    async def _scan_disk(self) -> None:
        await self.found_panel.scan({str(m.path.resolve()) for m in self.models})

    @property
    def found(self) -> list[DiscoveredModel]:
        return self.found_panel.found

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.table.show_columns(self.width() < NARROW_BELOW)

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if not self.scanned_once:
            self.refresh()
            self.scan_disk()

    # ------------------------------------------------------------------ import
    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Import a model", "", "GGUF models (*.gguf);;All files (*)"
        )
        if path:
            self.import_file(Path(path))

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a models folder")
        if folder:
            self.add_folder(Path(folder))

    def import_file(
        self, path: Path, *, name: str | None = None, origin: str | None = None
    ) -> asyncio.Task[None]:
        """Add a file that stays where it is."""
        lib = self.services.library
        return self._run(
            lambda: lib.import_in_place(path, name=name, origin=origin), f"Imported {path.name}"
        )

    def import_found(self, found: DiscoveredModel) -> asyncio.Task[None]:
        return self.import_file(found.path, name=found.name, origin=found.app)

    def add_folder(self, folder: Path) -> asyncio.Task[None]:
        return self._run(lambda: self.services.library.add_folder(folder), f"Added {folder}")

    def _run(self, work: Callable[[], object], done_text: str) -> asyncio.Task[None]:
        async def go() -> None:
            try:
                await asyncio.to_thread(work)
            except Exception as exc:
                self.status.say(_message(exc), error=True)
                return
            await self._refresh()
            if not self.status.error:  # an index problem stays said
                self.status.say(f"{done_text} · {self.status.text()}")
            if self.found:
                await self._scan_disk()

        return self._tasks.spawn(go(), name="library-change")

    # ------------------------------------------------------------------ actions
    def model_named(self, name: str) -> LocalModel | None:
        return next((m for m in self.models if name in (m.name, m.id, m.path.name)), None)

    def load_model(self, model: LocalModel) -> None:
        self.load_requested.emit(model.path)

    def folder_url(self, model: LocalModel) -> QUrl:
        return QUrl.fromLocalFile(str(model.path.parent))

    def open_folder(self, model: LocalModel) -> None:
        QDesktopServices.openUrl(self.folder_url(model))

    def open_models_folder(self) -> None:
        self.services.paths.models_dir.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.services.paths.models_dir)))

    def delete_model(
        self, model: LocalModel, *, confirmed: bool = False
    ) -> asyncio.Task[None] | None:
        """Delete (Hearth's own files) or forget (imports, folders) ``model``, after
        asking unless ``confirmed``. Returns the task doing it, or None if declined."""
        if not confirmed:
            owned = model.source is ModelSource.HEARTH
            what = "delete its file from disk" if owned else "remove it from the library " \
                "(the file stays where it is)"  # fmt: skip
            answer = QMessageBox.question(
                self, "Delete model", f"Really {what}?\n\n{model.name}",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No,
            )  # fmt: skip
            if answer != QMessageBox.StandardButton.Yes:
                return None
        return self._run(lambda: self.services.library.delete(model), f"Removed {model.name}")

    # ------------------------------------------------------------------ quantize
    def selected_model(self) -> LocalModel | None:
        rows = self.table.selectionModel().selectedRows()
        return self.models[rows[0].row()] if rows and rows[0].row() < len(self.models) else None

    def _quantize_selected(self) -> None:
        model = self.selected_model()
        if model is None:
            self.quantize.status.setText("Select a model in the table first.")
            return
        self.quantize_model(model, self.quantize.type_combo.currentText())

    def quantize_model(self, model: LocalModel, qtype: str) -> QuantizeJob | None:
        dst = output_path(model, qtype, self.services.paths.models_dir)
        if dst.exists():
            self.quantize.status.setText(f"{dst.name} already exists.")
            return None
        job = self.quantize.start(model, qtype, dst)
        return job

    def _quantized(self, job: QuantizeJob) -> None:
        if job.state is JobState.DONE:
            self.refresh()
