"""The empty Chat page's "Get a recommended model", in one click.

It chooses from the picks marked ``first_run`` in the one table of picks
(``hub.picks``, the file Discover opens on): their best fit for this machine and its
measured memory bandwidth (``hub.picks.best_fit``, the rule the Welcome window's rows
follow). The file to fetch is read from the repo's listing on the Hub
(``hub.picks.resolve_pick``), so a renamed or split file is found; it is downloaded
with the app's download manager (so Downloads and the rail's badge show it, and a
restart resumes it), then loaded with the options last chosen for it or the defaults.
From first launch: close the Welcome window, this card, then Send: three clicks. On a
machine with a GPU that this llama.cpp build can't use, its messages say the model
will run on the CPU and where the fix is (the Welcome window's notice,
``hardware.offload_notice``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject, Signal

from hearth.config.launch import is_packaged
from hearth.core.units import format_bytes
from hearth.hardware import SystemMemory, probe_system
from hearth.hardware.offload_notice import offload_notice
from hearth.hardware.speed import Bandwidth
from hearth.hub import DownloadEvent, DownloadState, HubError
from hearth.hub.picks import Pick, best_fit, default_picks, resolve_pick
from hearth.supervisor import LoadOptions
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.services import AppServices
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.welcome import llama_backend
from hearth.ui.welcome.first_run import WELCOME_TITLE
from hearth.ui.welcome.llama_backend import BackendInfo

log = logging.getLogger(__name__)

CPU_NOTE = (
    " It will run on the CPU: this build of llama.cpp can't use the GPU"
    f" (Help > {WELCOME_TITLE} says how to fix that)."
)


def _sentence(exc: Exception) -> str:
    """An error's message as one sentence with its full stop."""
    return str(exc).strip().rstrip(".") + "."


class QuickStartWindow(Protocol):
    """What the quick start needs of the main window (which is one): its services, a
    page to show, and a model to load; naming only these keeps welcome/ out of an import
    circle with the shell."""

    @property
    def services(self) -> AppServices: ...
    def show_page(self, name: str) -> object: ...
    def open_model(
        self, path: str | Path, options: LoadOptions | None = None
    ) -> Awaitable[None]: ...


class QuickStart(QObject):
    status = Signal(str)
    """What it is doing, for the empty state and the status bar."""

    def __init__(
        self, window: QuickStartWindow, speed: MachineSpeed, tasks: TaskSet, parent: QObject
    ) -> None:
        super().__init__(parent)
        self.window = window
        self._speed = speed  # Discover's bandwidth measurement, shared
        self._tasks = tasks
        self.picks: tuple[Pick, ...] = default_picks().first_run  # tests put their own
        self.chosen: Pick | None = None
        self.task: asyncio.Task[None] | None = None
        self._done: dict[int, int] = {}  # download id -> bytes so far (shards: several)
        self._total = 0
        self.note = ""  # CPU_NOTE when a GPU is here that the build can't use
        window.services.download_event.connect(self._progress)

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def start(self, pick: Pick | None = None) -> asyncio.Task[None] | None:
        """Get ``pick`` (the Welcome window's "Download"), or the best fit of the
        first-run picks; None while one is already on its way."""
        if self.running:
            return None
        self.task = self._tasks.spawn(self._run(pick), name="quick-start")
        return self.task

    async def _run(self, pick: Pick | None = None) -> None:
        w = self.window
        self.status.emit("Checking what this computer can run…")
        system = await w.services.system()  # as llama.cpp sees it
        backend = await in_thread(llama_backend.probe_backend, w.services.backend)
        self.note = await self.cpu_note(backend)
        if pick is None:  # "Get a recommended model": the best fit of the first-run picks
            pick = best_fit(self.picks, system, await self._bandwidth(system))
        choice = self.chosen = pick
        if choice is None:
            self.status.emit("None of the recommended models fits here: Discover has smaller ones.")
            w.show_page("Discover")
            return
        self.status.emit(f"Finding the {choice.quant} file of {choice.name}…")
        try:
            files = await in_thread(resolve_pick, choice)
        except HubError as exc:
            log.warning("quick start: no file for %s: %s", choice.repo, exc)
            self.status.emit(f"Could not get {choice.name}: {_sentence(exc)}")
            return
        self._total = files.size_bytes
        size = format_bytes(files.size_bytes)
        self.status.emit(f"Downloading {choice.name} ({size})…{self.note}")
        try:
            handles = [
                w.services.downloads.add(files.repo, path, revision=files.revision)
                for path in files.paths
            ]
            self._done = {h.id: 0 for h in handles}
            paths = [await h.wait() for h in handles]
        except Exception as exc:
            log.warning("quick start: the download failed: %s", exc)
            self.status.emit(f"The download failed: {_sentence(exc)} Downloads can retry it.")
            return
        self.status.emit(f"Loading {choice.name}…{self.note}")
        await w.open_model(paths[0])  # a split model loads from its first shard

    async def _bandwidth(self, system: SystemMemory) -> Bandwidth | None:
        """The shared memory-bandwidth measurement (Discover's, kept in Settings), for
        the speed part of the choice; None if it can't be had (size alone then)."""
        try:
            return await self._speed.bandwidth(system)
        except Exception:
            log.exception("quick start: no bandwidth measurement; choosing by size alone")
            return None

    def _progress(self, event: DownloadEvent) -> None:
        if event.download_id not in self._done or self.chosen is None:
            return
        if event.state is DownloadState.RUNNING and self._total:
            self._done[event.download_id] = event.bytes_done
            pct = min(100, round(100 * sum(self._done.values()) / self._total))
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
