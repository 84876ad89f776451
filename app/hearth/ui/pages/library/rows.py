"""The Library table's rows: columns, cell texts, capability chips and fit estimates.

Kept apart from the page (``library.py``), which owns the actions (import, delete,
quantize, load): this is how one ``LocalModel`` looks in a row. The capability chips
show what the model's header says it can do (``library.capabilities``: tools,
reasoning, fill-in-middle, embedding), worked out off the Qt thread with the listing.

The fit chips (here and in the top bar's model picker: ``estimates``) judge the load
the Load dialog would start: with the draft model a model's saved choices name
(``saved_draft``), whose memory counts and whose name the chip's tooltip gives.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QWidget,
)

from hearth.core.model_info import LoadConfig
from hearth.core.units import format_bytes, format_count
from hearth.hardware.fit import ContextPlan, FitEstimate, estimate_fit
from hearth.hardware.probe import SystemMemory
from hearth.library import LocalModel, ModelSource
from hearth.library.capabilities import Capability, model_capabilities
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_choices import model_key, saved_load_options
from hearth.ui.style.theme_hook import ThemeHook, set_sheet
from hearth.ui.style.tokens import RADIUS, SPACE, Tokens

log = logging.getLogger(__name__)

COLUMNS = [
    "Name", "Quant", "Size", "Params", "Context", "Architecture", "Source", "Problem",
    "Can do", "Fit here", "",
]  # fmt: skip
COL_CAPS = COLUMNS.index("Can do")
COL_FIT = COLUMNS.index("Fit here")
COL_PROBLEM = COLUMNS.index("Problem")
# Under this page width these columns give way, so that what the user acts on (what the
# model can do, whether it fits, Load) stays on screen; the name's tooltip keeps them.
NARROW_BELOW = 1200
NARROW_HIDDEN = tuple(COLUMNS.index(c) for c in ("Params", "Context", "Architecture", "Source"))
FIT_CONTEXT = 4096  # the chips judge a load at this context (or the trained one if less)
_SOURCE_WORDS = {
    ModelSource.HEARTH: "Hearth",
    ModelSource.FOLDER: "Folder",
    ModelSource.IMPORTED: "Imported",
}


def make_table(columns: list[str], name: str, parent: QWidget) -> QTableWidget:
    table = QTableWidget(0, len(columns), parent)
    table.setHorizontalHeaderLabels(columns)
    table.setAccessibleName(name)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.verticalHeader().hide()
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    return table


def row_texts(model: LocalModel) -> list[str]:
    """The text cells of a model's row, from "Name" to "Problem"."""
    meta = model.metadata
    ctx = meta.context_length if meta else None
    return [
        model.name,
        meta.quantization if meta else "?",
        format_bytes(model.size_bytes),
        format_count(meta.parameter_count) if meta else "?",
        f"{ctx:,}" if ctx else "?",
        meta.architecture if meta else "?",
        _SOURCE_WORDS[model.source] + (f" ({model.origin})" if model.origin else ""),
        model.error or "",
    ]


def name_tooltip(model: LocalModel, texts: Sequence[str]) -> str:
    """The path, then what the narrow layout hides (parameters, context, and so on)."""
    details = " · ".join(f"{COLUMNS[i]}: {texts[i]}" for i in NARROW_HIDDEN)
    return f"{model.path}\n{details}"


def capabilities_of(models: Sequence[LocalModel]) -> list[tuple[Capability, ...]]:
    """Each model's capabilities (string searches over its template: run it with the
    listing, on the library's thread, not per repaint)."""
    return [model_capabilities(m.metadata, m.kind, m.projector) for m in models]


class CapabilityChips(QWidget):
    """A row of small neutral chips, one per capability, each with a tooltip saying
    what it means; restyled with the theme."""

    def __init__(self, capabilities: Sequence[Capability], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.capabilities = tuple(capabilities)
        self.setAccessibleName("Capabilities")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)  # the table's item padding insets the cell
        row.setSpacing(SPACE["xs"])
        self.chips: list[QLabel] = []
        for capability in self.capabilities:
            chip = QLabel(capability.label, self)
            chip.setObjectName("capabilityChip")
            chip.setToolTip(capability.tooltip)
            chip.setAccessibleName(capability.label)
            chip.setAccessibleDescription(capability.tooltip)
            row.addWidget(chip, 0, Qt.AlignmentFlag.AlignVCenter)  # not the row's height
            self.chips.append(chip)
        row.addStretch(1)
        self._hook = ThemeHook(self, self._restyle)

    def labels(self) -> list[str]:
        return [chip.text() for chip in self.chips]

    def _restyle(self, t: Tokens) -> None:
        set_sheet(
            self,
            f"QLabel#capabilityChip {{ color: {t.text}; background: {t.surface_alt}; "
            f"border: 1px solid {t.border}; border-radius: {RADIUS['m']}px; "
            f"padding: 1px {SPACE['xs']}px; }}",
        )


def row_chips(table: QTableWidget, row: int) -> CapabilityChips | None:
    """The capability chips of ``row`` (None before the row is filled)."""
    cell = table.cellWidget(row, COL_CAPS)
    return cell if isinstance(cell, CapabilityChips) else None


def saved_draft(
    store: SettingsStore, model: LocalModel, listing: dict[str, LocalModel]
) -> LocalModel | None:
    """The draft model loading ``model`` would bring along: the one its saved Load-dialog
    choices name, kept by ``LoadOptions.apply`` (the "draft" mode), as the worker gets
    it. ``listing`` maps ``model_key`` to the library's models: as in the Load dialog
    (``load_speculation``), a draft no longer in the library counts as none."""
    options = saved_load_options(store, model.path)
    if options is None:
        return None
    try:
        path = options.apply(LoadConfig(model_path=model.path)).draft_model_path
    except ValueError as exc:  # a hand-edited settings file: an unknown mode
        log.warning("the saved load choices of %s: %s", model.name, exc)
        return None
    draft = listing.get(model_key(path)) if path is not None else None
    return draft if draft is not None and draft.ok else None


def estimates(
    models: list[LocalModel], system: SystemMemory, store: SettingsStore | None = None
) -> list[FitEstimate | None]:
    """The fit of each model at a 4K context (or its trained one, if shorter), with the
    draft model its choices saved in ``store`` name (blocking: resolves paths)."""
    listing = {model_key(m.path): m for m in models} if store is not None else {}
    out: list[FitEstimate | None] = []
    for model in models:
        meta = model.metadata
        if meta is None or not model.ok or model.kind != "model":
            out.append(None)
            continue
        n_ctx = min(FIT_CONTEXT, meta.context_length or FIT_CONTEXT)
        draft = saved_draft(store, model, listing) if store is not None else None
        if draft is not None:
            log.debug("the fit of %s counts its draft %s", model.name, draft.name)
        out.append(estimate_fit(meta, ContextPlan(n_ctx=n_ctx), system,
                                draft=draft.metadata if draft else None,
                                draft_name=draft.name if draft else ""))  # fmt: skip
    return out
