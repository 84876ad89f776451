"""How much memory a model takes: the fit estimator's figure before a load, the process's
measured growth after it, and the budget every loaded model shares.

The residency (``server/residency.py``) decides by the estimate, because it must decide
before anything is allocated; the measurement replaces the estimate once the model is
in, and the difference between the two is logged, so a systematic error shows up.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path

import psutil

from hearth.core.errors import HearthError
from hearth.core.model_info import LoadConfig
from hearth.engine.devices import list_devices
from hearth.hardware.fit import ContextPlan, estimate_memory
from hearth.hardware.probe import SystemMemory, probe_system
from hearth.library.gguf_metadata import read_metadata

log = logging.getLogger(__name__)

_MIB = 1 << 20


def estimate_load_bytes(config: LoadConfig) -> int:
    """The bytes loading ``config`` allocates (weights, KV cache, compute buffers, the
    draft model's, and a vision projector's), by the same estimator as the Load dialog;
    the files' sizes when a header can't be read (the load itself will say why)."""
    total = 0
    for path in (config.model_path, config.draft_model_path):
        if path is None:
            continue
        try:
            meta = read_metadata(Path(path))
            plan = ContextPlan.from_load_config(config, meta.context_length or 0)
            total += estimate_memory(meta, plan).total_bytes
        except (HearthError, OSError, ValueError) as exc:
            log.debug("no memory estimate for %s: %s", path, exc)
            with contextlib.suppress(OSError):
                total += Path(path).stat().st_size
    if config.mmproj_path is not None:  # a vision projector: its weights, about its file
        with contextlib.suppress(OSError):
            total += Path(config.mmproj_path).stat().st_size
    return total


def default_budget(system: SystemMemory | None = None) -> int:
    """What every loaded model may hold together: usable RAM plus usable VRAM on each
    GPU (each less its headroom, as the fit estimate counts them); on unified memory the
    GPU's share is the same RAM, counted once."""
    system = system or probe_system()
    if system.unified_memory:
        return max(system.usable_ram, system.usable_vram)
    return system.usable_ram + system.usable_vram


@dataclass(frozen=True)
class MemorySample:
    """The process's resident memory and the devices' used memory at one moment."""

    rss: int
    device_used: int

    @classmethod
    def now(cls) -> MemorySample:
        rss = int(psutil.Process().memory_info().rss)
        devices = [d for d in list_devices() if d.kind == "gpu"]  # igpu: system RAM
        return cls(rss, sum(max(0, d.memory_total - d.memory_free) for d in devices))

    def growth_since(self, before: MemorySample) -> int:
        """Bytes this process gained since ``before``, in RAM and on the devices."""
        return max(0, self.rss - before.rss) + max(0, self.device_used - before.device_used)


def record_estimate_error(model_id: str, estimate: int, measured: int) -> None:
    """Log how far the estimate was from the measured growth of the process."""
    if estimate <= 0:
        return
    error = (measured - estimate) / estimate
    log.info(
        "model %s: estimated %d MiB, measured %d MiB (%+.0f%%)",
        model_id, estimate // _MIB, measured // _MIB, error * 100,
    )  # fmt: skip
