"""The empty Chat page's "Get a recommended model", in one click.

It picks the first chat model of the recommended list (``first_run``) that fits this
machine (the same rough check the Welcome window shows), downloads it with the app's
download manager (so Downloads and the rail's badge show it, and a restart resumes
it), then loads it with the options last chosen for it or the defaults. From first
launch: close the Welcome window, this card, then Send: three clicks. On a machine
with a GPU that this llama.cpp build can't use, its messages say the model will run
on the CPU and where the fix is (the Welcome window's notice, ``hardware.offload_notice``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from hearth.config.launch import is_packaged
from hearth.core.units import format_bytes
from hearth.hardware import probe_system
from hearth.hardware.offload_notice import offload_notice
from hearth.hub import DownloadEvent, DownloadState
from hearth.ui import first_run
from hearth.ui.first_run import BackendInfo, Fit, Recommended, judge_fit, load_recommended
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

if TYPE_CHECKING:
    from hearth.ui.main_window import MainWindow

log = logging.getLogger(__name__)

CPU_NOTE = (
    " It will run on the CPU: this build of llama.cpp can't use the GPU"
    " (Help > Welcome says how to fix that)."
)


class QuickStart(QObject):
    status = Signal(str)
    """What it is doing, for the empty state and the status bar."""

    def __init__(self, window: MainWindow, tasks: TaskSet) -> None:
        super().__init__(window)
        self.window = window
        self._tasks = tasks
        self.recommended: list[Recommended] = load_recommended()
        self.chosen: Recommended | None = None
        self.task: asyncio.Task[None] | None = None
        self._download_id: int | None = None
        self.note = ""  # CPU_NOTE when a GPU is here that the build can't use
        window.services.download_event.connect(self._progress)

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def start(self) -> asyncio.Task[None] | None:
        if self.running:
            return None
        self.task = self._tasks.spawn(self._run(), name="quick-start")
        return self.task

    def pick(self, fits: list[Fit]) -> Recommended | None:
        """The first chat model that fits (the list is ordered best first)."""
        for model, fit in zip(self.recommended, fits, strict=True):
            if model.kind == "chat" and fit is not Fit.NO:
                return model
        return None

    async def _run(self) -> None:
        w = self.window
        self.status.emit("Checking what this computer can run…")
        system = await w.services.system()
        backend = await in_thread(first_run.probe_backend, w.services.backend)
        fits = [judge_fit(m, system, backend.gpu_offload) for m in self.recommended]
        self.note = await self.cpu_note(backend)
        choice = self.chosen = self.pick(fits)
        if choice is None:
            self.status.emit("None of the recommended models fits here: Discover has smaller ones.")
            w.show_page("Discover")
            return
        size = format_bytes(choice.size_bytes)
        self.status.emit(f"Downloading {choice.name} ({size})…{self.note}")
        try:
            handle = w.services.downloads.add(choice.repo, choice.file)
            self._download_id = handle.id
            path = await handle.wait()
        except Exception as exc:
            log.warning("quick start: the download failed: %s", exc)
            self.status.emit(f"The download failed: {exc}. Downloads can retry it.")
            return
        self.status.emit(f"Loading {choice.name}…{self.note}")
        await w.open_model(path)

    def _progress(self, event: DownloadEvent) -> None:
        if event.download_id != self._download_id or self.chosen is None:
            return
        if event.state is DownloadState.RUNNING and event.total:
            pct = round(100 * event.bytes_done / event.total)
            self.status.emit(f"Downloading {self.chosen.name}: {pct}%{self.note}")

    async def cpu_note(self, backend: BackendInfo) -> str:
        """CPU_NOTE when the machine has a GPU (probed as it is, not as llama.cpp sees
        it) that ``backend`` can't offload to; else ""."""
        if backend.gpu_offload or backend.error is not None:
            return ""
        machine = await in_thread(probe_system)
        notice = offload_notice(
            machine, backend.gpu_offload, packaged=is_packaged(), probe_error=backend.error
        )
        return CPU_NOTE if notice else ""
