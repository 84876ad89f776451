"""The Downloads page: one live row per download, with pause, resume, cancel and retry.

A finished download has Load (the Load dialog, through ``load_requested``) and Show
in folder. While downloads run, ``active_changed`` says how many, for the rail's badge.

Rows are repainted from a 10 Hz timer off the latest event per download, however
often events arrive. Unfinished downloads found on disk at start are listed paused
(``DownloadManager.restore(start=False)``) so they survive a restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget

from hearth.hub import DownloadEvent, DownloadState
from hearth.hub.sidecar import part_path, read_sidecar
from hearth.ui.pages.common import button
from hearth.ui.pages.downloads.row import DownloadRow
from hearth.ui.pages.services import AppServices
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.widgets.empty_state import CardSpec, EmptyState
from hearth.ui.widgets.page_style import PageHeader, page_layout

log = logging.getLogger(__name__)

REPAINT_MS = 100
SUMMARY_ORDER = ("downloading", "paused", "failed", "finished", "cancelled")  # the header's
UrlOpener = Callable[[QUrl], object]


def _with_disk_progress(event: DownloadEvent) -> DownloadEvent:
    """``event`` with the size of its ``.part`` and the expected total (blocking)."""
    side = read_sidecar(event.dest)
    try:
        done = part_path(event.dest).stat().st_size
    except OSError:
        done = 0
    total = side.size if side is not None else event.total
    return replace(event, bytes_done=done, total=total)


class DownloadsPage(QWidget):
    discover_requested = Signal()  # the empty state's "Find a model"
    recommended_requested = Signal()  # the empty state's "Get a recommended model"
    load_requested = Signal(object)  # Path of a finished download, for the Load dialog
    active_changed = Signal(int)  # downloads waiting or running (the rail's badge)

    def __init__(
        self,
        services: AppServices,
        tasks: TaskSet,
        parent: QWidget | None = None,
        *,
        opener: UrlOpener | None = None,
    ) -> None:
        """``opener`` opens a folder URL (default: the file manager; tests record it)."""
        super().__init__(parent)
        self.services = services
        self._tasks = tasks
        self._opener: UrlOpener = opener or QDesktopServices.openUrl
        self.active_count = 0
        self.rows: dict[int, DownloadRow] = {}
        self._pending: dict[int, DownloadEvent] = {}
        self.restored = False
        self.empty_label = EmptyState(
            "downloadsEmptyState",
            "No downloads yet",
            "Downloads resume after a dropped connection or a restart, and are checked before use.",
            [
                CardSpec(
                    "downloadsRecommendedCard",
                    "recommended",
                    "Get a recommended model",
                    "Picks that fit this computer's memory.",
                    self.recommended_requested.emit,
                ),
                CardSpec(
                    "downloadsDiscoverCard",
                    "discover",
                    "Find a model",
                    "Search Hugging Face, then pick a quantization.",
                    self.discover_requested.emit,
                ),
            ],
            self,
        )
        container = QWidget()
        self._rows_layout = QVBoxLayout(container)
        self._rows_layout.setContentsMargins(0, 0, SPACE["xs"], 0)  # room for the scroll bar
        self._rows_layout.setSpacing(SPACE["s"])
        self._rows_layout.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)  # the rows are cards: no box around
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # rows fit
        scroll.setWidget(container)
        scroll.setAccessibleName("Downloads")
        self.clear_button = button(
            "Clear finished", "Clear finished downloads", self.clear_finished
        )
        self.clear_button.setToolTip("Remove finished and cancelled downloads from this list")
        self.header = PageHeader("Downloads", self)
        self.header.add_action(self.clear_button)
        layout = page_layout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.empty_label, 1)
        layout.addWidget(scroll, 1)
        self._scroll = scroll
        scroll.hide()
        self._summarize()
        self._timer = QTimer(self)
        self._timer.setInterval(REPAINT_MS)
        self._timer.timeout.connect(self._flush)
        services.download_event.connect(self._on_event)

    # ------------------------------------------------------------------ startup
    async def restore(self) -> None:
        """List unfinished downloads from the last run, paused, with the bytes already
        on disk (the manager's snapshot of a restored download starts at 0)."""
        if self.restored:
            return
        try:
            handles = self.services.downloads.restore(start=False)
        except Exception:
            log.exception("could not restore the unfinished downloads")
            return
        self.restored = True
        events = [h.snapshot() for h in handles]
        events = await asyncio.to_thread(lambda: [_with_disk_progress(e) for e in events])
        for event in events:
            if self.services.downloads.get(event.download_id).state is event.state:
                self._on_event(event)
        self._flush()

    # ------------------------------------------------------------------ commands
    def pause(self, download_id: int) -> None:
        self.services.downloads.pause(download_id)

    def resume(self, download_id: int) -> None:
        """Resume a paused download, or retry a failed one from where it stopped."""
        self.services.downloads.resume(download_id)

    def cancel(self, download_id: int) -> None:
        self.services.downloads.cancel(download_id)

    def load(self, download_id: int) -> None:
        """A finished download's Load: the Load dialog for its file."""
        row = self.rows.get(download_id)
        if row is not None and row.last.state is DownloadState.COMPLETED:
            self.load_requested.emit(row.last.dest)

    def show_folder(self, download_id: int) -> None:
        row = self.rows.get(download_id)
        if row is not None:
            self._opener(QUrl.fromLocalFile(str(row.last.dest.parent)))

    def clear_finished(self) -> None:
        for did, row in list(self.rows.items()):
            if row.last.state in (DownloadState.COMPLETED, DownloadState.CANCELLED):
                self._rows_layout.removeWidget(row)
                row.deleteLater()
                del self.rows[did]
        self.empty_label.setVisible(not self.rows)
        self._scroll.setVisible(bool(self.rows))
        self._summarize()

    # ------------------------------------------------------------------ events
    def _on_event(self, event: DownloadEvent) -> None:
        self._pending[event.download_id] = event
        if event.state is not DownloadState.RUNNING or event.download_id not in self.rows:
            self._flush()  # state changes show at once; byte counts at the timer's pace
        elif not self._timer.isActive():
            self._timer.start()

    def _flush(self) -> None:
        pending, self._pending = self._pending, {}
        if not pending:
            self._timer.stop()
            return
        for did, event in pending.items():
            row = self.rows.get(did)
            if row is None:
                row = DownloadRow(self, event)
                self.rows[did] = row
                self._rows_layout.insertWidget(self._rows_layout.count() - 1, row)
            else:
                row.update_from(event)
        self.empty_label.setVisible(not self.rows)
        self._scroll.setVisible(bool(self.rows))
        self._count_active()
        self._summarize()

    def _summarize(self) -> None:
        """The header's line ("1 downloading · 2 finished") and Clear finished, which
        is there only when it has something to clear."""
        counts = dict.fromkeys(SUMMARY_ORDER, 0)
        for row in self.rows.values():
            state = row.last.state
            word = ("downloading" if state is DownloadState.QUEUED or state.active
                    else "finished" if state is DownloadState.COMPLETED
                    else state.value.lower())  # fmt: skip
            counts[word] = counts.get(word, 0) + 1
        said = [f"{n} {word}" for word, n in counts.items() if n]
        self.header.set_subtitle(" · ".join(said))
        clearable = any(
            r.last.state in (DownloadState.COMPLETED, DownloadState.CANCELLED)
            for r in self.rows.values()
        )
        self.clear_button.setVisible(bool(self.rows))
        self.clear_button.setEnabled(clearable)

    def _count_active(self) -> None:
        active = sum(
            1
            for row in self.rows.values()
            if row.last.state is DownloadState.QUEUED or row.last.state.active
        )
        if active != self.active_count:
            self.active_count = active
            self.active_changed.emit(active)

    def row_for(self, filename: str) -> DownloadRow | None:
        """The newest row for a file name (tests and the Discover page use it)."""
        found = [r for r in self.rows.values() if r.last.filename == filename]
        return found[-1] if found else None

    def flush(self) -> None:
        """Apply pending events now (tests)."""
        self._flush()
