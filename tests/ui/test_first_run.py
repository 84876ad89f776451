"""The Welcome window: a GPU that this llama.cpp build can't use is said, with the fix.

The dialog gets the machine and the backend as the probes would report them (a GPU
is not something a test machine can be made to have): a CUDA GPU with a CPU-only
build shows the notice with the rebuild command; a GPU build, a machine without a
GPU, or a broken library (its own message) show none. The fit chips are coloured by
what the build can do.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from PySide6.QtGui import QGuiApplication
from pytestqt.qtbot import QtBot

from hearth.core.units import GIB
from hearth.hardware.offload_notice import offload_notice
from hearth.hardware.probe import GpuInfo, SystemMemory
from hearth.ui.first_run import BackendInfo, FirstRunDialog, Fit
from hearth.ui.fit_chip import ChipLevel
from hearth.ui.style.theme import apply_theme

pytestmark = pytest.mark.ui

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

GPU = GpuInfo("NVIDIA GeForce RTX 4070", 12 * GIB, 11 * GIB, "cuda")
WITH_GPU = SystemMemory(32 * GIB, 24 * GIB, 8, 16, (GPU,))
NO_GPU = SystemMemory(32 * GIB, 24 * GIB, 8, 16)
CPU_BUILD = BackendInfo("CPU", False, "CPU : AVX2 = 1")
CUDA_BUILD = BackendInfo("CUDA", True, "CUDA : ARCHS = 890")
BROKEN = BackendInfo("unavailable", False, "libllama.so: cannot open", "libllama.so: cannot open")


def _welcome(qtbot: QtBot, arun, system: SystemMemory, backend: BackendInfo) -> FirstRunDialog:
    dialog = FirstRunDialog(system=system, backend=backend)
    qtbot.addWidget(dialog)
    dialog.show()
    arun(dialog.probe_task, timeout=10)
    return dialog


def _level(dialog: FirstRunDialog, row: int) -> ChipLevel:
    chip = dialog.chip(row)
    assert chip is not None
    return chip.level


def test_gpu_with_a_cpu_only_build_says_how_to_rebuild(qtbot: QtBot, arun, tmp_path: Path) -> None:
    dialog = _welcome(qtbot, arun, WITH_GPU, CPU_BUILD)
    assert dialog.offload_label.isVisible()
    text = dialog.offload_label.text()
    assert text == offload_notice(WITH_GPU, False)  # the one wording, not a copy
    assert "RTX 4070" in text and "CPU-only" in text
    assert "HEARTH_BACKEND=cuda bash scripts/bootstrap" in text
    assert "llama.cpp backend: CPU (CPU only)" in dialog.hardware_label.text()
    # The build can't offload, so nothing is judged to fit on the GPU; fitting in RAM
    # beside an unused GPU is amber, not green.
    assert Fit.GPU not in dialog.fits and Fit.PARTIAL not in dialog.fits
    levels = {fit: _level(dialog, row) for row, fit in enumerate(dialog.fits)}
    assert levels.get(Fit.CPU) is ChipLevel.WARN
    assert levels.get(Fit.NO, ChipLevel.BAD) is ChipLevel.BAD
    for theme in ("light", "dark"):  # for the docs: the notice as a user sees it
        apply_theme(theme)
        arun(asyncio.sleep(0.05))  # palette events
        shot = tmp_path / f"welcome-gpu-notice-{theme}.png"
        assert dialog.grab().save(str(shot))
        if os.environ.get("HEARTH_SAVE_DOCS_SCREENSHOT"):  # tests never write the repo
            shutil.copyfile(shot, DOCS / shot.name)
    assert dialog.copy_command_button.isVisible()  # the command, one click away
    dialog.copy_command_button.click()
    assert QGuiApplication.clipboard().text() == "HEARTH_BACKEND=cuda bash scripts/bootstrap"
    QGuiApplication.clipboard().clear()


@pytest.mark.parametrize(
    ("system", "backend"),
    [(WITH_GPU, CUDA_BUILD), (NO_GPU, CPU_BUILD), (WITH_GPU, BROKEN)],
    ids=["gpu-build", "no-gpu", "broken-library"],
)
def test_no_notice_when_there_is_nothing_to_fix(
    qtbot: QtBot, arun, system: SystemMemory, backend: BackendInfo
) -> None:
    dialog = _welcome(qtbot, arun, system, backend)
    assert not dialog.offload_label.isVisible() and not dialog.copy_command_button.isVisible()
    assert dialog.offload_label.text() == ""
    levels = [_level(dialog, row) for row in range(dialog.table.rowCount())]
    assert ChipLevel.UNKNOWN not in levels  # every row judged
    if backend is CUDA_BUILD:
        assert Fit.GPU in dialog.fits  # the small picks fit in 11 GiB of VRAM
        assert levels[dialog.fits.index(Fit.GPU)] is ChipLevel.GOOD
    if system is NO_GPU:
        assert levels[dialog.fits.index(Fit.CPU)] is ChipLevel.GOOD


def test_quick_start_says_a_gpu_goes_unused(
    qtbot: QtBot, arun, qloop: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The empty Chat page's "Get a recommended model" says so too: its messages stay
    on screen while the model downloads, when the Welcome window may be long closed."""
    from hearth.ui import quick_start
    from hearth.ui.main_window import MainWindow

    machines = iter([WITH_GPU, NO_GPU])
    monkeypatch.setattr(quick_start, "probe_system", lambda: next(machines))
    window = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(window)
    start = window.quick_start
    assert arun(start.cpu_note(CPU_BUILD)) == quick_start.CPU_NOTE  # GPU, CPU-only build
    assert arun(start.cpu_note(CPU_BUILD)) == ""  # no GPU: nothing to fix
    assert arun(start.cpu_note(CUDA_BUILD)) == ""  # the build offloads (not even probed)
    assert arun(start.cpu_note(BROKEN)) == ""  # a broken library has its own message
