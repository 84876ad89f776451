"""What the Load dialog says about the model and the machine above its knobs: the
model's facts line (architecture, size, quantization, layers, trained context) and
whether llama.cpp can offload to the GPU found here.

A GPU this llama.cpp build can't use is said with the command that rebuilds it
(``hardware.offload_notice``), and the machine is then counted without its GPUs, as
the worker will run. Asking the backend starts a probe: off the Qt thread.
"""

from __future__ import annotations

import logging

from hearth.config.launch import is_packaged
from hearth.hardware import SystemMemory
from hearth.hardware.offload_notice import offload_notice
from hearth.library.gguf_metadata import GgufMetadata
from hearth.supervisor.backend_probe import BackendProbe
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

NO_GPU = "\nNo GPU found: the model runs on the CPU."


async def offload_for(
    system: SystemMemory, backend: BackendProbe
) -> tuple[SystemMemory, str | None]:
    """The machine as the worker will use it (without its GPUs when llama.cpp can't
    offload to them), and the notice that says why, if any."""
    report = await in_thread(backend.report)
    notice = offload_notice(
        system, report.gpu_offload, packaged=is_packaged(), probe_error=report.error
    )
    return (system if report.gpu_offload else system.without_gpus()), notice


def facts_line(meta: GgufMetadata, system: SystemMemory | None, offload_text: str | None) -> str:
    """The model's facts, one line, and a note when it will run on the CPU for want of a
    GPU (a GPU that can't be used has its own notice)."""
    parts = [
        meta.architecture,
        meta.parameter_label,
        meta.quantization,
        f"{meta.block_count or 0} layers",
        f"trained context {meta.context_length or '?'}",
    ]
    no_gpu = not (system and system.gpus) and not offload_text
    return " · ".join(p for p in parts if p) + (NO_GPU if no_gpu else "")
