"""Settings → "Remote engines": the engines whose models Hearth serves as
``name/model`` (vLLM, llama-server, LM Studio, SGLang, Ollama, another Hearth), with
Add, Edit, Test and Remove.

The list is ``config/engines.py``'s registry, read and written on worker threads
(the keyring can block); the CLI's ``hearth engines`` writes the same file, and a
running worker re-reads it when it changes, so a change applies without a restart.
A test runs in the worker (``EngineDialog``'s ``WorkerSource``): its latency, what
answered and the models found are shown; keys are never shown back.
"""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from hearth.config.engines import EngineConfigError, EngineRegistry, EngineSpec
from hearth.config.secrets import SecretStoreError
from hearth.supervisor import SupervisorError, WorkerError
from hearth.supervisor.engines_api import EngineTest
from hearth.ui.pages.settings.engines_dialog import EngineDialog, WorkerSource, test_summary
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.section import Message, Section

log = logging.getLogger(__name__)

DESCRIPTION = (
    "Models too big for this computer can run on a GPU box or cluster (vLLM, "
    "llama-server, LM Studio, SGLang, Ollama or another Hearth)."
)
EMPTY = (
    "No remote engines yet. Add one by its URL: its models then appear in the model "
    "picker as name/model, and at Hearth's endpoint in every dialect."
)
COLUMNS = ("Name", "Kind", "URL", "Key", "Health")
MAX_TABLE_PX = 180  # about five engines; more scroll


class EnginesBox(Section):
    """The engines table and its buttons; ``engines`` mirrors the registry."""

    def __init__(
        self,
        worker: WorkerSource | None = None,
        parent: QWidget | None = None,
        *,
        registry: EngineRegistry | None = None,
    ) -> None:
        super().__init__("Remote engines", DESCRIPTION, parent, icon_kind="engines")
        self.setObjectName("enginesBox")
        self.registry = registry or EngineRegistry()
        self.worker = worker
        self.engines: tuple[EngineSpec, ...] = ()
        self.health: dict[str, EngineTest] = {}
        self.dialog: EngineDialog | None = None
        self.task: asyncio.Task[None] | None = None  # the last removal
        self._tasks = TaskSet()
        self.empty_label = QLabel(EMPTY, self)
        self.empty_label.setObjectName("enginesEmpty")
        self.empty_label.setProperty("role", "muted")
        self.empty_label.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setAccessibleName("Remote engines")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        header.geometriesChanged.connect(self._fit_table)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.itemDoubleClicked.connect(lambda _item: self.edit_selected())
        self.add_button = QPushButton("Add engine…", self)
        self.add_button.setAccessibleName("Add a remote engine")
        self.add_button.clicked.connect(self.open_add)
        self.edit_button = QPushButton("Edit…", self)
        self.edit_button.setAccessibleName("Edit the selected engine")
        self.edit_button.clicked.connect(self.edit_selected)
        self.test_button = QPushButton("Test", self)
        self.test_button.setAccessibleName("Test the selected engine")
        self.test_button.clicked.connect(self.test_selected)
        self.remove_button = QPushButton("Remove", self)
        self.remove_button.setAccessibleName("Remove the selected engine and its key")
        self.remove_button.clicked.connect(self.remove_selected)
        self.message = Message(self)
        self.message.setObjectName("enginesMessage")
        buttons = QHBoxLayout()
        buttons.setSpacing(SPACE["s"])
        for button in (self.add_button, self.edit_button, self.test_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.body.addWidget(self.empty_label)
        self.body.addWidget(self.table)
        self.body.addLayout(buttons)
        self.body.addWidget(self.message)
        self._show_rows()

    # ------------------------------------------------------------------ the list
    def refresh(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self._refresh(), name="engines-refresh")

    async def _refresh(self) -> None:
        try:
            self.engines = await in_thread(self.registry.engines)
        except EngineConfigError as exc:
            self.engines = ()
            self.message.setText(str(exc))
        self._show_rows()

    def _show_rows(self) -> None:
        selected = self.selected()
        self.table.setRowCount(len(self.engines))
        for row, spec in enumerate(self.engines):
            result = self.health.get(spec.name)
            cells = (spec.name, spec.kind.value, spec.url, "yes" if spec.has_key else "no",
                     test_summary(result) if result else "not tested")  # fmt: skip
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(row, column, item)
            if selected is not None and spec.name == selected.name:
                self.table.selectRow(row)
        empty = not self.engines
        self.empty_label.setVisible(empty)
        self.table.setVisible(not empty)
        self._fit_table()
        if self.add_button.property("primary") != empty:  # the next step when there is none
            self.add_button.setProperty("primary", empty)
            self.add_button.style().unpolish(self.add_button)
            self.add_button.style().polish(self.add_button)
        if self.engines and self.table.currentRow() < 0:
            self.table.selectRow(0)
        self._selection_changed()

    def _fit_table(self) -> None:
        """As tall as its rows, up to about five. Runs again when the header's size
        changes: a table shown for the first time measures its header only then."""
        rows = self.table.verticalHeader().length()
        header = self.table.horizontalHeader().sizeHint().height()
        frame = 2 * self.table.frameWidth()
        self.table.setFixedHeight(min(MAX_TABLE_PX, header + rows + frame))

    def selected(self) -> EngineSpec | None:
        row = self.table.currentRow()
        return self.engines[row] if 0 <= row < len(self.engines) else None

    def select(self, name: str) -> None:
        for row, spec in enumerate(self.engines):
            if spec.name == name:
                self.table.selectRow(row)

    def _selection_changed(self) -> None:
        chosen = self.selected() is not None
        for button in (self.edit_button, self.test_button, self.remove_button):
            button.setEnabled(chosen)

    # ------------------------------------------------------------------ actions
    def open_add(self) -> EngineDialog:
        return self._open(None)

    def edit_selected(self) -> EngineDialog | None:
        spec = self.selected()
        return self._open(spec) if spec is not None else None

    def _open(self, editing: EngineSpec | None) -> EngineDialog:
        dialog = EngineDialog(self.registry, self.worker, self, editing=editing)
        dialog.saved.connect(self._saved)
        self.dialog = dialog
        dialog.open()
        return dialog

    def _saved(self, name: str) -> None:
        self.message.setText(f"Saved engine '{name}'; its models are listed as {name}/….")
        self.health.pop(name, None)
        self._tasks.spawn(self._after_save(name), name="engines-saved")

    async def _after_save(self, name: str) -> None:
        await self._refresh()
        self.select(name)
        if self.worker is not None:
            await self._test(name)

    def test_selected(self) -> asyncio.Task[None] | None:
        spec = self.selected()
        if spec is None:
            return None
        return self._tasks.spawn(self._test(spec.name), name="engines-test")

    async def _test(self, name: str) -> None:
        if self.worker is None:
            self.message.setText("Tests run in Hearth's worker, which is not available here.")
            return
        self.message.setText(f"Testing '{name}'…")
        try:
            result = await (await self.worker()).engines.test_saved(name)
        except (WorkerError, SupervisorError) as exc:
            self.message.setText(f"Could not test '{name}': {getattr(exc, 'message', exc)}")
            return
        self.health[name] = result
        self._show_rows()
        models = ", ".join(m.id for m in result.models[:6])
        more = f" and {len(result.models) - 6} more" if len(result.models) > 6 else ""
        found = f": {models}{more}" if result.ok and models else ""
        self.message.setText(f"{name}: {test_summary(result)}{found}")

    def remove_selected(self) -> QMessageBox | None:
        """Ask first (the engine's stored key goes too); ``task`` runs the removal."""
        spec = self.selected()
        if spec is None:
            return None
        ask = QMessageBox(
            QMessageBox.Icon.Question,
            "Remove engine",
            f"Remove engine '{spec.name}' and its stored key? Its models leave the model "
            "picker and Hearth's endpoint; chats with them stay.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        ask.setDefaultButton(QMessageBox.StandardButton.Cancel)
        yes = ask.button(QMessageBox.StandardButton.Yes)
        yes.setText("Remove")
        yes.clicked.connect(lambda: self._confirmed(spec.name))
        ask.open()
        return ask

    def _confirmed(self, name: str) -> None:
        self.task = self._tasks.spawn(self._remove(name), name="engines-remove")

    async def _remove(self, name: str) -> None:
        try:
            await in_thread(self.registry.remove, name)
        except (EngineConfigError, SecretStoreError) as exc:
            self.message.setText(f"Not removed: {getattr(exc, 'message', None) or exc}")
            return
        self.health.pop(name, None)
        self.message.setText(f"Removed engine '{name}' and its stored key.")
        await self._refresh()
