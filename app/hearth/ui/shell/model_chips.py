"""The top bar's loaded models: one chip per model the worker holds, as LM Studio shows
them, each with its own Eject.

A worker keeps several models at once (a chat model, the IDE's completion model, an
embedding model), so the one picker button can't say what is in memory. Each chip
names its model and says what a person deciding what to eject needs: its memory, its
busy slots, and whether it stays ("pinned": loaded by the user) or goes by itself
("9m": loaded just in time, unloaded after that much idle time). The chip of the model
this chat talks to is outlined in the accent colour. Its menu says the same in words,
switches the chat to that model, or ejects it; the eject icon beside it ejects it
directly. Ejecting one model leaves the others loaded.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QMenu, QSizePolicy, QToolButton, QWidget

from hearth.core.residency import LoadedModel
from hearth.core.units import format_bytes
from hearth.ui.style.icons import icon
from hearth.ui.style.theme_hook import ThemeHook, set_sheet
from hearth.ui.style.tokens import RADIUS, SPACE, Tokens

log = logging.getLogger(__name__)

NAME_PX = 150  # "qwen2.5-coder…Q4_K_M": a long name is elided in the middle
# On a narrow window a chip gives up its facts, then elides its name down to this:
# three loaded models must not keep a 900-pixel window from folding its side panels.
COMPACT_NAME_PX = 56
TEXT_PAD_PX = 2 * SPACE["xs"] + 4  # the button's padding and frame around its text


def minutes_left(model: LoadedModel, now: float) -> int | None:
    """Whole minutes until an idle model expires, rounded up (None: it doesn't)."""
    if model.expires_at is None:
        return None
    return max(0, math.ceil((model.expires_at - now) / 60.0))


def stay_words(model: LoadedModel, now: float) -> str:
    """ "pinned", "expires in 9m", or "" for a model loaded just in time without TTL."""
    if model.pinned:
        return "pinned"
    left = minutes_left(model, now)
    return "" if left is None else f"expires in {left}m"


def chip_details(model: LoadedModel, now: float) -> str:
    """The chip's short line after the name: "1.2 GiB · 1 busy · pinned"."""
    parts = [format_bytes(model.memory_bytes)]
    if model.busy_slots:
        parts.append(f"{model.busy_slots} busy")
    left = minutes_left(model, now)
    if model.pinned:
        parts.append("pinned")
    elif left is not None:
        parts.append(f"{left}m")
    return " · ".join(parts)


def chip_description(model: LoadedModel, now: float) -> list[str]:
    """The menu's (and the tooltip's) lines: every fact in words."""
    slots = model.info.n_slots
    busy = f"{model.busy_slots} of {slots} slots busy" if slots else f"{model.busy_slots} busy"
    stay = (
        "Pinned: stays until you eject it"
        if model.pinned
        else (
            f"Loaded on demand: unloads after {minutes_left(model, now)} more idle minutes"
            if model.expires_at is not None
            else "Loaded on demand"
        )
    )
    return [f"Memory: {format_bytes(model.memory_bytes)}", busy, stay]


class ModelChip(QFrame):
    """One loaded model: its name and facts (a menu), and an Eject button."""

    eject_requested = Signal(str)
    use_requested = Signal(str)

    def __init__(self, model_id: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("modelChip")
        self.model_id = model_id
        self.button = QToolButton(self)
        self.button.setObjectName("modelChipButton")
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        # the chip, not the text, says how wide it wants to be (sizeHint below)
        self.button.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.menu = QMenu(self.button)
        self.button.setMenu(self.menu)
        self.eject_button = QToolButton(self)
        self.eject_button.setObjectName("modelChipEject")
        self.eject_button.setAccessibleName(f"Eject {model_id}")
        self.eject_button.setToolTip(f"Eject {model_id} (the other models stay loaded)")
        self.eject_button.clicked.connect(lambda: self.eject_requested.emit(self.model_id))
        row = QHBoxLayout(self)
        row.setContentsMargins(SPACE["s"], 0, SPACE["xs"], 0)
        row.setSpacing(0)
        row.addWidget(self.button)
        row.addWidget(self.eject_button)
        self.details = ""
        self.full_text = model_id
        self.current = False

    def show_model(self, model: LoadedModel, now: float, current: bool) -> None:
        """Put ``model``'s facts in the chip; ``current``: the chat talks to it."""
        name = self.fontMetrics().elidedText(self.model_id, Qt.TextElideMode.ElideMiddle, NAME_PX)
        self.details = chip_details(model, now)
        text = f"{name}  ·  {self.details}"
        if text != self.full_text:
            self.full_text = text
            self.updateGeometry()
        self._fit_text()
        lines = chip_description(model, now)
        chat = "This chat talks to it" if current else ""
        self.button.setToolTip("\n".join([self.model_id, *lines, *([chat] if chat else [])]))
        self.button.setAccessibleName(f"{self.model_id}: {', '.join(lines)}")
        if current != self.current:
            self.current = current
            self.setProperty("current", current)
            self.style().unpolish(self)
            self.style().polish(self)
        self._fill_menu(lines)

    def _fill_menu(self, lines: Sequence[str]) -> None:
        self.menu.clear()
        for line in lines:
            self.menu.addAction(line).setEnabled(False)
        self.menu.addSeparator()
        use = self.menu.addAction("Chat with this model")
        use.setEnabled(not self.current)
        use.triggered.connect(lambda: self.use_requested.emit(self.model_id))
        eject = self.menu.addAction("Eject")
        eject.triggered.connect(lambda: self.eject_requested.emit(self.model_id))

    def set_tokens(self, t: Tokens) -> None:
        self.eject_button.setIcon(icon("eject", t))

    def _frame_px(self) -> int:
        layout = self.layout()
        margins = layout.contentsMargins() if layout is not None else None
        sides = margins.left() + margins.right() if margins is not None else 0
        return sides + self.eject_button.sizeHint().width() + TEXT_PAD_PX

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """As wide as its name and facts."""
        text = self.button.fontMetrics().horizontalAdvance(self.full_text)
        return QSize(text + self._frame_px(), super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """A few letters of the name and the Eject button."""
        return QSize(COMPACT_NAME_PX + self._frame_px(), super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit_text()

    def _fit_text(self) -> None:
        """The name and facts when they fit; else the name alone, elided to the room."""
        metrics = self.button.fontMetrics()
        room = max(1, self.button.width() - TEXT_PAD_PX)
        text = self.full_text
        if metrics.horizontalAdvance(text) > room and self.width() < self.sizeHint().width():
            text = metrics.elidedText(self.model_id, Qt.TextElideMode.ElideMiddle, room)
        if text != self.button.text():
            self.button.setText(text)


class ModelChips(QWidget):
    """The row of chips, one per loaded model, in the worker's order."""

    eject_requested = Signal(str)
    use_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("modelChips")
        self.chips: dict[str, ModelChip] = {}
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.setSpacing(SPACE["xs"])
        self._tokens: Tokens | None = None
        self.setVisible(False)
        ThemeHook(self, self._restyle)

    def set_models(self, models: Sequence[LoadedModel], current: str | None, now: float) -> None:
        """Show ``models``; ``current`` is the chat's model id (outlined)."""
        ids = [m.info.id for m in models]
        if ids != list(self.chips):
            for chip in self.chips.values():
                self._row.removeWidget(chip)
                chip.deleteLater()
            self.chips = {}
            for model_id in ids:
                chip = ModelChip(model_id, self)
                chip.eject_requested.connect(self.eject_requested.emit)
                chip.use_requested.connect(self.use_requested.emit)
                if self._tokens is not None:
                    chip.set_tokens(self._tokens)
                self._row.addWidget(chip)
                self.chips[model_id] = chip
        for model in models:
            self.chips[model.info.id].show_model(model, now, model.info.id == current)
        self.setVisible(bool(models))

    def texts(self) -> list[str]:
        """Each chip's text, in order (for tests and accessibility checks)."""
        return [chip.button.text() for chip in self.chips.values()]

    def _restyle(self, t: Tokens) -> None:
        self._tokens = t
        for chip in self.chips.values():
            chip.set_tokens(t)
        set_sheet(
            self,
            f"QFrame#modelChip {{ background: {t.surface}; border: 1px solid {t.border};"
            f" border-radius: {RADIUS['l']}px; }}"
            f' QFrame#modelChip[current="true"] {{ border-color: {t.accent}; }}'
            f" QToolButton#modelChipButton, QToolButton#modelChipEject {{ background:"
            f" transparent; border: none; color: {t.text}; padding: 2px {SPACE['xs']}px; }}"
            f" QToolButton#modelChipButton::menu-indicator {{ image: none; width: 0; }}"
            f" QToolButton#modelChipEject:hover {{ background: {t.surface_alt};"
            f" border-radius: {RADIUS['m']}px; }}",
        )
