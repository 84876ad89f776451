"""The status bar's meter while a model is loaded: RAM, VRAM and CPU.

Sampled every ``INTERVAL_MS`` on a worker thread (psutil's reads, and nvidia-smi for
VRAM through ``hardware.probe``, can take milliseconds to a second), never on the Qt
thread; a sample still running when the timer fires again is not doubled. The text
is the worker process's resident memory and CPU, the machine's RAM in use, and the
GPUs' memory in use where there are any.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

import psutil
from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QLabel, QWidget

from hearth.core.units import format_bytes
from hearth.hardware.probe import GpuInfo, probe_nvidia
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)

INTERVAL_MS = 2000


@dataclass(frozen=True)
class Sample:
    worker_rss: int  # bytes resident in the worker process
    worker_cpu: float  # percent of one core
    ram_used: int
    ram_total: int
    vram_used: int | None  # None: no GPU memory to report
    vram_total: int | None

    def text(self) -> str:
        parts = [
            f"Model {format_bytes(self.worker_rss)}",
            f"RAM {format_bytes(self.ram_used)} / {format_bytes(self.ram_total)}",
        ]
        if self.vram_total:
            parts.append(
                f"VRAM {format_bytes(self.vram_used or 0)} / {format_bytes(self.vram_total)}"
            )
        parts.append(f"CPU {self.worker_cpu:.0f}%")
        return " · ".join(parts)


class Sampler:
    """Reads one ``Sample`` for a worker pid; keeps the psutil handles between reads
    (CPU percent is measured between two calls)."""

    def __init__(self, gpus: Callable[[], list[GpuInfo]] = probe_nvidia) -> None:
        self._gpus = gpus
        self._procs: dict[int, psutil.Process] = {}

    def sample(self, pid: int) -> Sample | None:
        # The worker process alone: llama.cpp runs in it. (Listing its children would
        # walk every process of the machine in Python, holding the GIL the Qt thread
        # needs while a reply streams.)
        proc = self._procs.get(pid)
        try:
            if proc is None:
                proc = psutil.Process(pid)
                proc.cpu_percent(None)  # the first call only starts the measurement
            rss, cpu = proc.memory_info().rss, proc.cpu_percent(None)
        except psutil.Error:
            self._procs.pop(pid, None)
            return None
        self._procs = {pid: proc}
        mem = psutil.virtual_memory()
        gpus = [g for g in self._gpus() if not g.unified_memory]
        vram_total = sum(g.total_bytes for g in gpus) or None
        vram_used = sum(g.total_bytes - g.free_bytes for g in gpus) if gpus else None
        return Sample(rss, cpu, mem.total - mem.available, mem.total, vram_used, vram_total)


class StatusMeter(QLabel):
    """Shows a ``Sample`` of the worker ``pid()`` names; hidden while there is none."""

    sampled = Signal(object)
    """Each new :class:`Sample` (the top bar shows the model's memory from it)."""

    def __init__(
        self,
        pid: Callable[[], int | None],
        tasks: TaskSet,
        parent: QWidget | None = None,
        *,
        sampler: Sampler | None = None,
        interval_ms: int = INTERVAL_MS,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("statusMeter")
        self.setAccessibleName("Memory and CPU use")
        self.setToolTip("The model worker's memory and CPU, this machine's RAM and GPU memory")
        self._pid = pid
        self._tasks = tasks
        self._sampler = sampler or Sampler()
        self._job: asyncio.Task[None] | None = None
        self.last: Sample | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.refresh)
        self.hide()

    def set_active(self, active: bool) -> None:
        """Meter while a model is loaded; nothing (and no sampling) otherwise."""
        if active and not self._timer.isActive():
            self._timer.start()  # the first sample after one interval: not during load
        elif not active:
            self._timer.stop()
            self.last = None
            self.hide()

    def refresh(self) -> asyncio.Task[None] | None:
        pid = self._pid()
        if pid is None or (self._job is not None and not self._job.done()):
            return None
        self._job = self._tasks.spawn(self._read(pid), name="status-meter")
        return self._job

    async def _read(self, pid: int) -> None:
        sample = await asyncio.to_thread(self._sampler.sample, pid)
        if sample is None or not self._timer.isActive():
            return
        self.last = sample
        self.setText(sample.text())
        self.show()
        self.sampled.emit(sample)
