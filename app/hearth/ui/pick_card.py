"""One recommended model as a card: Discover's picks and the Welcome window share it.

A card shows a pick of the one table of picks (``hub.picks``): its name and repo, what
it is good for, its fit chip for this machine and the suggested quant with its
download size. A single click (or Enter) anywhere on the card opens the repo's model
page (``activated``). A view may add its own buttons below (``add_actions``): the
Welcome window adds "Download", the way LM Studio's onboarding offers its pick; the
card stays the one definition of how a pick looks.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from hearth.core.units import format_bytes
from hearth.hardware.probe import SystemMemory
from hearth.hardware.speed import Bandwidth
from hearth.hub.picks import Pick, judge
from hearth.ui.fit_chip import FitChip, chip_for_rough
from hearth.ui.pages.page_style import ElidedLabel
from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)


class PickCard(QFrame):
    """One pick: name and repo, what it is good for, its fit chip and download size.

    ``kicker`` is a small line above the name (the Welcome window puts the category
    there: its cards are one per category)."""

    activated = Signal(str)  # the repo id

    def __init__(self, pick: Pick, parent: QWidget | None = None, *, kicker: str = "") -> None:
        super().__init__(parent)
        self.pick = pick
        self.setProperty("card", True)
        self.setObjectName("pickCard")
        self.setAccessibleName(f"{pick.name}: open its model page")
        self.setAccessibleDescription(pick.description)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setToolTip(f"Open {pick.repo} (one click)")
        self.kicker = QLabel(kicker.upper(), self)
        self.kicker.setObjectName("pickKicker")
        self.kicker.setProperty("role", "caption")
        self.kicker.setVisible(bool(kicker))
        self.title = QLabel(pick.name, self)
        self.title.setProperty("role", "subtitle")
        self.text = QLabel(pick.description, self)
        self.text.setProperty("role", "muted")
        self.text.setWordWrap(True)
        self.repo_label = ElidedLabel(pick.repo, self)
        self.repo_label.setProperty("role", "caption")
        size = f"{pick.quant} · {format_bytes(pick.size_bytes)}" if pick.size_bytes else pick.quant
        self.size_label = QLabel(size, self)
        self.size_label.setProperty("role", "muted")
        self.size_label.setToolTip("The quantization Hearth suggests, and its download size")
        self.chip = FitChip(self)
        labels = (self.kicker, self.title, self.text, self.repo_label, self.size_label)
        for label in (*labels, self.chip):
            label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        for label in labels:
            label.setStyleSheet("background: transparent; border: none;")
        chip_row = QHBoxLayout()
        chip_row.setSpacing(SPACE["s"])
        chip_row.addWidget(self.chip)
        chip_row.addStretch(1)
        chip_row.addWidget(self.size_label)
        self.column = QVBoxLayout(self)
        self.column.setContentsMargins(SPACE["l"], SPACE["m"], SPACE["l"], SPACE["m"])
        self.column.setSpacing(SPACE["xs"])
        if kicker:
            self.column.addWidget(self.kicker)
        self.column.addWidget(self.title)
        self.column.addWidget(self.repo_label)
        self.column.addWidget(self.text)
        self.column.addStretch(1)
        self.column.addSpacing(SPACE["xs"])
        self.column.addLayout(chip_row)

    def add_actions(self, *buttons: QWidget) -> QHBoxLayout:
        """A row of buttons under the chip, at the card's right (a view's own actions)."""
        row = QHBoxLayout()
        row.setSpacing(SPACE["s"])
        row.addStretch(1)
        for button in buttons:
            button.setParent(self)
            button.setCursor(Qt.CursorShape.ArrowCursor)
            row.addWidget(button)
        self.column.addSpacing(SPACE["xs"])
        self.column.addLayout(row)
        return row

    def judge(self, system: SystemMemory, bandwidth: Bandwidth | None) -> None:
        """Discover's chip: the fit of the default quant's size, with the speed."""
        p = self.pick
        if not p.size_bytes:
            self.chip.set_unknown("Size unknown", "Open the model to check each file.")
            return
        fit = judge(p, system)  # the rule the Welcome window's suggestions use
        self.chip.set_chip(chip_for_rough(fit, bandwidth, active=p.active, size_bytes=p.size_bytes))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.MouseButton.LeftButton and self.rect().contains(
            event.position().toPoint()
        ):
            self.activated.emit(self.pick.repo)
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.activated.emit(self.pick.repo)
            event.accept()
            return
        super().keyPressEvent(event)
