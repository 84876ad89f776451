"""What the pages share: the folders, the library and the one download manager.

Owned by the main window and closed when it closes. The :class:`DownloadManager` needs
a running asyncio loop, so it is created on first use from a task (``await start()``).
Its events arrive on the loop's (= Qt's) thread and are re-emitted as a Qt signal.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from PySide6.QtCore import QObject, Signal

from hearth.config.paths import AppPaths, default_paths
from hearth.hardware.probe import SystemMemory
from hearth.hub import DownloadEvent, DownloadManager, DownloadState
from hearth.library import Library
from hearth.supervisor.backend_probe import BackendProbe

log = logging.getLogger(__name__)


def probe_for_fit(backend: BackendProbe) -> SystemMemory:
    """The machine as llama.cpp will see it (blocking: call it off the Qt thread)."""
    from hearth.hardware.probe import probe_system

    system = probe_system()
    return system if backend.report().gpu_offload else system.without_gpus()


class AppServices(QObject):
    download_event = Signal(object)
    """A :class:`DownloadEvent` (already throttled by the manager)."""
    library_changed = Signal()
    """A model was added (download finished, import, quantize) or removed."""

    def __init__(
        self,
        paths: AppPaths | None = None,
        *,
        download_options: dict[str, Any] | None = None,
        system: SystemMemory | None = None,
        parent: QObject | None = None,
    ) -> None:
        """``system`` fixes the machine the fit checks judge against instead of probing
        it (tests describe a small machine so that "won't fit" is certain)."""
        super().__init__(parent)
        self.paths = paths or default_paths()
        self.library = Library(self.paths)
        self.download_options: dict[str, Any] = dict(download_options or {})
        self._manager: DownloadManager | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._system: SystemMemory | None = system
        self._system_lock = asyncio.Lock()
        self.backend = BackendProbe()  # llama.cpp's build, asked of a child process
        self.closed = False

    # ------------------------------------------------------------------ downloads
    @property
    def downloads(self) -> DownloadManager:
        """The download manager (created on first use; needs the running loop)."""
        if self._manager is None:
            if self.closed:
                raise RuntimeError("the app is closing")
            self._loop = asyncio.get_running_loop()
            self.paths.models_dir.mkdir(parents=True, exist_ok=True)
            self._manager = DownloadManager(
                self.paths.models_dir, on_event=self._on_event, **self.download_options
            )
        return self._manager

    @property
    def has_downloads(self) -> bool:
        return self._manager is not None

    def _on_event(self, event: DownloadEvent) -> None:
        self.download_event.emit(event)
        if event.state is DownloadState.COMPLETED:
            self.library_changed.emit()

    # ------------------------------------------------------------------ hardware
    async def system(self) -> SystemMemory:
        """RAM/VRAM as llama.cpp sees it, probed once per app run (off the Qt thread)."""
        async with self._system_lock:
            if self._system is None:
                self._system = await asyncio.to_thread(probe_for_fit, self.backend)
            return self._system

    # ------------------------------------------------------------------ close
    async def aclose(self) -> None:
        """Stop the downloads, keeping their partial files for the next start."""
        self.closed = True
        manager, self._manager = self._manager, None
        if manager is not None:
            await manager.aclose()

    def close_sync(self) -> None:
        """Close without a running loop (window torn down outside the loop)."""
        self.closed = True
        manager, self._manager = self._manager, None
        loop = self._loop
        if manager is None or loop is None or loop.is_closed():
            return
        if loop.is_running():
            task = loop.create_task(manager.aclose())
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
            return
        try:
            loop.run_until_complete(manager.aclose())
        except Exception:
            log.exception("could not close the download manager")
