"""First run: what this machine has, and which recommended models suit it.

Shown once on first start (``Settings.first_run_done``) and from the Help menu
(:data:`WELCOME_TITLE`). The models come from the one table of picks (``hub.picks``,
the file Discover opens on): one row per category, its best fit for this machine
(``hub.picks.suggestions``), each with a fit chip (green, amber, red, as in Discover).
The hardware probe, the llama.cpp backend query and the memory-bandwidth measurement
(the app's shared one, for the speed estimates) run on worker threads, and the rows
appear when they have answered. When the machine has a GPU that this llama.cpp build
can't use (a source install built CPU-only), a notice says so with the command that
rebuilds it (``hardware.offload_notice``): otherwise models silently run many times
slower.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from hearth.config.launch import is_packaged
from hearth.core.units import format_bytes
from hearth.hardware import SystemMemory, probe_system
from hearth.hardware.fit import FitVerdict
from hearth.hardware.offload_notice import offload_notice, rebuild_command
from hearth.hardware.speed import Bandwidth, RoughFit, format_speed
from hearth.hub.picks import Pick, PicksFile, default_picks, judge, pick_speed, suggestions
from hearth.supervisor.backend_probe import BackendProbe
from hearth.ui.fit_chip import SLOW_TOK_S, Chip, ChipLevel, FitChip, cell_chip, chip_cell
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.quant_table import size_chip_column
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

WELCOME_TITLE = "Welcome and recommended models"  # the Help menu's entry; messages cite it

FIT_WORDS = {
    FitVerdict.FULL_GPU: "Fits on the GPU",
    FitVerdict.PARTIAL_GPU: "Fits, partly on the GPU",
    FitVerdict.CPU_ONLY: "Fits in RAM (CPU)",
    FitVerdict.WONT_FIT: "Too big for this machine",
}


def fit_chip(fit: RoughFit, system: SystemMemory, tok_s: float | None = None) -> Chip:
    """The coloured chip for a row. ``system`` is the machine as it is: running in RAM
    beside a GPU there is (one this build can't use) is amber, as is a tight fit or a
    crawl (under ``SLOW_TOK_S``, as Discover's chips). ``tok_s`` adds the estimate."""
    level = {
        FitVerdict.FULL_GPU: ChipLevel.GOOD,
        FitVerdict.PARTIAL_GPU: ChipLevel.WARN,
        FitVerdict.WONT_FIT: ChipLevel.BAD,
    }.get(fit.verdict, ChipLevel.WARN if system.gpus else ChipLevel.GOOD)
    words = FIT_WORDS[fit.verdict]
    if fit.tight and level is ChipLevel.GOOD:
        level, words = ChipLevel.WARN, f"{words}, tight"
    if tok_s is not None and tok_s < SLOW_TOK_S and level is ChipLevel.GOOD:
        level, words = ChipLevel.WARN, f"{words}, slow"
    tip = f"Needs about {format_bytes(fit.need_bytes)} with a 4K context."
    if speed := format_speed(tok_s):
        words, tip = f"{words} · {speed}", f"{tip} Estimated speed here: {speed}."
    return Chip(level, words, tip, tok_s)


@dataclass(frozen=True)
class BackendInfo:
    name: str  # "CUDA", "Metal", "Vulkan", "CPU"...
    gpu_offload: bool
    details: str = ""
    error: str | None = None  # the probe failed: a broken library, not a CPU-only one


def backend_name(system_info: str, gpu_offload: bool) -> str:
    text = system_info.upper()
    for key, label in (
        ("CUDA", "CUDA"),
        ("METAL", "Metal"),
        ("VULKAN", "Vulkan"),
        ("HIP", "ROCm/HIP"),
        ("SYCL", "SYCL"),
    ):
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


def hardware_summary(system: SystemMemory, backend: BackendInfo | None) -> str:
    lines = [
        f"CPU: {system.physical_cores} cores ({system.logical_cores} threads)",
        f"RAM: {format_bytes(system.total_ram)} ({format_bytes(system.available_ram)} free)",
    ]
    if system.gpus:
        for gpu in system.gpus:
            lines.append(
                f"GPU: {gpu.name}, {format_bytes(gpu.total_bytes)} "
                f"({format_bytes(gpu.free_bytes)} free)"
            )
    else:
        lines.append("GPU: none found (models run on the CPU)")
    if backend is None:
        lines.append("llama.cpp backend: checking…")
    else:
        offload = "GPU offload available" if backend.gpu_offload else "CPU only"
        lines.append(f"llama.cpp backend: {backend.name} ({offload})")
    return "\n".join(lines)


class FirstRunDialog(QDialog):
    """Welcome: hardware summary, and the best fit of each category of picks."""

    ready = Signal()  # the probes finished and the table shows fits
    model_chosen = Signal(str, str)  # repo, file (double-click a row)

    def __init__(
        self,
        *,
        system: SystemMemory | None = None,
        backend: BackendInfo | None = None,
        backend_probe: BackendProbe | None = None,
        picks: PicksFile | None = None,
        speed: MachineSpeed | None = None,
        parent: QWidget | None = None,
    ) -> None:
        """``system`` and ``backend`` skip their probes; ``picks`` replaces the shipped
        table (tests). ``speed`` is the app's shared bandwidth measurement (Discover's):
        with it the rows are chosen and labelled by speed too; without, by size."""
        super().__init__(parent)
        self._backend_probe = backend_probe or BackendProbe()
        self.setWindowTitle("Welcome to Hearth")
        self.setAccessibleName("Welcome to Hearth")
        self.resize(760, 560)
        self.system = system
        self.backend = backend
        self.picks = picks or default_picks()
        self.models: list[Pick] = []  # the rows, once the machine is known
        self.fits: list[RoughFit] = []
        self.speed = speed
        self.bandwidth: Bandwidth | None = None
        self._tasks = TaskSet()
        intro = QLabel(
            "<h2>Welcome to Hearth</h2>Run language models privately on this machine. "
            "Here is what it has, and the model of each kind that suits it best. "
            "Double-click a row to open it in Discover, which has more picks.",
            self,
        )
        intro.setWordWrap(True)
        self.hardware_label = QLabel("Checking this machine…", self)
        self.hardware_label.setAccessibleName("Hardware summary")
        self.hardware_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.offload_label = QLabel(self)  # GPU present, CPU-only build: how to fix it
        self.offload_label.setObjectName("offloadNotice")
        self.offload_label.setAccessibleName("GPU offload notice")
        self.offload_label.setWordWrap(True)
        self.offload_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.offload_label.hide()
        self.copy_command_button = QPushButton("Copy the rebuild command", self)
        self.copy_command_button.setAccessibleName("Copy the command that rebuilds llama.cpp")
        self.copy_command_button.clicked.connect(self._copy_command)
        self.copy_command_button.hide()
        self.rebuild_command = ""
        self.table = QTableWidget(0, 5, self)
        self.table.setAccessibleName("Recommended models")
        self.table.setHorizontalHeaderLabels(["Model", "For", "Quant", "Size", "Fit"])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(48)  # a chip; name and blurb
        self.table.setWordWrap(False)  # the blurb is elided; its tooltip has it all
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Fixed)  # sized to its chips
        self.table.cellDoubleClicked.connect(self._chosen)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        close = buttons.button(QDialogButtonBox.StandardButton.Close)
        close.setAccessibleName("Close the welcome window")
        close.clicked.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.hardware_label)
        layout.addWidget(self.offload_label)
        layout.addWidget(self.copy_command_button, 0, Qt.AlignmentFlag.AlignRight)
        layout.addWidget(self.table, 1)
        layout.addWidget(buttons)
        self.probe_task = self._tasks.spawn(self._probe(), name="first-run-probe")

    async def _probe(self) -> None:
        if self.system is None:
            self.system = await in_thread(probe_system)
        self.hardware_label.setText(hardware_summary(self.system, self.backend))
        if self.backend is None:
            self.backend = await in_thread(probe_backend, self._backend_probe)
        self.hardware_label.setText(hardware_summary(self.system, self.backend))
        self._show_offload_notice()
        if self.speed is not None:
            try:
                self.bandwidth = await self.speed.bandwidth(self._seen())
            except Exception:
                log.exception("no bandwidth measurement: the picks are judged by size")
        self._show_fits()
        self.ready.emit()

    def _show_offload_notice(self) -> None:
        assert self.system is not None and self.backend is not None
        packaged = is_packaged()
        notice = offload_notice(
            self.system,
            self.backend.gpu_offload,
            packaged=packaged,
            probe_error=self.backend.error,
        )
        self.offload_label.setText(notice or "")
        self.offload_label.setVisible(notice is not None)
        # A source install rebuilds with one command: a button puts it on the clipboard.
        fixable = notice is not None and not packaged
        self.rebuild_command = rebuild_command(self.system.gpus[0]) if fixable else ""
        self.copy_command_button.setVisible(fixable)

    def _copy_command(self) -> None:
        QGuiApplication.clipboard().setText(self.rebuild_command)
        self.copy_command_button.setText("Copied: paste it in a terminal")

    def _seen(self) -> SystemMemory:
        """The machine as llama.cpp sees it: without its GPUs when the build can't use
        them."""
        assert self.system is not None
        offload = self.backend.gpu_offload if self.backend else True
        return self.system if offload else self.system.without_gpus()

    def _show_fits(self) -> None:
        """One row per category: its best fit on the machine as llama.cpp sees it."""
        assert self.system is not None
        seen = self._seen()
        self.models = suggestions(self.picks, seen, self.bandwidth)
        self.fits = [judge(m, seen) for m in self.models]
        self.table.setRowCount(len(self.models))
        for row, (m, fit) in enumerate(zip(self.models, self.fits, strict=True)):
            kind = self.picks.categories.get(m.category, m.category)
            name = f"{m.name}\n{m.description}" if m.description else m.name
            for col, text in enumerate((name, kind, m.quant, format_bytes(m.size_bytes))):
                item = QTableWidgetItem(text)
                item.setToolTip(f"{m.repo}\n{m.description}")
                self.table.setItem(row, col, item)
            self.table.setCellWidget(row, 4, chip_cell())
            if (chip := self.chip(row)) is not None:
                tok_s = pick_speed(m, fit, self.bandwidth)
                chip.set_chip(fit_chip(fit, self.system, tok_s))
        size_chip_column(self.table, 4)

    def chip(self, row: int) -> FitChip | None:
        return cell_chip(self.table.cellWidget(row, 4))

    def _chosen(self, row: int, _col: int) -> None:
        m = self.models[row]
        self.model_chosen.emit(m.repo, m.file)

    def done(self, result: int) -> None:
        self._tasks.cancel_all()
        super().done(result)
