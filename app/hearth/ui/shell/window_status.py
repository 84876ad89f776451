"""How the main window shows the worker's state: the status bar (text, load progress,
the RAM/VRAM/CPU meter), the top bar's model picker button, and the crash/error banner
with Restart.

What could not come back after a crash stays in the worker's status until the user's
next load, eject or stop (``Supervisor.restart``), so the banner saying it has a
Dismiss button once the reloads are over: it hides that account of the reloads (the
``Recovery`` value) for good; another crash's reloads are said again.

Kept out of ``main_window.py``, which only forwards the supervisor's status here (on
the Qt thread, through its bridge signal).
"""

from __future__ import annotations

import logging
from typing import Protocol

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QStatusBar,
    QWidget,
)

from hearth.core.units import format_bytes
from hearth.supervisor import Supervisor, WorkerState, WorkerStatus
from hearth.supervisor.recovery import Recovery
from hearth.ui.chat.session import ChatController
from hearth.ui.chat.view import ChatView
from hearth.ui.shell.crash_recovery import CrashRecovery, recovery_text
from hearth.ui.shell.model_bar import ModelBar
from hearth.ui.shell.status_meter import Sample, StatusMeter
from hearth.ui.shell.window_extras import WindowExtras
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)


class StatusWindow(Protocol):
    """What the status view reads and drives in the main window (which is one); naming
    only these keeps this module and the window out of an import circle."""

    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def model_bar(self) -> ModelBar: ...
    @property
    def chat_view(self) -> ChatView: ...
    @property
    def chat(self) -> ChatController: ...
    @property
    def extras(self) -> WindowExtras: ...
    @property
    def recovery(self) -> CrashRecovery: ...
    def statusBar(self) -> QStatusBar: ...  # noqa: N802 (Qt's name)
    def restart_worker(self) -> object: ...


class WindowStatus(QObject):
    banner_shown = Signal(str)
    """The banner's text, each time a status shows it (a crash, the reloads, an error)."""

    def __init__(self, window: StatusWindow, tasks: TaskSet, parent: QWidget) -> None:
        super().__init__(parent)
        self.window = window
        self.banner = QFrame(parent)
        self.banner.setObjectName("workerBanner")
        self.banner.setFrameShape(QFrame.Shape.StyledPanel)  # coloured by style/qss.py
        self.banner_label = QLabel(self.banner)
        self.banner_label.setWordWrap(True)
        self.restart_button = QPushButton("Restart", self.banner)
        self.restart_button.setObjectName("restartButton")
        self.restart_button.clicked.connect(window.restart_worker)
        self.dismiss_button = QPushButton("Dismiss", self.banner)
        self.dismiss_button.setObjectName("dismissBannerButton")
        self.dismiss_button.setToolTip("Hide this message")
        self.dismiss_button.clicked.connect(self._dismiss)
        self.dismiss_button.hide()
        self._shown: Recovery | None = None  # the finished reloads the banner says
        self._dismissed: Recovery | None = None  # those the user dismissed
        row = QHBoxLayout(self.banner)
        row.addWidget(self.banner_label, 1)
        row.addWidget(self.restart_button)
        row.addWidget(self.dismiss_button)
        self.banner.hide()
        self.label = QLabel(parent)
        self.label.setObjectName("workerStatus")
        self.progress_bar = QProgressBar(parent)
        self.progress_bar.setRange(0, 100)
        self.progress_bar.setMaximumWidth(160)
        self.progress_bar.hide()
        self.meter = StatusMeter(self._worker_pid, tasks, parent)
        self.meter.sampled.connect(self._sampled)

    def install(self) -> None:
        """Put the status bar's parts in place (after the window's own widgets)."""
        bar = self.window.statusBar()
        bar.addWidget(self.label, 1)
        bar.addPermanentWidget(self.meter)
        bar.addPermanentWidget(self.progress_bar)

    def _worker_pid(self) -> int | None:
        process = self.window.supervisor.process
        return process.pid if process is not None else None

    def _sampled(self, sample: Sample) -> None:
        self.window.model_bar.set_memory(format_bytes(sample.worker_rss))

    def show(self, status: WorkerStatus) -> None:
        w = self.window
        state = status.state
        model = status.model or "remote engines"  # a worker with no local model serves them
        text = {
            WorkerState.STOPPED: "No model loaded",
            WorkerState.STARTING: f"Starting worker for {model}…",
            WorkerState.LOADING: "Loading model…",
            WorkerState.READY: f"Ready: {model}",
            WorkerState.CRASHED: "The model worker crashed",
            WorkerState.ERROR: "Could not load the model",
        }[state]
        if state is WorkerState.LOADING and status.progress is not None:
            pct = round(status.progress * 100)
            text = f"Loading model… {pct}%"
            self.progress_bar.setValue(pct)
        self.progress_bar.setVisible(state is WorkerState.LOADING)
        self.label.setText(text)
        if state is not WorkerState.READY:
            w.model_bar.set_memory("")
        w.model_bar.set_status(status)
        self.meter.set_active(state is WorkerState.READY)
        recovery = status.recovery
        # A chat whose model is still on its way back waits for it (it keeps its model).
        waiting = recovery is not None and w.chat.model.local in recovery.pending
        w.chat_view.set_can_send(state is WorkerState.READY and not waiting)
        w.extras.status_changed(status)
        note = w.recovery.on_status(state)
        reloads = self._reloads_text(recovery)
        self._shown = None
        if reloads and state is not WorkerState.CRASHED:  # the reloads after a crash
            self.banner_label.setText(reloads)
            self.restart_button.hide()
            self.banner.show()
            if recovery is not None and recovery.pending:
                self.label.setText(reloads)
            else:  # over: what could not come back is said until the user dismisses it
                self._shown = recovery
        elif state in (WorkerState.CRASHED, WorkerState.ERROR):
            message = w.extras.plain_error(status) or text
            self.banner_label.setText(f"{message.rstrip('.')}. {note}" if note else message)
            self.restart_button.setText("Restart" if state is WorkerState.CRASHED else "Retry")
            self.restart_button.show()  # during the short wait: restart now
            self.banner.show()
        elif note:  # coming back after a crash: say so until the model is ready
            self.banner_label.setText(f"The model worker crashed. {note}")
            self.restart_button.hide()
            self.banner.show()
        else:
            self.banner.hide()
        self.dismiss_button.setVisible(self._shown is not None)
        if not self.banner.isHidden():
            self.banner_shown.emit(self.banner_label.text())

    def _reloads_text(self, recovery: Recovery | None) -> str | None:
        """What the banner says of the reloads after a crash (None: nothing, or only
        what the user dismissed)."""
        if recovery is None or not recovery.done:
            self._dismissed = None  # new reloads, or none: said again
            return recovery_text(recovery) if recovery is not None else None
        return None if recovery == self._dismissed else recovery_text(recovery)

    def _dismiss(self) -> None:
        """The banner's Dismiss: the finished reloads' account is not shown again."""
        self._dismissed, self._shown = self._shown, None
        self.dismiss_button.hide()
        self.banner.hide()
