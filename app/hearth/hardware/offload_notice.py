"""The "GPU present, but this build can't offload" notice, in one wording (Qt-free).

A source install on a machine with a GPU can end up with a CPU-only llama.cpp: no CUDA
toolkit when it was built, or pip reused a CPU wheel from its cache. Nothing fails; the
model just runs on the CPU, many times slower, and the user never learns why. The
welcome page and the Load dialog both show this notice, so its wording lives here once.

``offload_notice(system, gpu_offload, *, packaged=False)`` returns the message, or
``None`` when there is nothing to say. The rebuild command is the message's last line,
on its own:

- ``system``: ``hearth.hardware.probe.SystemMemory`` as probed **with** GPUs
  (``probe_system()``, not ``without_gpus()``): which GPUs the machine has.
- ``gpu_offload``: whether the installed llama.cpp can offload, as the backend probe
  reports it (``hearth.supervisor.backend_probe.BackendReport.gpu_offload``). When the
  probe itself failed (``BackendReport.error`` is set) the library is broken rather than
  CPU-only: pass the report's ``error`` as ``probe_error`` and no notice is given (that
  failure has its own message).
- ``packaged``: ``hearth.config.launch.is_packaged()``. A packaged app can't be rebuilt
  in place, so the fix it names is the GPU build of the app instead of the
  ``scripts/bootstrap`` command.

The fix for a source install is ``scripts/bootstrap``'s backend selection
(``HEARTH_BACKEND=cuda|metal|vulkan``, see ``installers/README.md``): it rebuilds
llama-cpp-python for that backend when the installed one can't offload.
"""

from __future__ import annotations

import logging

from hearth.hardware.probe import GpuInfo, SystemMemory

log = logging.getLogger(__name__)

__all__ = ["BOOTSTRAP_COMMAND", "offload_notice", "rebuild_command"]

BOOTSTRAP_COMMAND = "HEARTH_BACKEND={backend} bash scripts/bootstrap"
_TOOLKIT = {
    "cuda": " (this needs the CUDA toolkit, nvcc: e.g. 'sudo apt-get install nvidia-cuda-toolkit')",
    "metal": "",
}


def rebuild_command(gpu: GpuInfo) -> str:
    """The command that rebuilds llama.cpp for ``gpu``'s backend in a source install."""
    return BOOTSTRAP_COMMAND.format(backend=gpu.backend)


def offload_notice(
    system: SystemMemory,
    gpu_offload: bool,
    *,
    packaged: bool = False,
    probe_error: str | None = None,
) -> str | None:
    """The notice when ``system`` has a GPU that this llama.cpp build can't use, else
    ``None`` (see the module docstring for the arguments)."""
    if gpu_offload or not system.gpus or probe_error is not None:
        return None
    gpu = system.gpus[0]
    kind = "CUDA" if gpu.backend == "cuda" else gpu.backend.capitalize()
    head = (
        f"This machine has a GPU ({gpu.name}), but this build of llama.cpp is CPU-only, "
        "so models run on the CPU, much slower."
    )
    if packaged:
        fix = f"To use the GPU, install Hearth's {kind} build for this machine."
    else:  # the command on a line of its own, so it reads (and copies) whole
        fix = (
            f"To use the GPU, rebuild llama.cpp with {kind}{_TOOLKIT.get(gpu.backend, '')}: "
            f"run this in the Hearth folder, then restart Hearth:\n{rebuild_command(gpu)}"
        )
    log.info("GPU %s found but llama.cpp can't offload (packaged=%s)", gpu.name, packaged)
    return f"{head} {fix}"
