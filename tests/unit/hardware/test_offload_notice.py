"""The "GPU present, but this build can't offload" notice."""

from __future__ import annotations

from hearth.hardware.offload_notice import offload_notice
from hearth.hardware.probe import GpuInfo, SystemMemory

GIB = 1 << 30
NVIDIA = GpuInfo("NVIDIA RTX 4070", 12 * GIB, 11 * GIB, "cuda")
APPLE = GpuInfo("Apple Silicon GPU (unified memory)", 10 * GIB, 8 * GIB, "metal", True)


def machine(*gpus: GpuInfo) -> SystemMemory:
    return SystemMemory(32 * GIB, 20 * GIB, 8, 16, tuple(gpus))


def test_cpu_only_build_on_an_nvidia_machine_names_the_gpu_and_the_rebuild_command() -> None:
    text = offload_notice(machine(NVIDIA), gpu_offload=False)
    assert text is not None
    assert "NVIDIA RTX 4070" in text
    assert "CPU-only" in text
    assert text.splitlines()[-1] == "HEARTH_BACKEND=cuda bash scripts/bootstrap"  # copyable
    assert "nvcc" in text  # the toolkit the CUDA build needs


def test_apple_silicon_names_the_metal_rebuild() -> None:
    text = offload_notice(machine(APPLE), gpu_offload=False)
    assert text is not None
    assert "HEARTH_BACKEND=metal bash scripts/bootstrap" in text
    assert "nvcc" not in text


def test_no_notice_when_the_build_offloads_or_there_is_no_gpu() -> None:
    assert offload_notice(machine(NVIDIA), gpu_offload=True) is None
    assert offload_notice(machine(), gpu_offload=False) is None
    # a machine as the fit checks see it with a CPU build: GPUs already stripped
    assert offload_notice(machine(NVIDIA).without_gpus(), gpu_offload=False) is None


def test_a_failed_probe_is_not_reported_as_a_cpu_build() -> None:
    assert offload_notice(machine(NVIDIA), False, probe_error="libllama.so: missing") is None


def test_a_packaged_app_points_at_the_gpu_build_not_the_bootstrap_script() -> None:
    text = offload_notice(machine(NVIDIA), gpu_offload=False, packaged=True)
    assert text is not None
    assert "scripts/bootstrap" not in text
    assert "CUDA build" in text
