"""Where a model's memory goes for a GPU-layer choice: the Load dialog's estimate.

Pure arithmetic over ``hearth.hardware``'s ``MemoryBreakdown``, kept apart from the
dialog so it can be tested (and redone on every slider move) without any widget. The
split itself is ``hardware.fit``'s (``split_memory``, and ``draft_split`` for a draft
model loaded beside the target), so the dialog and the fit verdicts agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from hearth.core.units import format_bytes
from hearth.hardware import MemoryBreakdown, SystemMemory
from hearth.hardware.fit import (
    draft_split,
    projector_split,
    split_memory,
)


@dataclass(frozen=True)
class Placement:
    """Where the memory goes with ``gpu_layers`` of the model's layers on the GPU."""

    gpu_layers: int
    n_layers: int
    gpu_bytes: int
    ram_bytes: int
    free_vram: int
    available_ram: int
    unified: bool

    @property
    def fits(self) -> bool:
        if self.unified:
            return self.gpu_bytes <= self.free_vram and (
                self.gpu_bytes + self.ram_bytes <= self.available_ram
            )
        return self.gpu_bytes <= self.free_vram and self.ram_bytes <= self.available_ram

    def describe(self) -> str:
        where = (
            "all layers on the GPU"
            if self.n_layers and self.gpu_layers >= self.n_layers
            else f"{self.gpu_layers} of {self.n_layers} layers on the GPU"
        )
        gpu = (
            f"GPU {format_bytes(self.gpu_bytes)} of {format_bytes(self.free_vram)} free"
            if self.gpu_bytes or self.free_vram
            else "no GPU memory used"
        )
        verdict = "fits" if self.fits else "does NOT fit: lower the layers or the context"
        return (
            f"{where}: {gpu}, RAM {format_bytes(self.ram_bytes)} of "
            f"{format_bytes(self.available_ram)} available. It {verdict}."
        )


def place_layers(
    mem: MemoryBreakdown,
    gpu_layers: int,
    system: SystemMemory,
    draft: MemoryBreakdown | None = None,
    projector_bytes: int = 0,
) -> Placement:
    """Split ``mem`` between GPU and RAM for ``n_gpu_layers`` = ``gpu_layers``, as
    llama.cpp counts them (the output head first, then the last blocks; all of them
    is -1), plus ``draft``'s memory placed the way the engine places a draft model,
    and a vision projector's ``projector_bytes`` as the engine places it."""
    n = mem.n_layers
    layers = max(0, min(gpu_layers, n))
    full = n > 0 and layers == n
    gpu_backend = bool(system.gpus)
    gpu, ram = split_memory(mem, layers, full, gpu_backend=gpu_backend)
    if draft is not None:
        draft_gpu, draft_ram = draft_split(draft, layers, full, gpu_backend=gpu_backend)
        gpu, ram = gpu + draft_gpu, ram + draft_ram
    proj_gpu, proj_ram = projector_split(projector_bytes, layers, full, gpu_backend=gpu_backend)
    gpu, ram = gpu + proj_gpu, ram + proj_ram
    vram = system.usable_vram
    return Placement(
        gpu_layers=layers,
        n_layers=n,
        gpu_bytes=gpu,
        ram_bytes=ram,
        free_vram=vram,
        available_ram=system.usable_ram,
        unified=system.unified_memory,
    )
