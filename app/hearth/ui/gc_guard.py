"""Garbage collection only on the Qt thread.

Python's cyclic collector runs in whichever thread happens to allocate. When a cycle
holds a Qt object, collecting it on a worker thread (the supervisor's pipe readers, the
asyncio executor) destroys a QObject off its thread, and Qt can crash. So automatic
collection is switched off while the GUI runs, and a timer collects on the GUI thread.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

COLLECT_INTERVAL_MS = 1000


class GcOnGuiThread(QObject):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.setInterval(COLLECT_INTERVAL_MS)
        self._timer.timeout.connect(self.collect)
        self._timer.start()

    def collect(self) -> None:
        gc.collect(0)  # young objects often; the full collections happen on stop()

    def stop(self) -> None:
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
