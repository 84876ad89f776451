"""What this machine has to run a model with: RAM, CPU cores and GPU memory.

NVIDIA GPUs are read with ``nvidia-smi`` when it is on PATH (it ships with the driver on
Linux and Windows); no nvidia-smi means no usable NVIDIA GPU. Apple Silicon has unified
memory: the GPU works in system RAM, up to the share Metal allows one process.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from hearth.core.units import MIB

log = logging.getLogger(__name__)

NVIDIA_SMI_QUERY = (
    "--query-gpu=name,memory.total,memory.free",
    "--format=csv,noheader,nounits",
)
NVIDIA_SMI_TIMEOUT_S = 5.0


# What a model may not count on, whatever is free: one definition for every fit estimate.
CUDA_RESERVE_BYTES = 512 * MIB  # CUDA context, cuBLAS workspace: not in llama.cpp's log
RAM_RESERVE_BYTES = 256 * MIB  # the worker process itself: Python, libraries, server


@dataclass(frozen=True)
class GpuInfo:
    name: str
    total_bytes: int
    free_bytes: int
    backend: str  # "cuda" or "metal"
    unified_memory: bool = False  # True: this "VRAM" is system RAM (Apple Silicon)

    @property
    def usable_bytes(self) -> int:
        """Free memory a model may fill: a discrete GPU keeps room for the CUDA context."""
        return max(0, self.free_bytes - (0 if self.unified_memory else CUDA_RESERVE_BYTES))


@dataclass(frozen=True)
class SystemMemory:
    total_ram: int
    available_ram: int
    physical_cores: int
    logical_cores: int
    gpus: tuple[GpuInfo, ...] = field(default_factory=tuple)

    @property
    def unified_memory(self) -> bool:
        return any(gpu.unified_memory for gpu in self.gpus)

    @property
    def total_vram(self) -> int:
        return sum(gpu.total_bytes for gpu in self.gpus)

    @property
    def free_vram(self) -> int:
        return sum(gpu.free_bytes for gpu in self.gpus)

    @property
    def usable_vram(self) -> int:
        """GPU memory a model may fill, over every GPU (see ``GpuInfo.usable_bytes``)."""
        return sum(gpu.usable_bytes for gpu in self.gpus)

    @property
    def usable_ram(self) -> int:
        """Available RAM less what the worker process itself needs."""
        return max(0, self.available_ram - RAM_RESERVE_BYTES)

    def without_gpus(self) -> SystemMemory:
        """The same machine as a CPU-only llama.cpp build sees it."""
        return SystemMemory(
            self.total_ram, self.available_ram, self.physical_cores, self.logical_cores
        )


# --------------------------------------------------------------------------- NVIDIA


def _mib(text: str) -> int | None:
    text = text.strip().removesuffix("MiB").strip()
    try:
        return int(float(text) * MIB)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]", "" ...


def parse_nvidia_smi(output: str) -> list[GpuInfo]:
    """Parse ``name, memory.total, memory.free`` CSV lines (MiB, no header, no units).

    GPU names may contain commas, so the two numbers are taken from the right. Lines
    that do not parse (warnings, N/A memory on some virtual GPUs) are skipped.
    """
    gpus: list[GpuInfo] = []
    for line in output.splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) != 3:
            continue
        name, total, free = parts[0].strip(), _mib(parts[1]), _mib(parts[2])
        if not name or total is None or total <= 0:
            continue
        if free is None or free < 0:
            free = total
        gpus.append(
            GpuInfo(name=name, total_bytes=total, free_bytes=min(free, total), backend="cuda")
        )
    return gpus


Runner = Callable[[list[str]], str]


def _run(cmd: list[str]) -> str:
    result = subprocess.run(
        cmd, capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=True
    )
    return result.stdout


def probe_nvidia(
    run: Runner = _run, which: Callable[[str], str | None] = shutil.which
) -> list[GpuInfo]:
    """NVIDIA GPUs with their total and free memory; empty when there are none."""
    exe = which("nvidia-smi")
    if exe is None:
        return []
    try:
        output = run([exe, *NVIDIA_SMI_QUERY])
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("nvidia-smi did not answer (%s); assuming no NVIDIA GPU", exc)
        return []
    gpus = parse_nvidia_smi(output)
    if not gpus:
        log.info("nvidia-smi listed no GPU with readable memory")
    return gpus


# --------------------------------------------------------------------------- Apple


def is_apple_silicon(system: str | None = None, machine: str | None = None) -> bool:
    system = platform.system() if system is None else system
    machine = platform.machine() if machine is None else machine
    return system == "Darwin" and machine.lower() in ("arm64", "aarch64")


def metal_working_set(total_ram: int) -> int:
    """Roughly Metal's ``recommendedMaxWorkingSetSize``: the RAM the GPU may use.

    macOS lets the GPU wire about two thirds of RAM on small machines and three quarters
    from 64 GB up; llama.cpp refuses to allocate beyond it.
    """
    share = 0.75 if total_ram >= 64 * 1024 * MIB else 0.67
    return int(total_ram * share)


def apple_gpu(total_ram: int, available_ram: int) -> GpuInfo:
    limit = metal_working_set(total_ram)
    return GpuInfo(
        name="Apple Silicon GPU (unified memory)",
        total_bytes=limit,
        free_bytes=min(limit, available_ram),
        backend="metal",
        unified_memory=True,
    )


# --------------------------------------------------------------------------- all


def probe_system(*, include_gpus: bool = True) -> SystemMemory:
    """Probe RAM, cores and GPUs now (free memory changes; probe again before a load)."""
    vm = psutil.virtual_memory()
    logical = psutil.cpu_count(logical=True) or os.cpu_count() or 1
    physical = psutil.cpu_count(logical=False) or logical
    gpus: list[GpuInfo] = []
    if include_gpus:
        if is_apple_silicon():
            gpus.append(apple_gpu(int(vm.total), int(vm.available)))
        else:
            gpus.extend(probe_nvidia())
    return SystemMemory(
        total_ram=int(vm.total),
        available_ram=int(vm.available),
        physical_cores=int(physical),
        logical_cores=int(logical),
        gpus=tuple(gpus),
    )
