"""One recommended model as a card: Discover's picks and the Welcome window share it.

A card shows a pick of the one table of picks (``hub.picks``): its name and repo, what
it is good for, its fit chip for this machine and the suggested quant with its
download size. A single click (or Enter) anywhere on the card opens the repo's model
page (``activated``). A view may give it buttons of its own (``actions``, on the chip's
row): the Welcome window gives "Download", the way LM Studio's onboarding offers its
pick; the card stays the one definition of how a pick looks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from hearth.core.units import format_bytes
from hearth.hardware.probe import SystemMemory
from hearth.hardware.speed import Bandwidth
from hearth.hub.picks import Pick, judge
from hearth.ui.style.tokens import SPACE
from hearth.ui.widgets.fit_chip import FitChip, chip_for_rough
from hearth.ui.widgets.page_style import ElidedLabel
from hearth.ui.widgets.vision_chip import VisionChip

log = logging.getLogger(__name__)


class PickCard(QFrame):
    """One pick: name and repo, what it is good for, its fit chip and download size.

    ``kicker`` is a small line above the name (the Welcome window puts the category
    there: its cards are one per category)."""

    activated = Signal(str)  # the repo id

    def __init__(
        self,
        pick: Pick,
        parent: QWidget | None = None,
        *,
        kicker: str = "",
        actions: Sequence[QWidget] = (),
    ) -> None:
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
        self.buttons = list(actions)  # the view's own, on the chip's row
        title_row = QHBoxLayout()
        title_row.setSpacing(SPACE["s"])
        title_row.addWidget(self.title)
        self.vision_chip = VisionChip(self)  # the repo has a projector: the model sees
        self.vision_chip.setVisible(pick.vision)
        self.vision_chip.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        title_row.addWidget(self.vision_chip)
        title_row.addStretch(1)
        chip_row = QHBoxLayout()
        chip_row.setSpacing(SPACE["s"])
        chip_row.addWidget(self.chip)
        chip_row.addStretch(1)
        # With actions the buttons take the chip's row, and the size moves up beside
        # the name: a row per card less, and still no word cut on a two-column window.
        (title_row if actions else chip_row).addWidget(self.size_label)
        for button in actions:
            button.setParent(self)
            button.setCursor(Qt.CursorShape.ArrowCursor)
            chip_row.addWidget(button)
        column = QVBoxLayout(self)
        column.setContentsMargins(SPACE["l"], SPACE["m"], SPACE["l"], SPACE["m"])
        column.setSpacing(SPACE["xs"])
        if kicker:
            column.addWidget(self.kicker)
        column.addLayout(title_row)
        column.addWidget(self.repo_label)
        column.addWidget(self.text)
        column.addStretch(1)
        column.addSpacing(SPACE["xs"])
        column.addLayout(chip_row)

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
