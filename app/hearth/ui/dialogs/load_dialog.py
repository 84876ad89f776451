"""The Load dialog: how to load one model, with a live memory estimate.

Laid out as LM Studio's load panel, on the app's cards (``load_form``): the model
(any in the library: ``model_choice``; switching re-reads its header and restores its
own saved choices) and its facts on top; GPU offload with Auto-fit and the context
first; "Advanced" (slots, KV cache, flash attention, threads, mmap/mlock, chat format)
folded; the vision projector (``load_vision``) and speculation (``load_speculation``)
cards of their own; the estimate pinned at the
foot (``load_summary``) above Load. The estimate comes from the GGUF headers (read on a
worker thread) and ``hearth.hardware``'s memory model, cheap enough to redo on every
change, a draft model included. The choices are remembered per model (by path).

A remote model (``engine/model``) has no memory controls here (``load_remote``), and
a GPU this llama.cpp build can't use is said with the command that rebuilds it
(``load_facts``, with the model's facts line); the estimate then counts the CPU, as
the worker will.
``place_layers``, ``plain_load_error`` and ``saved_load_options`` stay importable here.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from hearth.config.engines import EngineRegistry
from hearth.hardware import ContextPlan, MemoryBreakdown, SystemMemory, estimate_memory
from hearth.hardware.fit import FitVerdict, estimate_fit
from hearth.hardware.probe import probe_system
from hearth.hardware.speed import Bandwidth, active_fraction, speed_for_layers
from hearth.library import Library
from hearth.library.gguf_metadata import GgufMetadata, read_metadata
from hearth.supervisor import LoadOptions
from hearth.supervisor.backend_probe import BackendProbe
from hearth.supervisor.client import ResidencyStatus
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_choices import choices_to_save, model_key, saved_load_options
from hearth.ui.dialogs.load_errors import plain_load_error
from hearth.ui.dialogs.load_facts import facts_line, offload_for
from hearth.ui.dialogs.load_form import (
    DEFAULT_CONTEXT,
    FLASH_CHOICES,
    MAX_CONTEXT,
    LoadForm,
    notice_label,
)
from hearth.ui.dialogs.load_placement import Placement, place_layers
from hearth.ui.dialogs.load_remote import remote_engine, remote_note
from hearth.ui.dialogs.load_residents import ResidentChoice
from hearth.ui.dialogs.load_sections import (
    FittingScroll,
    compact_combo,
    grow_to_hint,
    primary_button,
)
from hearth.ui.dialogs.load_speculation import SpeculationSection
from hearth.ui.dialogs.load_summary import EstimatePanel, parts_of
from hearth.ui.dialogs.load_vision import VisionSection
from hearth.ui.dialogs.model_choice import ModelChoice
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

ADVANCED_OPEN = "load_dialog_advanced_open"  # settings key: the Advanced card unfolded

__all__ = ["DEFAULT_CONTEXT", "FLASH_CHOICES", "MAX_CONTEXT", "LoadDialog", "Placement",
           "place_layers", "plain_load_error", "saved_load_options"]  # fmt: skip


class LoadDialog(QDialog):
    """Choose how to load ``model_path``; ``load_options()`` is the result.

    For a remote model (``remote_model`` is its name) there is nothing to choose: the
    dialog says where it runs, and accepting it means "use it"."""

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
        backend: BackendProbe | None = None,
        engines: EngineRegistry | None = None,
        loaded: ResidencyStatus | None = None,
    ) -> None:
        """``library``: the models to switch to; ``speed``: the memory bandwidth (default:
        kept in ``store``, or measured now); ``backend``: can llama.cpp offload (None:
        assume so, no notice); ``engines`` tells remote models from local ones;
        ``loaded``: the worker's loaded models (Load alongside or Replace)."""
        super().__init__(parent)
        self.model_path = Path(model_path)
        self.store = store
        self.system = system
        self.backend = backend
        self.engines = engines or EngineRegistry()
        self.meta: GgufMetadata | None = None
        self.error: str | None = None
        self.offload_text: str | None = None
        self._memory: MemoryBreakdown | None = None
        self._memory_plan: tuple[ContextPlan, bool] | None = None
        self._tasks = TaskSet()
        self.speed = speed or MachineSpeed(store)
        self.bandwidth: Bandwidth | None = None
        self.setAccessibleName("Load model dialog")
        self.setMinimumWidth(600)  # the cards' hints on two lines at most
        self.remote_model = str(model_path) if remote_engine(model_path, self.engines) else None
        self._loaded = loaded
        self.model_combo = ModelChoice(self.model_path, library or Library(), self._tasks, self,
                                       label=self.remote_model)  # fmt: skip
        compact_combo(self.model_combo, 30)  # a long name must not widen the dialog
        self._build()
        self.model_combo.model_chosen.connect(self.switch_model)
        self.model_combo.filled.connect(self._library_read)
        self._show_model(str(model_path))
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
        self.info_label.setText("Reading the model's header…")
        self.form.reset()
        self.spec.reset()
        self._show_model(str(path))
        self.info_task = self._tasks.spawn(self._read_info(), name="load-dialog-info")

    def _show_model(self, name: str) -> None:
        """Lay the dialog out for ``name``: the knobs for a local model, the remote
        note for an engine's model."""
        engine = remote_engine(name, self.engines)
        self.remote_model = name if engine is not None else None
        self.setWindowTitle(f"{'Use' if engine else 'Load'} {name if engine else Path(name).name}")
        for widget in (self.scroll_area, self.form, self.summary, self.estimate_label):
            widget.setVisible(engine is None)
        self.offload_label.setVisible(engine is None and self.offload_text is not None)
        self.remote_label.setVisible(engine is not None)
        if engine is not None:
            self.remote_label.setText(remote_note(name, engine))
            self.info_label.setText(f"Remote model on {engine.name} ({engine.kind.value})")
        self.residents.show_for(remote=engine is not None)  # Load, Load alongside, or Use
        if engine is None:
            self.form.restore(self.store.settings.model_load_options.get(self._key(), {}))
            saved = self.store.settings.model_load_options.get(self._key(), {})
            self.spec.set_target(self.model_path, None)
            self.spec.restore(saved)
            self.vision.set_target(self.model_path)
            self.vision.restore(saved)
        self._update_estimate()

    # ------------------------------------------------------------------ build
    def _build(self) -> None:
        """Top: the model and its facts. Middle, scrolled where the screen is small: the
        main knobs, "Advanced" (folded), Speculation. Foot: the estimate, then Load."""
        model_label = QLabel("Model", self)
        model_label.setProperty("role", "subtitle")
        model_label.setBuddy(self.model_combo)
        self.info_label = QLabel("Reading the model's header…", self)
        self.info_label.setObjectName("loadModelFacts")
        self.info_label.setProperty("role", "muted")
        self.info_label.setWordWrap(True)
        self.offload_label = notice_label(self, "offloadNotice", "GPU offload notice")
        self.remote_label = notice_label(self, "remoteNote", "Remote model note")

        self.form = LoadForm(self)  # aliases: tests and callers know the knobs by name
        self.gpu_slider, self.gpu_value = self.form.gpu_slider, self.form.gpu_value
        self.autofit_button, self.ctx_spin = self.form.autofit_button, self.form.ctx_spin
        self.ctx_warning, self.parallel_spin = self.form.ctx_warning, self.form.parallel_spin
        self.kv_combo, self.flash_combo = self.form.kv_combo, self.form.flash_combo
        self.threads_spin, self.format_combo = self.form.threads_spin, self.form.format_combo
        self.mmap_check, self.mlock_check = self.form.mmap_check, self.form.mlock_check
        self.vision = VisionSection(self.form, self._tasks)
        self.vision.add_to(self.form.sections)
        self.spec = SpeculationSection(self.form)
        self.spec.add_to(self.form.sections)
        self.form.sections.addStretch(1)
        self.scroll_area = FittingScroll(self.form, self)

        self.summary = EstimatePanel(self)
        self.estimate_label = self.summary.estimate_label

        self.buttons = QDialogButtonBox(self)
        self.load_button = primary_button(self.buttons, "Load", "Load the model", "load")
        cancel = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        cancel.setAccessibleName("Cancel")
        self.buttons.accepted.connect(self.accept)
        loaded = self._loaded or ResidencyStatus()
        self.residents = ResidentChoice(self.buttons, self.load_button, loaded.models,
                                        loaded.limits, self)  # fmt: skip
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE["l"], SPACE["l"], SPACE["l"], SPACE["l"])
        layout.setSpacing(SPACE["m"])
        model_row = QHBoxLayout()
        model_row.setSpacing(SPACE["m"])
        model_row.addWidget(model_label)
        model_row.addWidget(self.model_combo, 1)
        layout.addLayout(model_row)
        for widget in (self.info_label, self.offload_label, self.remote_label):
            layout.addWidget(widget)
        layout.addWidget(self.scroll_area, 1)
        layout.addWidget(self.summary)
        self.summary.body.addWidget(self.residents.label)  # the estimate counts them
        layout.addWidget(self.buttons)

        self.autofit_button.clicked.connect(self.auto_fit)
        self.gpu_slider.valueChanged.connect(self._update_estimate)
        for spin in (self.ctx_spin, self.parallel_spin):
            spin.valueChanged.connect(self._update_estimate)
        self.kv_combo.currentTextChanged.connect(self._update_estimate)
        self.ctx_spin.valueChanged.connect(self._update_ctx_warning)
        self.flash_combo.currentTextChanged.connect(self._update_estimate)
        self.spec.changed.connect(self._update_estimate)
        self.vision.changed.connect(self._update_estimate)
        self.form.advanced.set_expanded(self.store.settings.extra.get(ADVANCED_OPEN) is True)
        self.form.advanced.toggled.connect(self._advanced_toggled)

    def _library_read(self) -> None:
        self.spec.set_models(self.model_combo.models)
        self.vision.set_models(self.model_combo.projectors)

    def _advanced_toggled(self, expanded: bool) -> None:
        """Remember the fold for next time (a small JSON write), and make room."""
        self.store.settings.extra[ADVANCED_OPEN] = expanded
        self.store.save()
        grow_to_hint(self)

    # ------------------------------------------------------------------ info
    async def _read_info(self) -> None:
        if self.remote_model is not None:  # nothing of it is on this machine to read
            self.ready.emit()
            return
        try:
            meta = await in_thread(read_metadata, self.model_path)
        except Exception as exc:  # InvalidModelFileError, OSError...
            self.error = plain_load_error(f"{self.model_path.name}: not a gguf file: {exc}")
            self.info_label.setText(self.error)
            self._update_estimate()
            self.ready.emit()
            return
        if self.system is None:
            self.system = await in_thread(probe_system)
        if self.backend is not None and self.system.gpus:
            self.system, self.offload_text = await offload_for(self.system, self.backend)
            self.offload_label.setText(self.offload_text or "")
            self.offload_label.setVisible(self.offload_text is not None)
        self._set_meta(meta)
        if self.bandwidth is None:
            self.bandwidth = await self.speed.bandwidth(self.system)
            self._update_estimate()

    def _set_meta(self, meta: GgufMetadata) -> None:
        self.meta = meta
        self.spec.set_target(self.model_path, meta)
        self.vision.set_meta(meta)
        n_layers = meta.block_count or 0
        saved = self.store.settings.model_load_options.get(self._key(), {})
        self.gpu_slider.blockSignals(True)
        self.gpu_slider.setRange(0, n_layers)
        offload = n_layers > 0 and bool(self.system and self.system.gpus)  # else CPU only
        self.gpu_slider.setEnabled(offload)
        self.autofit_button.setEnabled(offload)
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
        self.info_label.setText(facts_line(meta, self.system, self.offload_text))
        self._update_estimate()
        if not saved and self.system is not None and self.system.gpus:
            self.auto_fit()
        self.ready.emit()

    def _update_ctx_warning(self) -> None:
        self.form.warn_past_trained(self.meta.context_length or 0 if self.meta else 0)

    # ------------------------------------------------------------------ estimate
    def plan(self) -> ContextPlan:
        return self.form.plan()

    def _gpu(self) -> bool:
        return bool(self.system and self.system.gpus and self.gpu_slider.value() > 0)

    def memory(self) -> MemoryBreakdown | None:
        if self.meta is None:
            return None
        plan, gpu = self.plan(), self._gpu()
        if self._memory is None or (plan, gpu) != self._memory_plan:
            self._memory = estimate_memory(self.meta, plan, gpu_offload=gpu)
            self._memory_plan = (plan, gpu)
        return self._memory

    def draft_memory(self) -> MemoryBreakdown | None:
        """The chosen draft model's memory: the same context and slots as the target."""
        draft = self.spec.draft_meta()
        return (
            None if draft is None else estimate_memory(draft, self.plan(), gpu_offload=self._gpu())
        )

    def placement(self) -> Placement | None:
        mem = self.memory()
        if mem is None or self.system is None:
            return None
        return place_layers(mem, self.gpu_slider.value(), self.system, self.draft_memory(),
                            self.vision.projector_bytes())  # fmt: skip

    def _update_estimate(self) -> None:
        n = self.gpu_slider.maximum()
        value = self.gpu_slider.value()
        self.gpu_value.setText("all" if n and value == n else f"{value} / {n}")
        problem = self.spec.problem() or self.vision.problem() if not self.remote_model else None
        self.load_button.setEnabled(self.error is None and problem is None)
        self.residents.set_enabled(self.load_button.isEnabled())
        place = self.placement()
        mem = self.memory()
        if place is None or mem is None:
            text = self.error or "Estimating memory…"
            self.summary.show_text(text, "Can't load" if self.error else "Estimating…")
            self.estimate_changed.emit(text)
            return
        draft = self.draft_memory()
        parts = parts_of(mem, draft, self.vision.projector_bytes())
        self.residents.update(sum(p.size for p in parts))
        words, speed_tip, tok_s = place.describe(), "", None
        if place.fits and self.bandwidth is not None and self.meta is not None:
            tok_s = speed_for_layers(mem, place.gpu_layers, self.bandwidth,
                                     active_fraction(self.meta))  # fmt: skip
            line, speed_tip = self.spec.speed_line(tok_s, draft, place.gpu_layers, self.bandwidth)
            words += f"\n{line}"
        self.summary.show_estimate(parts, place, tok_s, words, speed_tip)
        self.estimate_changed.emit(f"{self.summary.breakdown_text()}\n{words}")

    def auto_fit(self) -> int:
        """Set the slider to the most GPU layers that fit (the draft model's memory
        included); returns that count."""
        if self.meta is None or self.system is None:
            return self.gpu_slider.value()
        n = self.meta.block_count or 0
        best = 0
        if self.system.gpus:
            fit = estimate_fit(self.meta, self.plan(), self.system, draft=self.spec.draft_meta(),
                               projector_bytes=self.vision.projector_bytes())  # fmt: skip
            if fit.verdict is FitVerdict.FULL_GPU:
                best = n
            elif fit.verdict is FitVerdict.PARTIAL_GPU:
                best = fit.gpu_layers
        self.gpu_slider.setValue(best)
        self._update_estimate()
        return best

    # ------------------------------------------------------------------ result
    def load_options(self) -> LoadOptions:
        if self.remote_model is not None:
            return LoadOptions()  # the engine's own settings apply
        choices = {**self.spec.options(), **self.vision.options()}
        return self.form.load_options(self.meta is not None, choices)

    def accept(self) -> None:
        if self.remote_model is None:
            settings = self.store.settings
            settings.model_load_options[self._key()] = choices_to_save(self.load_options())
            settings.remember_model(self.model_path)
            self.store.save()
        super().accept()

    def done(self, result: int) -> None:
        self._tasks.cancel_all()
        super().done(result)
