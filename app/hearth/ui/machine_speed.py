"""This machine's memory bandwidth for the speed estimates, measured once and kept.

The first fit chip that needs it runs :func:`hearth.hardware.speed.measure_ram_bandwidth`
on a worker thread (a fraction of a second); the result goes to the settings file
(``Settings.extra["ram_bandwidth_bps"]``) when a :class:`SettingsStore` is given, so
later runs skip the measurement. Without a store it is kept for this object's life.
"""

from __future__ import annotations

import asyncio
import logging

from hearth.hardware.probe import SystemMemory
from hearth.hardware.speed import Bandwidth, machine_bandwidth, measure_ram_bandwidth
from hearth.ui.app_settings import SettingsStore
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

SETTING = "ram_bandwidth_bps"


class MachineSpeed:
    """Owns the measured RAM bandwidth (one measurement, shared by its users)."""

    def __init__(self, store: SettingsStore | None = None, *, ram_bps: float | None = None):
        """``ram_bps`` fixes the bandwidth instead of measuring it (tests)."""
        self.store = store
        self._ram_bps = ram_bps
        self._lock = asyncio.Lock()
        if self._ram_bps is None and store is not None:
            saved = store.settings.extra.get(SETTING)
            if isinstance(saved, int | float) and saved > 0:
                self._ram_bps = float(saved)

    @property
    def ram_bps(self) -> float | None:
        return self._ram_bps

    async def ram_bandwidth(self) -> float:
        async with self._lock:
            if self._ram_bps is None:
                self._ram_bps = await in_thread(measure_ram_bandwidth)
                if self.store is not None:
                    self.store.settings.extra[SETTING] = round(self._ram_bps)
                    self.store.save()
            return self._ram_bps

    async def bandwidth(self, system: SystemMemory) -> Bandwidth:
        """RAM and GPU bandwidth of ``system`` (the machine as llama.cpp sees it)."""
        return machine_bandwidth(system, await self.ram_bandwidth())
