"""One download as the manager tracks it, and the snapshot it reports."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hearth.hub.errors import HubError
from hearth.hub.progress import DownloadEvent, DownloadState, SpeedMeter, Throttle
from hearth.hub.transfer import FileTransfer

Intent = Literal["pause", "cancel", "shutdown"]


def new_future() -> asyncio.Future[Path]:
    future: asyncio.Future[Path] = asyncio.get_running_loop().create_future()
    # Mark failures as retrieved: nobody has to wait() on a download.
    future.add_done_callback(lambda f: f.cancelled() or f.exception())
    return future


@dataclass(eq=False)
class DownloadHandle:
    """One queued, running, paused or finished download."""

    id: int
    repo_id: str
    filename: str
    revision: str
    dest: Path
    state: DownloadState = DownloadState.QUEUED
    bytes_done: int = 0
    total: int | None = None
    error: HubError | None = None
    _future: asyncio.Future[Path] = field(default_factory=new_future, repr=False)
    _task: asyncio.Task[None] | None = field(default=None, repr=False)
    _transfer: FileTransfer | None = field(default=None, repr=False)
    _intent: Intent | None = field(default=None, repr=False)
    _meter: SpeedMeter = field(default_factory=SpeedMeter, repr=False)
    _throttle: Throttle | None = field(default=None, repr=False)

    def snapshot(self) -> DownloadEvent:
        return DownloadEvent(
            download_id=self.id,
            repo_id=self.repo_id,
            filename=self.filename,
            dest=self.dest,
            state=self.state,
            bytes_done=self.bytes_done,
            total=self.total,
            speed_bps=self._meter.speed if self.state.active else 0.0,
            eta_s=self._meter.eta(self.bytes_done, self.total) if self.state.active else None,
            error=self.error.message if self.error else None,
            error_code=self.error.code if self.error else None,
        )

    async def wait(self) -> Path:
        """The final path once verified; raises the download's error if it failed or was
        cancelled. Stays pending while paused."""
        return await asyncio.shield(self._future)
