"""Whether the chat's model sees images, and what to get when it doesn't.

The attach button says it in its tooltip; clicked (or an image dropped or pasted) with
a model that can't see, it opens a small popover instead of the file dialog, naming
the best vision model for this machine from Discover's picks (``hub.picks.best_fit``
over the picks marked ``vision``: the same rule and estimate as Discover's chips),
with one button that opens it in Discover. A model sees when the worker's
``/v1/models`` says ``meta.vision`` (it was loaded with a projector); a remote
engine's model never does here (the worker refuses images for it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, QPoint, Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from hearth.hardware import SystemMemory
from hearth.hardware.speed import Bandwidth
from hearth.hub.picks import Pick, best_fit, default_picks
from hearth.supervisor import WorkerError, WorkerState, WorkerStatus
from hearth.ui.chat.model import ChatModel
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)

ATTACH_TIP = "Attach images (or drop or paste them into the message box)"
NO_MODEL_TIP = "Attach images; load a vision model to send them"


@dataclass(frozen=True)
class VisionState:
    """``sees``: True, False, or None while no model is chosen (or it is unknown)."""

    sees: bool | None = None
    model: str | None = None
    pick: Pick | None = None  # the vision pick to offer when it doesn't see

    def blind_text(self) -> str:
        """What the button and its popover say when the model can't see."""
        who = self.model or "This model"
        text = f"{who} can't see images: it was loaded without a vision projector."
        if self.pick is not None:
            return f"{text} {self.pick.name} sees them and fits this computer."
        return f"{text} Discover lists vision models (their cards say Vision)."

    def tooltip(self) -> str:
        if self.sees is False:
            return self.blind_text()
        return ATTACH_TIP if self.sees else NO_MODEL_TIP


class VisionPopover(QFrame):
    """The small popup under the attach button: why not, and the pick to get."""

    discover_requested = Signal(str)
    """A repo to open in Discover ("" for Discover's first page)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent, Qt.WindowType.Popup)
        self.setObjectName("visionPopover")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setMaximumWidth(360)
        col = QVBoxLayout(self)
        col.setContentsMargins(SPACE["m"], SPACE["m"], SPACE["m"], SPACE["m"])
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setAccessibleName("Why images can't be sent")
        self.button = QPushButton(self)
        self.button.setProperty("primary", True)
        self.button.clicked.connect(self._open)
        col.addWidget(self.label)
        col.addWidget(self.button, 0, Qt.AlignmentFlag.AlignLeft)
        self._repo = ""

    def show_for(self, state: VisionState, under: QWidget) -> None:
        self.label.setText(state.blind_text())
        self._repo = state.pick.repo if state.pick is not None else ""
        self.button.setText(
            f"Open {state.pick.name} in Discover" if state.pick else "Open Discover"
        )
        self.adjustSize()
        corner = under.mapToGlobal(QPoint(0, 0))
        self.move(corner.x(), corner.y() - self.sizeHint().height() - SPACE["xs"])
        self.show()

    def _open(self) -> None:
        self.hide()
        self.discover_requested.emit(self._repo)


class AttachButton(QToolButton):
    """The composer's attach button; ``pick_files`` when the model sees (or no model is
    loaded yet), else the popover."""

    pick_files = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("attachButton")
        self.setAccessibleName("Attach images")
        self.setAutoRaise(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.state = VisionState()
        self.popover = VisionPopover(self)
        self.setToolTip(self.state.tooltip())
        self.clicked.connect(self._clicked)

    def set_state(self, state: VisionState) -> None:
        self.state = state
        self.setToolTip(state.tooltip())

    @property
    def blind(self) -> bool:
        return self.state.sees is False

    def explain(self) -> None:
        """Show why images can't go to this model, and what to get."""
        self.popover.show_for(self.state, self)

    def _clicked(self) -> None:
        if self.blind:
            self.explain()
        else:
            self.pick_files.emit()


class VisionHint(QObject):
    """Finds out whether the chat's model sees, on each worker status and model choice;
    ``changed`` carries a :class:`VisionState`."""

    changed = Signal(object)

    def __init__(
        self,
        model: ChatModel,
        system: Callable[[], Awaitable[SystemMemory]],
        bandwidth: Callable[[SystemMemory], Awaitable[Bandwidth]],
        tasks: TaskSet,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._model = model
        self._system = system
        self._bandwidth = bandwidth
        self._tasks = tasks
        self._pick: tuple[Pick | None] | None = None  # found once per run
        self.task: asyncio.Task[None] | None = None
        self.state = VisionState()
        self._asked: tuple[object, str | None] | None = None  # (client, model) last asked
        model.remote_changed.connect(lambda _m: self.refresh())

    def on_status(self, status: WorkerStatus | None) -> None:
        """Ask again when a model is ready or gone; once per worker and model (each
        question is a ``GET /v1/models`` in the Server page's request log)."""
        client = self._model.supervisor.client
        ready = status is not None and status.state is WorkerState.READY
        key = (client, self._model.model_id) if ready else None
        if key != self._asked:
            self._asked = key
            self.refresh()

    def refresh(self) -> asyncio.Task[None]:
        """Ask again; a question still in flight is cancelled (its answer is stale), so
        none is left waiting on a worker that is going away when the window closes."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.task = self._tasks.spawn(self._update(), name="chat-vision")
        return self.task

    async def _update(self) -> None:
        model = self._model.model_id
        supervisor = self._model.supervisor
        # Only a ready worker is asked: one starting or stopping may never answer.
        ready = supervisor.status.state is WorkerState.READY
        client = supervisor.client if ready else None
        sees: bool | None = None
        if self._model.remote is not None:
            sees = False  # the worker refuses images for a remote engine's model
        elif client is not None and model is not None:
            try:
                metas = await client.model_meta()
                sees = metas[0].vision if metas and not metas[0].remote else None
            except WorkerError as exc:
                log.info("no model metadata for vision: %s", exc)
        pick = await self.best_pick() if sees is False else None
        self.state = VisionState(sees, model, pick)
        self.changed.emit(self.state)

    async def best_pick(self) -> Pick | None:
        """The largest vision pick that fits this machine with room (None if none)."""
        if self._pick is None:
            system = await self._system()
            bandwidth = await self._bandwidth(system)
            picks = [p for p in default_picks().picks if p.vision]
            self._pick = (best_fit(picks, system, bandwidth),)
        return self._pick[0]
