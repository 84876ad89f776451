"""The Load dialog's speculative decoding: off, n-gram lookup, or a draft model.

Speculation makes one stream faster without changing its output: something cheap
proposes the next few tokens and the model checks them all in one step. "N-gram" looks
the proposal up in the conversation itself (no second model: it pays off when replies
repeat earlier text, as code edits do); "Draft model" asks a small model of the same
family, loaded beside this one. The worker adapts the draft length and stops drafting
when proposals keep being rejected (``engine/speculative.py``).

A draft model must mean the same tokens as the target. The worker compares the two
vocabularies token by token when it loads them and refuses a mismatch with a message
that names both (``load_errors`` words it plainly). Before that, this section judges
each library model from its header (``vocab_mismatch``: tokenizer kind, special
tokens, vocabulary size, the same limits as llama.cpp), lists the compatible ones
first and smallest first, and refuses a mismatched choice on the spot, saying why.

With a draft model chosen, the dialog's speed estimate stays the plain one and adds only
what can be justified: the ceiling that the two models' per-token costs allow
(``hardware.speed.speculation_ceiling``), with its basis and the measured gains in the
tooltip (``speed_note``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox, QSpinBox, QVBoxLayout, QWidget

from hearth.core.model_info import LoadConfig, SpecMode
from hearth.core.units import format_bytes
from hearth.hardware import MemoryBreakdown
from hearth.hardware.speed import (
    Bandwidth,
    active_fraction,
    format_speed,
    speculation_ceiling,
    speed_for_layers,
)
from hearth.library import LocalModel
from hearth.library.gguf_metadata import GgufMetadata
from hearth.ui.dialogs.load_sections import ToneLabel, compact_combo
from hearth.ui.widgets.section import Section

log = logging.getLogger(__name__)

# llama.cpp's limit (common/speculative.cpp), also engine/drafters.py's: vocabulary
# sizes may differ by padding, no more. Repeated here: the GUI never imports the engine.
VOCAB_MAX_SIZE_DIFFERENCE = 128
DEFAULT_DRAFT_MAX = LoadConfig(model_path=Path()).draft_max
MODE_LABELS = (
    (SpecMode.OFF, "Off"),
    (SpecMode.NGRAM, "N-gram lookup (no second model)"),
    (SpecMode.DRAFT, "Draft model"),
)
MODE_NOTES = {
    SpecMode.OFF: "Each token is computed by the model alone.",
    SpecMode.NGRAM: (
        "Proposes text that repeats the prompt or the reply so far, checked in one step: "
        "faster code edits, refactors and quoting; no extra memory."
    ),
    SpecMode.DRAFT: (
        "A small model of the same family drafts tokens that this model checks in one "
        "step: faster single replies when the two agree. Drafting backs off by itself "
        "when they don't, or when many requests are busy."
    ),
}
_TOKENIZER_KEYS = (
    ("tokenizer.ggml.model", "their tokenizers are of different kinds"),
    ("tokenizer.ggml.bos_token_id", "their beginning-of-text tokens differ"),
    ("tokenizer.ggml.add_bos_token", "they add the beginning-of-text token differently"),
    ("tokenizer.ggml.eos_token_id", "their end-of-text tokens differ"),
)


def vocab_mismatch(target: GgufMetadata, draft: GgufMetadata) -> str | None:
    """Why ``draft`` can't draft for ``target``, as far as the headers tell; None when
    they look compatible (the worker's token-by-token check has the last word)."""
    for key, reason in _TOKENIZER_KEYS:
        if target.kv.get(key) != draft.kv.get(key):
            return reason
    a, b = target.vocab_size or 0, draft.vocab_size or 0
    if abs(a - b) > VOCAB_MAX_SIZE_DIFFERENCE:
        return f"their vocabularies have {a:,} and {b:,} tokens"
    return None


MEASURED_GAINS = (
    "Measured on a test pair built to agree (docs/benchmarks.md, one CPU thread): "
    "1.8-2.2x with every draft accepted, 1.3-1.5x with about 70% accepted. When the two "
    "models disagree it gains nothing, and the worker stops drafting."
)


def speed_note(plain_tok_s: float, draft_tok_s: float | None, draft_max: int) -> tuple[str, str]:
    """The Load dialog's speed line and its tooltip. Without a draft model: the plain
    estimate and no tooltip. With one: the plain estimate, said to be without
    speculation, and the most the draft could add (an upper bound, explained)."""
    plain = format_speed(plain_tok_s)
    if draft_tok_s is None or plain_tok_s <= 0:
        return f"Estimated speed here: {plain}.", ""
    cost = plain_tok_s / draft_tok_s if draft_tok_s > 0 else 1.0
    ceiling = speculation_ceiling(plain_tok_s, draft_tok_s, draft_max)
    basis = (
        f"Basis: a drafted token takes about {cost:.0%} of this model's time per token "
        "(each model's estimate from the memory it reads per token, here). A step "
        f"drafts up to {draft_max} tokens and "
        "this model checks them in one pass; if it accepts them all, and checking costs "
        "what one token does, a step gives "
        f"{draft_max + 1} tokens for {1 + draft_max * cost:.1f} tokens' time. That is a "
        "ceiling: on a CPU checking several tokens costs more than one. " + MEASURED_GAINS
    )
    if ceiling < 1.1:
        return (
            f"Estimated speed here: {plain}. The draft model is too large to make this "
            f"model faster (a drafted token costs {cost:.0%} of one of its own).",
            basis,
        )
    return (
        f"Estimated speed here: {plain} without speculation; the draft model can make it "
        f"at most {ceiling:.1f}x faster, and only when this model accepts every draft.",
        basis,
    )


def mismatch_message(target: str, draft: str, reason: str) -> str:
    return (
        f"{draft} can't draft for {target}: {reason}. A draft model must use the same "
        "vocabulary: pick a smaller model of the same family, or use n-gram lookup."
    )


@dataclass(frozen=True)
class DraftCandidate:
    model: LocalModel
    problem: str | None  # why it can't draft for the target (None: it can, it seems)


def draft_candidates(
    models: list[LocalModel], target: Path, meta: GgufMetadata | None
) -> list[DraftCandidate]:
    """Library models that could draft for ``target``: compatible first, smallest first."""
    found = []
    for model in models:
        if not model.ok or model.kind != "model" or model.path == target:
            continue
        problem = None
        if meta is not None and model.metadata is not None:
            problem = vocab_mismatch(meta, model.metadata)
        found.append(DraftCandidate(model, problem))
    return sorted(found, key=lambda c: (c.problem is not None, c.model.size_bytes))


class SpeculationSection(QObject):
    """Mode, draft model and draft length; ``changed`` on every change. Its fields go
    in a card of their own (``add_to``), laid out as the dialog's other cards."""

    changed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        self._target = Path()
        self._target_meta: GgufMetadata | None = None
        self._models: list[LocalModel] = []
        self._candidates: list[DraftCandidate] = []
        self._pending: dict[str, Any] | None = None  # saved choices awaiting the library
        self.section: Section | None = None  # the card, once ``add_to`` made it
        self.mode_combo = QComboBox(parent)
        self.mode_combo.setAccessibleName("Speculative decoding")
        for mode, label in MODE_LABELS:
            self.mode_combo.addItem(label, mode.value)
        self.draft_combo = QComboBox(parent)
        self.draft_combo.setAccessibleName("Draft model")
        self.draft_combo.setToolTip("Library models, the same vocabulary first, smallest first")
        compact_combo(self.draft_combo, 24)  # long names must not widen the dialog
        self.max_spin = QSpinBox(parent)
        self.max_spin.setAccessibleName("Most tokens drafted per step")
        self.max_spin.setRange(1, 64)
        self.max_spin.setValue(DEFAULT_DRAFT_MAX)
        self.max_spin.setSuffix(" tokens")
        self.max_spin.setToolTip("The most drafted per step; it adapts below this")
        self.note = ToneLabel("specNote", "Speculative decoding note", parent)
        self.note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.mode_combo.activated.connect(self._user_chose)
        self.draft_combo.activated.connect(self._user_chose)
        self.mode_combo.currentIndexChanged.connect(self._changed)
        self.draft_combo.currentIndexChanged.connect(self._changed)
        self.max_spin.valueChanged.connect(self._changed)
        self._fill()
        self._changed()

    def add_to(self, layout: QVBoxLayout) -> Section:
        """Put the fields in a card of their own at the end of ``layout``."""
        self.section = Section(
            "Speculation", "Faster replies, the same output: cheap guesses checked in one step.",
            self._parent,
        )  # fmt: skip
        self.section.add_row("Mode", self.mode_combo)
        self.section.add_row("Draft model", self.draft_combo)
        self.section.add_row("Draft up to", self.max_spin)
        self.section.body.addWidget(self.note)
        layout.addWidget(self.section)
        return self.section

    # ------------------------------------------------------------------ inputs
    def set_models(self, models: list[LocalModel]) -> None:
        """The library's models (read on a worker thread by the dialog's model picker)."""
        self._models = list(models)
        self._fill()
        pending, self._pending = self._pending, None
        if pending is not None:
            self.restore(pending)
        self._changed()

    def _user_chose(self) -> None:
        self._pending = None  # the user's choice wins over saved ones still to restore

    def set_target(self, path: Path, meta: GgufMetadata | None) -> None:
        """The model to draft for; its header (None until read) judges the candidates."""
        self._target, self._target_meta = Path(path), meta
        self._fill()
        self._changed()

    def _fill(self) -> None:
        chosen = self.draft_path()
        self._candidates = draft_candidates(self._models, self._target, self._target_meta)
        self.draft_combo.blockSignals(True)
        self.draft_combo.clear()
        if not self._candidates:
            self.draft_combo.addItem("No other model in the library", None)
        for cand in self._candidates:
            m = cand.model
            quant = m.metadata.quantization if m.metadata else ""
            parts = [m.name, quant, format_bytes(m.size_bytes)]
            if cand.problem is not None:
                parts.append("other vocabulary")
            self.draft_combo.addItem(" · ".join(p for p in parts if p), str(m.path))
        if chosen is not None:
            self._select(chosen)
        self.draft_combo.blockSignals(False)

    def _select(self, path: Path) -> bool:
        index = self.draft_combo.findData(str(path))
        if index >= 0:
            self.draft_combo.setCurrentIndex(index)
        return index >= 0

    # ------------------------------------------------------------------ state
    def mode(self) -> SpecMode:
        return SpecMode(str(self.mode_combo.currentData()))

    def draft_path(self) -> Path | None:
        data = self.draft_combo.currentData()
        return Path(data) if isinstance(data, str) else None

    def _candidate(self) -> DraftCandidate | None:
        path = self.draft_path()
        return next((c for c in self._candidates if c.model.path == path), None)

    def draft_meta(self) -> GgufMetadata | None:
        """The chosen draft's header, when a usable draft model is chosen."""
        cand = self._candidate() if self.mode() is SpecMode.DRAFT else None
        return cand.model.metadata if cand is not None and cand.problem is None else None

    def speed_line(
        self, plain_tok_s: float, draft: MemoryBreakdown | None, gpu_layers: int, bw: Bandwidth
    ) -> tuple[str, str]:
        """The dialog's speed line and tooltip (``speed_note``) for ``plain_tok_s``, with
        ``draft`` (the chosen draft's memory) placed by the same ``gpu_layers``."""
        meta = self.draft_meta()
        draft_tok_s = None
        if draft is not None and meta is not None:
            draft_tok_s = speed_for_layers(draft, gpu_layers, bw, active_fraction(meta))
        return speed_note(plain_tok_s, draft_tok_s, self.max_spin.value())

    def problem(self) -> str | None:
        """Why these choices can't be loaded (the Load button waits), else None."""
        if self.mode() is not SpecMode.DRAFT:
            return None
        cand = self._candidate()
        if cand is None:
            return "Choose a draft model: a smaller model of the same family, in the library."
        if cand.problem is not None:
            return mismatch_message(self._target.name, cand.model.path.name, cand.problem)
        return None

    def options(self) -> dict[str, Any]:
        """``LoadOptions`` fields: spec_mode, draft_model, draft_max."""
        mode = self.mode()
        draft = self.draft_path() if mode is SpecMode.DRAFT else None
        return {
            "spec_mode": mode.value,
            "draft_model": str(draft) if draft is not None else None,
            "draft_max": self.max_spin.value() if mode is not SpecMode.OFF else None,
        }

    def reset(self) -> None:
        self._pending = None
        self.mode_combo.setCurrentIndex(0)
        self.max_spin.setValue(DEFAULT_DRAFT_MAX)

    def restore(self, saved: dict[str, Any]) -> None:
        """Put back saved choices (``load_choices``). A saved draft model waits for the
        library's list; one no longer in it leaves the mode at its default."""
        if isinstance(saved.get("draft_max"), int):
            self.max_spin.setValue(saved["draft_max"])
        mode = saved.get("spec_mode")
        draft = saved.get("draft_model")
        if mode == SpecMode.DRAFT.value and not (
            isinstance(draft, str) and self._select(Path(draft))
        ):
            if not self._models:
                self._pending = dict(saved)
            return
        index = self.mode_combo.findData(mode)
        if index >= 0:
            self.mode_combo.setCurrentIndex(index)

    def _changed(self) -> None:
        mode = self.mode()
        self.draft_combo.setEnabled(mode is SpecMode.DRAFT and bool(self._candidates))
        self.max_spin.setEnabled(mode is not SpecMode.OFF)
        problem = self.problem()
        self.note.set_tone("danger" if problem else "muted")
        self.note.setText(problem or MODE_NOTES[mode])
        self.changed.emit()
