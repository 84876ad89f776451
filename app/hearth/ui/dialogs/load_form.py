"""The Load dialog's memory and runtime knobs, as one widget.

GPU layers (slider, 0..n_layers, with Auto-fit) and context length (with its warning
past the trained context) first, in their own card, as LM Studio's load panel has them;
parallel slots, KV-cache type, flash attention, threads, mmap, mlock and the chat
format in a folded "Advanced" card. They are one widget so the dialog can hide them all
at once: a remote model (an engine's) has none of them here, its server decides.
The dialog owns the logic (estimate, auto-fit); this module only builds, resets and
restores the fields, and turns them into a ``ContextPlan``.
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from hearth.core.quantization import KV_CACHE_TYPES
from hearth.hardware import ContextPlan
from hearth.supervisor import LoadOptions
from hearth.ui.dialogs.chat_format_choice import ChatFormatCombo
from hearth.ui.dialogs.load_sections import FoldingSection, ToneLabel
from hearth.ui.style.tokens import SPACE
from hearth.ui.widgets.section import Section

log = logging.getLogger(__name__)

FLASH_CHOICES = ("auto", "on", "off")
DEFAULT_CONTEXT = 4096
DEFAULT_SLOTS = 4
MAX_CONTEXT = 1 << 20


def notice_label(parent: QWidget, name: str, accessible: str) -> QLabel:
    """A hidden, wrapped, selectable note (its command can be copied). Its look is the
    app stylesheet's rule for ``name`` (``#offloadNotice`` is boxed in the warning
    colours of the theme of the moment); without one it is plain text."""
    label = QLabel(parent)
    label.setObjectName(name)
    label.setAccessibleName(accessible)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.hide()
    return label


class LoadForm(QWidget):
    """The knobs as cards: the two that matter most (GPU offload, context) on top, the
    rest under a folded "Advanced"; ``restore`` takes the dict ``load_choices`` saves.
    The dialog adds the Speculation card to ``sections``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
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
        self.ctx_warning = ToneLabel("ctxWarning", "Context warning", self)
        self.ctx_warning.set_tone("danger")
        self.ctx_warning.hide()
        self.parallel_spin = QSpinBox(self)
        self.parallel_spin.setAccessibleName("Parallel slots")
        self.parallel_spin.setRange(1, 64)
        self.parallel_spin.setValue(DEFAULT_SLOTS)
        self.parallel_spin.setToolTip("Requests decoded at once; each gets the full context")
        self.kv_combo = QComboBox(self)
        self.kv_combo.setAccessibleName("KV cache type")
        self.kv_combo.addItems(list(KV_CACHE_TYPES))
        self.kv_combo.setCurrentText("f16")
        self.flash_combo = QComboBox(self)
        self.flash_combo.setAccessibleName("Flash attention")
        self.flash_combo.addItems(list(FLASH_CHOICES))
        self.flash_combo.setToolTip(
            "Auto leaves it off on a CPU: on can be faster there, but a reply may then "
            "differ slightly depending on what was cached (docs/benchmarks.md)."
        )
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

        self.main_section = Section(
            "Offload and context",
            "How much of the model runs on the GPU, and how long a conversation it holds.",
            self,
            icon_kind="load",
        )
        self.main_section.add_wide_row("GPU offload", gpu_row,
                 "Layers on the GPU: more is faster. Auto-fit puts as many as fit.")  # fmt: skip
        self.main_section.add_row("Context length", self.ctx_spin,
                                  "Tokens of conversation the model sees at once.")  # fmt: skip
        self.main_section.body.addWidget(self.ctx_warning)

        self.advanced = FoldingSection(
            "Advanced",
            "Parallel slots, KV cache type, flash attention, threads, memory mapping and "
            "the chat format.",
            self,
        )
        self.advanced.add_row("Parallel slots", self.parallel_spin,
                              "Requests answered at once; each gets the full context.")  # fmt: skip
        self.advanced.add_row("KV cache type", self.kv_combo,
                              "q8_0 or q4_0 halve or quarter the cache's memory.")  # fmt: skip
        self.advanced.add_row("Flash attention", self.flash_combo,
                              "Less memory for long contexts; auto: off on a CPU.")  # fmt: skip
        self.advanced.add_row("Threads", self.threads_spin, "CPU threads; auto picks for you.")
        self.advanced.add_widget(self.mmap_check)
        self.advanced.add_widget(self.mlock_check)
        self.advanced.add_row("Chat format", self.format_combo,
                              "How tool calls and reasoning are read from replies.")  # fmt: skip

        self.sections = QVBoxLayout(self)
        self.sections.setContentsMargins(0, 0, 0, 0)
        self.sections.setSpacing(SPACE["m"])
        self.sections.addWidget(self.main_section)
        self.sections.addWidget(self.advanced)

    def reset(self) -> None:
        """The defaults, before a model's own saved choices are restored; no layers
        until its header is read."""
        self.gpu_slider.blockSignals(True)
        self.gpu_slider.setRange(0, 0)
        self.gpu_slider.setEnabled(False)
        self.gpu_slider.blockSignals(False)
        self.autofit_button.setEnabled(False)
        self.ctx_spin.setValue(DEFAULT_CONTEXT)
        self.parallel_spin.setValue(DEFAULT_SLOTS)
        self.kv_combo.setCurrentText("f16")
        self.flash_combo.setCurrentText(FLASH_CHOICES[0])
        self.threads_spin.setValue(0)
        self.mmap_check.setChecked(True)
        self.mlock_check.setChecked(False)
        self.format_combo.reset()

    def restore(self, saved: dict[str, Any]) -> None:
        """Put back the choices saved for a model (keys of ``choices_to_save``)."""
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

    def warn_past_trained(self, trained: int) -> None:
        """Say next to the field when the context asked for is past the ``trained`` one
        (0: unknown, no warning)."""
        if trained and self.ctx_spin.value() > trained:
            self.ctx_warning.setText(
                f"More than the {trained:,} tokens this model was trained on: "
                "replies may degrade past that."
            )
            self.ctx_warning.show()
        else:
            self.ctx_warning.hide()

    def plan(self) -> ContextPlan:
        """The context these fields ask for (the draft model gets the same one)."""
        kv = self.kv_combo.currentText()
        return ContextPlan(
            n_ctx=self.ctx_spin.value(),
            n_slots=self.parallel_spin.value(),
            cache_type_k=kv,
            cache_type_v=kv,
            flash_attention={"on": True, "off": False}.get(self.flash_combo.currentText()),
        )

    def n_gpu_layers(self, known: bool) -> int | None:
        """The worker's ``n_gpu_layers`` for the slider (-1: all); None before the
        model's header is ``known``."""
        n, value = self.gpu_slider.maximum(), self.gpu_slider.value()
        return (-1 if n and value >= n else value) if known else None

    def load_options(self, known: bool, speculation: dict[str, Any]) -> LoadOptions:
        """The knobs as the worker's load options (``speculation``: the Speculation
        card's); the GPU layers only once the model's header is ``known``."""
        kv = self.kv_combo.currentText()
        return LoadOptions(
            n_ctx=self.ctx_spin.value(),
            n_parallel=self.parallel_spin.value(),
            n_gpu_layers=self.n_gpu_layers(known),
            n_threads=self.threads_spin.value(),
            cache_type_k=kv,
            cache_type_v=kv,
            flash_attention=self.flash_combo.currentText(),
            use_mmap=self.mmap_check.isChecked(),
            use_mlock=self.mlock_check.isChecked(),
            chat_format=self.format_combo.chosen(),
            **speculation,
        )
