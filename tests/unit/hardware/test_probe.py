"""RAM, cores and GPU memory are probed robustly; absent tools mean no GPU."""

from __future__ import annotations

import subprocess

import pytest

from hearth.hardware import probe
from hearth.hardware.probe import (
    MIB,
    apple_gpu,
    is_apple_silicon,
    metal_working_set,
    parse_nvidia_smi,
    probe_nvidia,
    probe_system,
)

GIB = 1024 * MIB


def test_parse_two_gpus() -> None:
    out = "NVIDIA GeForce RTX 4090, 24564, 23012\nNVIDIA H200, 143771, 143000\n"
    gpus = parse_nvidia_smi(out)
    assert [(g.name, g.total_bytes, g.free_bytes, g.backend) for g in gpus] == [
        ("NVIDIA GeForce RTX 4090", 24564 * MIB, 23012 * MIB, "cuda"),
        ("NVIDIA H200", 143771 * MIB, 143000 * MIB, "cuda"),
    ]
    assert not any(g.unified_memory for g in gpus)


def test_parse_is_robust() -> None:
    out = (
        "\n"
        "Tesla T4, Rev. A, 15360 MiB, 15000 MiB\r\n"  # comma in name, units left in
        "GRID vGPU, [N/A], [N/A]\n"  # no memory figures: skipped
        "NVIDIA A100, 40960, [Not Supported]\n"  # free unknown: assume all free
        "Failed to initialize NVML: Driver/library version mismatch\n"
        "NVIDIA L4, 23034, 99999\n"  # free > total: clamped
    )
    gpus = parse_nvidia_smi(out)
    assert [(g.name, g.total_bytes // MIB, g.free_bytes // MIB) for g in gpus] == [
        ("Tesla T4, Rev. A", 15360, 15000),
        ("NVIDIA A100", 40960, 40960),
        ("NVIDIA L4", 23034, 23034),
    ]
    assert parse_nvidia_smi("") == []


def test_probe_nvidia_without_or_with_a_broken_tool() -> None:
    assert probe_nvidia(run=lambda cmd: "X, 1, 1", which=lambda _n: None) == []

    def broken(cmd: list[str]) -> str:
        raise subprocess.CalledProcessError(9, cmd)

    def slow(cmd: list[str]) -> str:
        raise subprocess.TimeoutExpired(cmd, 5)

    def gone(cmd: list[str]) -> str:
        raise FileNotFoundError(cmd[0])

    for run in (broken, slow, gone):
        assert probe_nvidia(run=run, which=lambda _n: "/usr/bin/nvidia-smi") == []


def test_probe_nvidia_query() -> None:
    calls: list[list[str]] = []

    def run(cmd: list[str]) -> str:
        calls.append(cmd)
        return "NVIDIA RTX A6000, 49140, 48000\n"

    [gpu] = probe_nvidia(run=run, which=lambda _n: "/usr/bin/nvidia-smi")
    assert gpu.free_bytes == 48000 * MIB
    assert calls == [
        [
            "/usr/bin/nvidia-smi",
            "--query-gpu=name,memory.total,memory.free",
            "--format=csv,noheader,nounits",
        ]
    ]


def test_apple_silicon_is_unified_memory() -> None:
    assert is_apple_silicon("Darwin", "arm64")
    assert not is_apple_silicon("Darwin", "x86_64")
    assert not is_apple_silicon("Linux", "aarch64")
    gpu = apple_gpu(total_ram=16 * GIB, available_ram=4 * GIB)
    assert gpu.unified_memory and gpu.backend == "metal"
    assert gpu.total_bytes == metal_working_set(16 * GIB) < 16 * GIB
    assert gpu.free_bytes == 4 * GIB  # capped by what RAM has free
    assert metal_working_set(128 * GIB) == 96 * GIB


def test_probe_system_here(monkeypatch: pytest.MonkeyPatch) -> None:
    mem = probe_system(include_gpus=False)
    assert mem.gpus == () and mem.total_vram == 0
    assert 0 < mem.available_ram <= mem.total_ram
    assert 1 <= mem.physical_cores <= mem.logical_cores

    monkeypatch.setattr(probe, "is_apple_silicon", lambda: True)
    mac = probe_system()
    assert mac.unified_memory and mac.gpus[0].backend == "metal"
    assert mac.without_gpus().gpus == ()
