"""The top bar's model part: the model picker's button, a chip per loaded model, and
Eject.

The picker button says what the worker is doing (starting, loading with its progress,
a crash) and opens the list of models (Ctrl+L). While the worker holds models, each is
a chip (``model_chips.py``: its memory, busy slots, pinned or expiring, its own Eject),
and the button offers to load another; the one Eject (stop the worker, every model)
stays in the Model menu (Ctrl+E). A load beside the others (the Load dialog's "Load
alongside") shows its progress on the button while the chips stay.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QToolButton, QWidget

from hearth.core.residency import LoadedModel
from hearth.supervisor import WorkerState, WorkerStatus
from hearth.ui.shell.model_chips import ModelChips
from hearth.ui.style.icons import icon
from hearth.ui.style.tokens import SPACE, Tokens

log = logging.getLogger(__name__)

STATE_WORDS = {
    WorkerState.STOPPED: "No model loaded",
    WorkerState.STARTING: "Starting",
    WorkerState.LOADING: "Loading",
    WorkerState.READY: "Ready",
    WorkerState.CRASHED: "Crashed",
    WorkerState.ERROR: "Could not load",
}
LOAD_ANOTHER = "Load another model   (Ctrl+L)"


class ModelBar(QWidget):
    """The top bar: the model picker's button, the loaded models' chips, Eject."""

    pick_requested = Signal()
    eject_requested = Signal()
    eject_model = Signal(str)
    """One chip's Eject: unload that model only."""
    use_model = Signal(str)
    """A chip's "Chat with this model"."""
    status_seen = Signal(object)
    """Each worker status shown (``WorkerStatus`` or None)."""

    def __init__(self, tokens: Tokens, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("modelBar")
        self.picker_button = QPushButton(self)
        self.picker_button.setObjectName("modelPickerButton")
        self.picker_button.setAccessibleName("Choose a model")
        self.picker_button.setToolTip("Choose a model to load (Ctrl+L)")
        self.picker_button.clicked.connect(self.pick_requested.emit)
        self.chips = ModelChips(self)
        self.chips.eject_requested.connect(self.eject_model.emit)
        self.chips.use_requested.connect(self.use_model.emit)
        self.eject_button = QToolButton(self)
        self.eject_button.setObjectName("ejectButton")
        self.eject_button.setText("Eject")
        self.eject_button.setAccessibleName("Eject the model")
        self.eject_button.setToolTip("Unload the model and stop its worker (Ctrl+E)")
        self.eject_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.eject_button.clicked.connect(self.eject_requested.emit)
        row = QHBoxLayout(self)
        row.setContentsMargins(SPACE["l"], SPACE["xs"], SPACE["l"], SPACE["xs"])
        row.setSpacing(SPACE["s"])
        row.addStretch(1)
        row.addWidget(self.picker_button, 3)
        row.addWidget(self.chips)
        row.addWidget(self.eject_button)
        row.addStretch(1)
        self._memory = ""
        self._remote: str | None = None  # the chat's remote model (engine/model), if any
        self._status: WorkerStatus | None = None
        self._loaded: tuple[LoadedModel, ...] = ()
        self._side_load: tuple[str, float | None] | None = None
        self.set_tokens(tokens)
        self.set_status(None)

    def set_tokens(self, t: Tokens) -> None:
        self.picker_button.setIcon(icon("model", t))
        self.eject_button.setIcon(icon("eject", t))
        # The two share one line: Eject as tall as the picker, whatever the theme's padding.
        self.eject_button.setFixedHeight(self.picker_button.sizeHint().height())

    def set_memory(self, text: str) -> None:
        self._memory = text
        self.set_status(self._status)

    def set_remote(self, model: str | None) -> None:
        """The chat talks to a remote engine's model (None: to the loaded one)."""
        self._remote = model
        self.set_status(self._status)

    def set_loaded(
        self, models: Sequence[LoadedModel], current: str | None, now: float | None = None
    ) -> None:
        """The worker's loaded models; ``current`` is the chat's (outlined)."""
        self._loaded = tuple(models)
        self.chips.set_models(self._loaded, current, time.time() if now is None else now)
        self.set_status(self._status)

    def set_side_load(self, name: str | None, progress: float | None = None) -> None:
        """A load beside the loaded models: its name and progress (None: none now)."""
        self._side_load = None if name is None else (name, progress)
        self.set_status(self._status)

    def set_status(self, status: WorkerStatus | None) -> None:
        self._status = status
        state = status.state if status is not None else WorkerState.STOPPED
        chips = bool(self._loaded) and state is WorkerState.READY
        if self._side_load is not None and state is WorkerState.READY:
            name, progress = self._side_load
            text = f"{name}  ·  Loading"
            if progress is not None:
                text += f" {round(progress * 100)}%"
        elif self._remote is not None:
            text = f"{self._remote}  ·  Remote"
            if state in (WorkerState.STARTING, WorkerState.CRASHED, WorkerState.ERROR):
                text += f"  ·  {STATE_WORDS[state]}"
        elif chips:
            text = LOAD_ANOTHER
        elif status is None or state is WorkerState.STOPPED or not status.model:
            text = "Select a model to load   (Ctrl+L)"
        else:
            text = f"{status.model}  ·  {STATE_WORDS[state]}"
            if state is WorkerState.LOADING and status.progress is not None:
                text += f" {round(status.progress * 100)}%"
            if state is WorkerState.READY and self._memory:
                text += f"  ·  {self._memory}"
        self.picker_button.setText(text)
        self.chips.setVisible(chips)
        self.eject_button.setVisible(not chips)  # each chip has its own
        self.eject_button.setEnabled(state is not WorkerState.STOPPED)
        self.status_seen.emit(status)
