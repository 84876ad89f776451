"""One row of the Downloads page: a card per download, with the actions its state allows.

The file's name over its repo (both elided in the middle, whole in the tooltip), the
buttons on the right, a progress bar while bytes are still coming, one muted line of
numbers (state, bytes, speed, time left) and, after a failure, the reason in the
theme's danger colour. A finished download has Load (the primary action) and Show in
folder; a running one Pause and Cancel; a paused one Resume; a failed one Retry.
What a click does is the page's (``RowActions``).
"""

from __future__ import annotations

import logging
from typing import Protocol

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QProgressBar, QPushButton, QVBoxLayout

from hearth.core.units import format_bytes, format_duration
from hearth.hub import DownloadEvent, DownloadState
from hearth.ui.pages.common import button
from hearth.ui.style.tokens import SPACE
from hearth.ui.widgets.page_style import ElidedLabel, IconButton, StatusLabel

log = logging.getLogger(__name__)

STATE_WORDS = {
    DownloadState.QUEUED: "Waiting",
    DownloadState.RUNNING: "Downloading",
    DownloadState.RETRYING: "Connection lost, retrying",
    DownloadState.VERIFYING: "Checking the file",
    DownloadState.PAUSED: "Paused",
    DownloadState.COMPLETED: "Done",
    DownloadState.FAILED: "Failed",
    DownloadState.CANCELLED: "Cancelled",
}


class RowActions(Protocol):
    """What a row's buttons ask of the page, by download id."""

    def pause(self, download_id: int) -> None: ...
    def resume(self, download_id: int) -> None: ...
    def cancel(self, download_id: int) -> None: ...
    def load(self, download_id: int) -> None: ...
    def show_folder(self, download_id: int) -> None: ...


def detail_text(event: DownloadEvent) -> str:
    """ "Downloading · 1.2 GiB of 4.7 GiB · 21 MiB/s · 3 min left", "Done · ... · checked"."""
    state = event.state
    parts = [STATE_WORDS[state]]
    if event.total:
        parts.append(f"{format_bytes(event.bytes_done)} of {format_bytes(event.total)}")
    elif event.bytes_done:
        parts.append(format_bytes(event.bytes_done))
    if state is DownloadState.RUNNING and event.speed_bps > 0:  # none yet: say nothing
        parts.append(f"{format_bytes(event.speed_bps)}/s")
        if event.eta_s is not None:
            parts.append(f"{format_duration(event.eta_s)} left")
    if state is DownloadState.COMPLETED:
        parts.append("checked")  # sha256 verified before the file was put in place
    return " · ".join(parts)


class DownloadRow(QFrame):
    """One download: name and repo, its buttons, progress bar, numbers and error."""

    def __init__(self, page: RowActions, event: DownloadEvent) -> None:
        super().__init__()
        self.download_id = event.download_id
        self.last = event
        self.setProperty("section", True)  # the stylesheet's card without a hover
        self.setObjectName("downloadRow")
        self.setAccessibleName(f"Download of {event.filename}")
        self.name_label = ElidedLabel(event.filename, self)
        self.name_label.setProperty("role", "subtitle")
        self.repo_label = ElidedLabel(event.repo_id, self)
        self.repo_label.setProperty("role", "muted")
        self.bar = QProgressBar(self)
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)  # the numbers are in the line below
        self.bar.setMaximumHeight(SPACE["s"])
        self.bar.setAccessibleName(f"Progress of {event.filename}")
        self.detail_label = ElidedLabel("", self)
        self.detail_label.setProperty("role", "muted")
        self.error_label = StatusLabel(self, accessible=f"Error of {event.filename}")
        did, name = event.download_id, event.filename
        self.load_button = IconButton("load", f"Load {name}", lambda: page.load(did), "Load")
        self.load_button.set_primary(True)
        self.folder_button = IconButton(
            "open", f"Show {name} in its folder", lambda: page.show_folder(did), "Show in folder"
        )
        self.pause_button = button("Pause", f"Pause {name}", lambda: page.pause(did))
        self.resume_button = button("Resume", f"Resume {name}", lambda: page.resume(did))
        self.resume_button.setProperty("primary", True)
        self.retry_button = IconButton("regenerate", f"Retry {name}", lambda: page.resume(did),
                                       "Retry")  # fmt: skip
        self.cancel_button = button("Cancel", f"Cancel {name}", lambda: page.cancel(did))
        words = QVBoxLayout()
        words.setContentsMargins(0, 0, 0, 0)
        words.setSpacing(SPACE["xs"])
        words.addWidget(self.name_label)
        words.addWidget(self.repo_label)
        top = QHBoxLayout()
        top.setSpacing(SPACE["s"])
        top.addLayout(words, 1)
        for btn in self.buttons:
            top.addWidget(btn, 0, Qt.AlignmentFlag.AlignVCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE["l"], SPACE["m"], SPACE["l"], SPACE["m"])
        layout.setSpacing(SPACE["s"])
        layout.addLayout(top)
        layout.addWidget(self.bar)
        layout.addWidget(self.detail_label)
        layout.addWidget(self.error_label)
        self.update_from(event)

    @property
    def buttons(self) -> list[QPushButton]:
        return [
            self.load_button,
            self.folder_button,
            self.resume_button,
            self.retry_button,
            self.pause_button,
            self.cancel_button,
        ]

    def update_from(self, event: DownloadEvent) -> None:
        self.last = event
        state = event.state
        fraction = event.fraction
        if fraction is None and state.active:
            self.bar.setRange(0, 0)  # size unknown: a busy indicator
        else:
            self.bar.setRange(0, 1000)
            done = state is DownloadState.COMPLETED
            self.bar.setValue(1000 if done else round((fraction or 0.0) * 1000))
        # A finished or cancelled download has no progress left to show.
        self.bar.setVisible(not state.finished or state is DownloadState.FAILED)
        self.detail_label.set_full_text(detail_text(event))
        self.detail_label.setToolTip(str(event.dest))  # Show in folder opens it
        self.detail_label.setAccessibleName(f"Status of {event.filename}")
        self.error_label.say(event.error or "", error=True)
        self.pause_button.setVisible(state is DownloadState.QUEUED or state.active)
        self.resume_button.setVisible(state is DownloadState.PAUSED)
        self.retry_button.setVisible(state is DownloadState.FAILED)
        self.cancel_button.setVisible(not state.finished or state is DownloadState.FAILED)
        done = state is DownloadState.COMPLETED
        self.load_button.setVisible(done)
        self.folder_button.setVisible(done)
