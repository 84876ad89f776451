"""Garbage collection only on the Qt thread, escalating through the generations.

Python's cyclic collector runs in whichever thread happens to allocate. When a cycle
holds a Qt object, collecting it on a worker thread (the supervisor's pipe readers, the
asyncio executor) destroys a QObject off its thread, and Qt can crash. So automatic
collection is switched off while the GUI runs, and a timer collects on the GUI thread.

The timer does what the automatic collector would have done, only on this thread: it
reads the per-generation counters (``gc.get_count()``) and collects the *oldest*
generation whose counter passed its threshold (``gc.get_threshold()``). Collecting
generation N also collects the younger ones and bumps N+1's counter, so old cyclic
garbage is promoted and eventually freed, as with the interpreter's own schedule.
(Always collecting generation 0 alone, as this module once did, never freed a cycle
that had survived into generations 1 or 2 while the app ran.)
"""

from __future__ import annotations

import gc
import logging

from PySide6.QtCore import QObject, QTimer

log = logging.getLogger(__name__)

COLLECT_INTERVAL_MS = 1000


def generation_due(counts: tuple[int, int, int], thresholds: tuple[int, int, int]) -> int | None:
    """The oldest generation whose allocation counter exceeds its threshold, if any.

    A threshold of 0 means "never" for that generation, as in ``gc.set_threshold``.
    """
    due: int | None = None
    for generation, (count, threshold) in enumerate(zip(counts, thresholds, strict=True)):
        if threshold > 0 and count > threshold:
            due = generation
        elif generation == 0:
            return None  # nothing young is due; older counters only move on gen-0 runs
    return due


class GcOnGuiThread(QObject):
    def __init__(
        self, parent: QObject | None = None, interval_ms: int = COLLECT_INTERVAL_MS
    ) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        self.collections = [0, 0, 0]  # runs per generation (tests and debugging)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.collect)
        self._timer.start()

    def collect(self) -> int | None:
        """Collect the generation that is due now; which one it was (None: none)."""
        threshold = gc.get_threshold()
        generation = generation_due(gc.get_count(), (threshold[0], threshold[1], threshold[2]))
        if generation is None:
            return None
        found = gc.collect(generation)
        self.collections[generation] += 1
        if generation > 0:
            log.debug("collected generation %d: %d unreachable objects", generation, found)
        return generation

    def stop(self) -> None:
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
