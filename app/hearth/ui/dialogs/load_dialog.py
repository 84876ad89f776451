"""The Load dialog: how to load one model, with a live memory estimate.

GPU layers (slider, 0..n_layers), context length, KV-cache type, flash attention,
threads, mmap/mlock and parallel slots, for the model chosen at the top (any model in
the library: ``model_choice``; switching re-reads its header and restores its own
saved choices). The estimate comes from the GGUF header
(read on a worker thread once) and ``hearth.hardware``'s memory model, which is plain
arithmetic and cheap enough to redo on every change. "Auto-fit" picks the most GPU
layers that fit. The choices are remembered per model (by path) in the settings.

The memory arithmetic (``place_layers``) lives in ``load_placement``, the plain
wording of load failures (``plain_load_error``) in ``load_errors`` and the saved
choices (``saved_load_options``) in ``load_choices``; all stay importable from here
for existing callers.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from hearth.core.quantization import KV_CACHE_TYPES
from hearth.core.units import format_bytes
from hearth.hardware import ContextPlan, MemoryBreakdown, SystemMemory, estimate_memory
from hearth.hardware.fit import FitVerdict, estimate_fit
from hearth.hardware.probe import probe_system
from hearth.hardware.speed import Bandwidth, active_fraction, format_speed, speed_for_layers
from hearth.library import Library
from hearth.library.gguf_metadata import GgufMetadata, read_metadata
from hearth.supervisor import LoadOptions
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.chat_format_choice import ChatFormatCombo
from hearth.ui.dialogs.load_choices import choices_to_save, model_key, saved_load_options
from hearth.ui.dialogs.load_errors import plain_load_error
from hearth.ui.dialogs.load_placement import Placement, place_layers
from hearth.ui.dialogs.model_choice import ModelChoice
from hearth.ui.fit_chip import ChipLevel, chip_colors
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.style.theme import tokens_for
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_CONTEXT",
    "FLASH_CHOICES",
    "MAX_CONTEXT",
    "LoadDialog",
    "Placement",
    "place_layers",
    "plain_load_error",
    "saved_load_options",
]

FLASH_CHOICES = ("auto", "on", "off")
DEFAULT_CONTEXT = 4096
MAX_CONTEXT = 1 << 20


class LoadDialog(QDialog):
    """Choose how to load ``model_path``; ``load_options()`` is the result."""

    estimate_changed = Signal(str)
    ready = Signal()  # the model's header and the hardware are known

    def __init__(
        self,
        model_path: Path | str,
        store: SettingsStore,
        *,
        system: SystemMemory | None = None,
        parent: QWidget | None = None,
        library: Library | None = None,
        speed: MachineSpeed | None = None,
    ) -> None:
        """``library`` lists the models the dialog can switch to (default: the app's);
        ``speed`` has the memory bandwidth for the speed estimate (default: the one
        measured before and kept in ``store``, or measured now)."""
        super().__init__(parent)
        self.model_path = Path(model_path)
        self.store = store
        self.system = system
        self.meta: GgufMetadata | None = None
        self.error: str | None = None
        self._memory: MemoryBreakdown | None = None
        self._memory_plan: tuple[ContextPlan, bool] | None = None
        self._tasks = TaskSet()
        self.speed = speed or MachineSpeed(store)
        self.bandwidth: Bandwidth | None = None
        self.setWindowTitle(f"Load {self.model_path.name}")
        self.setAccessibleName("Load model dialog")
        self.setMinimumWidth(520)
        self._build()
        self.model_combo = ModelChoice(self.model_path, library or Library(), self._tasks, self)
        self.model_combo.model_chosen.connect(self.switch_model)
        model_row = QHBoxLayout()
        model_row.addWidget(QLabel("Model", self))
        model_row.addWidget(self.model_combo, 1)
        self.layout().insertLayout(0, model_row)  # type: ignore[union-attr]
        self.title_label.hide()  # the combo names the model
        self._restore(store.settings.model_load_options.get(self._key(), {}))
        self._update_estimate()
        self.info_task = self._tasks.spawn(self._read_info(), name="load-dialog-info")

    def _key(self) -> str:
        return model_key(self.model_path)

    def switch_model(self, path: Path) -> None:
        """Show ``path`` instead: its header, its saved choices and its estimate."""
        if Path(path) == self.model_path:
            return
        self.info_task.cancel()
        self.model_path = Path(path)
        self.meta = None
        self.error = None
        self._memory = None
        self._memory_plan = None
        self.setWindowTitle(f"Load {self.model_path.name}")
        self.title_label.setText(f"<b>{self.model_path.name}</b>")
        self.info_label.setText("Reading the model's header…")
        self.load_button.setEnabled(True)
        self.gpu_slider.blockSignals(True)
        self.gpu_slider.setRange(0, 0)
        self.gpu_slider.setEnabled(False)
        self.gpu_slider.blockSignals(False)
        self.autofit_button.setEnabled(False)
        self._reset_choices()
        self._restore(self.store.settings.model_load_options.get(self._key(), {}))
        self._update_estimate()
        self.info_task = self._tasks.spawn(self._read_info(), name="load-dialog-info")

    def _reset_choices(self) -> None:
        """The defaults, before a model's own saved choices are restored."""
        self.ctx_spin.setValue(DEFAULT_CONTEXT)
        self.parallel_spin.setValue(4)
        self.kv_combo.setCurrentText("f16")
        self.flash_combo.setCurrentText(FLASH_CHOICES[0])
        self.threads_spin.setValue(0)
        self.mmap_check.setChecked(True)
        self.mlock_check.setChecked(False)
        self.format_combo.reset()

    # ------------------------------------------------------------------ build
    def _build(self) -> None:
        self.title_label = QLabel(f"<b>{self.model_path.name}</b>", self)
        self.info_label = QLabel("Reading the model's header…", self)
        self.info_label.setWordWrap(True)

        self.gpu_slider = QSlider(Qt.Orientation.Horizontal, self)
        self.gpu_slider.setAccessibleName("GPU layers")
        self.gpu_slider.setRange(0, 0)
        self.gpu_slider.setEnabled(False)
        self.gpu_value = QLabel("0", self)
        self.gpu_value.setMinimumWidth(70)
        self.autofit_button = QPushButton("Auto-fit", self)
        self.autofit_button.setAccessibleName("Auto-fit GPU layers")
        self.autofit_button.setToolTip("Offload the most layers that fit in GPU memory")
        self.autofit_button.setEnabled(False)
        self.autofit_button.clicked.connect(self.auto_fit)
        gpu_row = QHBoxLayout()
        gpu_row.addWidget(self.gpu_slider, 1)
        gpu_row.addWidget(self.gpu_value)
        gpu_row.addWidget(self.autofit_button)

        self.ctx_spin = QSpinBox(self)
        self.ctx_spin.setAccessibleName("Context length")
        self.ctx_spin.setRange(256, MAX_CONTEXT)
        self.ctx_spin.setSingleStep(1024)
        self.ctx_spin.setSuffix(" tokens")
        self.ctx_spin.setValue(DEFAULT_CONTEXT)
        # Past the trained context a model usually degrades; allowed, but said next to it.
        self.ctx_warning = QLabel(self)
        self.ctx_warning.setObjectName("ctxWarning")
        self.ctx_warning.setAccessibleName("Context warning")
        self.ctx_warning.setStyleSheet(
            f"#ctxWarning {{ color: {tokens_for(self.palette()).danger}; }}"
        )
        self.ctx_warning.setWordWrap(True)
        self.ctx_warning.hide()
        ctx_row = QHBoxLayout()
        ctx_row.addWidget(self.ctx_spin)
        ctx_row.addWidget(self.ctx_warning, 1)
        self.parallel_spin = QSpinBox(self)
        self.parallel_spin.setAccessibleName("Parallel slots")
        self.parallel_spin.setRange(1, 64)
        self.parallel_spin.setValue(4)
        self.parallel_spin.setToolTip("Requests decoded at once; each gets the full context")
        self.kv_combo = QComboBox(self)
        self.kv_combo.setAccessibleName("KV cache type")
        self.kv_combo.addItems(list(KV_CACHE_TYPES))
        self.kv_combo.setCurrentText("f16")
        self.flash_combo = QComboBox(self)
        self.flash_combo.setAccessibleName("Flash attention")
        self.flash_combo.addItems(list(FLASH_CHOICES))
        self.threads_spin = QSpinBox(self)
        self.threads_spin.setAccessibleName("Threads")
        self.threads_spin.setRange(0, 256)
        self.threads_spin.setSpecialValueText("auto")
        self.mmap_check = QCheckBox("Memory-map the file (mmap)", self)
        self.mmap_check.setAccessibleName("Memory-map the file")
        self.mmap_check.setChecked(True)
        self.mlock_check = QCheckBox("Lock the model in RAM (mlock)", self)
        self.mlock_check.setAccessibleName("Lock the model in RAM")
        self.format_combo = ChatFormatCombo(self)  # tool-call/reasoning format: detect or name

        self.estimate_label = QLabel(self)
        self.estimate_label.setObjectName("loadEstimate")
        self.estimate_label.setAccessibleName("Memory estimate")
        self.estimate_label.setWordWrap(True)
        self.estimate_label.setMinimumHeight(self.fontMetrics().lineSpacing() * 4)
        self.estimate_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        form = QFormLayout()
        form.addRow("GPU layers", gpu_row)
        form.addRow("Context length", ctx_row)
        form.addRow("Parallel slots", self.parallel_spin)
        form.addRow("KV cache type", self.kv_combo)
        form.addRow("Flash attention", self.flash_combo)
        form.addRow("Threads", self.threads_spin)
        form.addRow("", self.mmap_check)
        form.addRow("", self.mlock_check)
        form.addRow("Chat format", self.format_combo)

        self.buttons = QDialogButtonBox(self)
        self.load_button = self.buttons.addButton("Load", QDialogButtonBox.ButtonRole.AcceptRole)
        self.load_button.setAccessibleName("Load the model")
        self.load_button.setDefault(True)
        cancel = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        cancel.setAccessibleName("Cancel")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(self.title_label)
        layout.addWidget(self.info_label)
        layout.addLayout(form)
        layout.addWidget(self.estimate_label)
        layout.addWidget(self.buttons)

        self.gpu_slider.valueChanged.connect(self._update_estimate)
        for spin in (self.ctx_spin, self.parallel_spin):
            spin.valueChanged.connect(self._update_estimate)
        self.kv_combo.currentTextChanged.connect(self._update_estimate)
        self.ctx_spin.valueChanged.connect(self._update_ctx_warning)
        self.flash_combo.currentTextChanged.connect(self._update_estimate)

    # ------------------------------------------------------------------ info
    async def _read_info(self) -> None:
        try:
            meta = await in_thread(read_metadata, self.model_path)
        except Exception as exc:  # InvalidModelFileError, OSError...
            self.error = plain_load_error(f"{self.model_path.name}: not a gguf file: {exc}")
            self.info_label.setText(self.error)
            self.load_button.setEnabled(False)
            self.ready.emit()
            return
        if self.system is None:
            self.system = await in_thread(probe_system)
        self._set_meta(meta)
        if self.bandwidth is None:
            self.bandwidth = await self.speed.bandwidth(self.system)
            self._update_estimate()

    def _set_meta(self, meta: GgufMetadata) -> None:
        self.meta = meta
        n_layers = meta.block_count or 0
        saved = self.store.settings.model_load_options.get(self._key(), {})
        self.gpu_slider.blockSignals(True)
        self.gpu_slider.setRange(0, n_layers)
        self.gpu_slider.setEnabled(n_layers > 0)
        self.autofit_button.setEnabled(n_layers > 0)
        ngl = saved.get("n_gpu_layers")
        if isinstance(ngl, int):
            self.gpu_slider.setValue(n_layers if ngl < 0 else min(ngl, n_layers))
        else:
            self.gpu_slider.setValue(n_layers if self.system and self.system.gpus else 0)
        self.gpu_slider.blockSignals(False)
        if meta.context_length and "n_ctx" not in saved:
            self.ctx_spin.setValue(min(DEFAULT_CONTEXT, meta.context_length))
        self._update_ctx_warning()
        self.format_combo.show_detected(meta.chat_template)
        gpus = ", ".join(g.name for g in self.system.gpus) if self.system else ""
        parts = [
            meta.architecture,
            meta.parameter_label,
            meta.quantization,
            f"{n_layers} layers",
            f"trained context {meta.context_length or '?'}",
        ]
        self.info_label.setText(
            " · ".join(p for p in parts if p)
            + ("" if gpus else "\nNo GPU found: the model runs on the CPU.")
        )
        self._update_estimate()
        if not saved and self.system is not None and self.system.gpus:
            self.auto_fit()
        self.ready.emit()

    def _update_ctx_warning(self) -> None:
        trained = self.meta.context_length if self.meta is not None else 0
        value = self.ctx_spin.value()
        if trained and value > trained:
            self.ctx_warning.setText(
                f"More than the {trained:,} tokens this model was trained on: "
                "replies may degrade past that."
            )
            self.ctx_warning.show()
        else:
            self.ctx_warning.hide()

    # ------------------------------------------------------------------ estimate
    def plan(self) -> ContextPlan:
        kv = self.kv_combo.currentText()
        return ContextPlan(
            n_ctx=self.ctx_spin.value(),
            n_slots=self.parallel_spin.value(),
            cache_type_k=kv,
            cache_type_v=kv,
            flash_attention={"on": True, "off": False}.get(self.flash_combo.currentText()),
        )

    def memory(self) -> MemoryBreakdown | None:
        if self.meta is None:
            return None
        plan = self.plan()
        gpu = bool(self.system and self.system.gpus and self.gpu_slider.value() > 0)
        if self._memory is None or (plan, gpu) != self._memory_plan:
            self._memory = estimate_memory(self.meta, plan, gpu_offload=gpu)
            self._memory_plan = (plan, gpu)
        return self._memory

    def placement(self) -> Placement | None:
        mem = self.memory()
        if mem is None or self.system is None:
            return None
        return place_layers(mem, self.gpu_slider.value(), self.system)

    def _update_estimate(self) -> None:
        n = self.gpu_slider.maximum()
        value = self.gpu_slider.value()
        self.gpu_value.setText("all" if n and value == n else f"{value} / {n}")
        place = self.placement()
        mem = self.memory()
        if place is None or mem is None:
            text = self.error or "Estimating memory…"
            self.estimate_label.setText(text)
            self.estimate_changed.emit(text)
            return
        text = (
            f"Weights {format_bytes(mem.weights_bytes)}, "
            f"KV cache {format_bytes(mem.kv_cache_bytes)}, "
            f"compute {format_bytes(mem.compute_bytes)}.\n{place.describe()}"
        )
        if place.fits and self.bandwidth is not None and self.meta is not None:
            tok_s = speed_for_layers(mem, place.gpu_layers, self.bandwidth,
                                     active_fraction(self.meta))  # fmt: skip
            text += f"\nEstimated speed here: {format_speed(tok_s)}."
        level = ChipLevel.GOOD if place.fits else ChipLevel.BAD
        color = chip_colors(tokens_for(self.palette()), level).text
        self.estimate_label.setStyleSheet(f"#loadEstimate {{ color: {color}; }}")
        self.estimate_label.setText(text)
        self.estimate_changed.emit(text)

    def auto_fit(self) -> int:
        """Set the slider to the most GPU layers that fit; returns that count."""
        if self.meta is None or self.system is None:
            return self.gpu_slider.value()
        n = self.meta.block_count or 0
        best = 0
        if self.system.gpus:
            fit = estimate_fit(self.meta, self.plan(), self.system)
            if fit.verdict is FitVerdict.FULL_GPU:
                best = n
            elif fit.verdict is FitVerdict.PARTIAL_GPU:
                best = fit.gpu_layers
        self.gpu_slider.setValue(best)
        self._update_estimate()
        return best

    # ------------------------------------------------------------------ result
    def _restore(self, saved: dict[str, Any]) -> None:
        if isinstance(saved.get("n_ctx"), int):
            self.ctx_spin.setValue(saved["n_ctx"])
        if isinstance(saved.get("n_parallel"), int):
            self.parallel_spin.setValue(saved["n_parallel"])
        if isinstance(saved.get("n_threads"), int):
            self.threads_spin.setValue(saved["n_threads"])
        if saved.get("cache_type_k") in KV_CACHE_TYPES:
            self.kv_combo.setCurrentText(saved["cache_type_k"])
        if saved.get("flash_attention") in FLASH_CHOICES:
            self.flash_combo.setCurrentText(saved["flash_attention"])
        if isinstance(saved.get("use_mmap"), bool):
            self.mmap_check.setChecked(saved["use_mmap"])
        if isinstance(saved.get("use_mlock"), bool):
            self.mlock_check.setChecked(saved["use_mlock"])
        self.format_combo.choose(saved.get("chat_format"))

    def load_options(self) -> LoadOptions:
        n = self.gpu_slider.maximum()
        value = self.gpu_slider.value()
        kv = self.kv_combo.currentText()
        return LoadOptions(
            n_ctx=self.ctx_spin.value(),
            n_parallel=self.parallel_spin.value(),
            n_gpu_layers=(-1 if n and value >= n else value) if self.meta else None,
            n_threads=self.threads_spin.value(),
            cache_type_k=kv,
            cache_type_v=kv,
            flash_attention=self.flash_combo.currentText(),
            use_mmap=self.mmap_check.isChecked(),
            use_mlock=self.mlock_check.isChecked(),
            chat_format=self.format_combo.chosen(),
        )

    def accept(self) -> None:
        settings = self.store.settings
        settings.model_load_options[self._key()] = choices_to_save(self.load_options())
        settings.remember_model(self.model_path)
        self.store.save()
        super().accept()

    def done(self, result: int) -> None:
        self._tasks.cancel_all()
        super().done(result)
