"""The llama.cpp backend this install was built with, as the Welcome window and the
quick start name it ("CUDA", "Metal", "CPU"...) and whether it can offload to a GPU.

Kept apart from the Welcome window: the quick start asks it too (its "runs on the
CPU" note), and it is plain data from ``BackendProbe`` with no widget in it. Tests
replace ``probe_backend`` here (the real one runs a child process the first time), so
callers reach it through this module, not a name imported from it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hearth.supervisor.backend_probe import BackendProbe

log = logging.getLogger(__name__)

_LABELS = (
    ("CUDA", "CUDA"),
    ("METAL", "Metal"),
    ("VULKAN", "Vulkan"),
    ("HIP", "ROCm/HIP"),
    ("SYCL", "SYCL"),
)


@dataclass(frozen=True)
class BackendInfo:
    name: str  # "CUDA", "Metal", "Vulkan", "CPU"...
    gpu_offload: bool
    details: str = ""
    error: str | None = None  # the probe failed: a broken library, not a CPU-only one


def backend_name(system_info: str, gpu_offload: bool) -> str:
    """The GPU backend llama.cpp's system info names, else "GPU" or "CPU"."""
    text = system_info.upper()
    for key, label in _LABELS:
        if f"{key} :" in text or f"{key} =" in text or f"{key}:" in text:
            return label
    return "GPU" if gpu_offload else "CPU"


def probe_backend(probe: BackendProbe) -> BackendInfo:
    """The llama.cpp backend compiled into this install (blocking: a child process
    answers the first time; call it on a worker thread)."""
    report = probe.report()
    if report.error is not None:  # a broken or missing native library
        return BackendInfo("unavailable", False, report.error, report.error)
    offload = report.gpu_offload
    return BackendInfo(backend_name(report.system_info, offload), offload, report.system_info)
