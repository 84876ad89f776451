"""The Welcome window's parts: this machine as a row of chips, and the fit chip's words.

Kept out of ``first_run.py`` so the dialog only lays them out. The hardware row is a
few compact labels (CPU, RAM, each GPU, the llama.cpp backend), each with its details
in a tooltip, that wrap onto a second line on a narrow window rather than widen it or
cut a word (a small flow layout: Qt has none built in). The cards sit in a frameless
scroll area that asks for their whole height (``CardsScroll``): on a big screen the
window is as tall as its cards, and only where the screen is smaller do they scroll,
with the header and the footer's buttons still in view.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLabel, QLayout, QLayoutItem, QWidget

from hearth.core.units import format_bytes
from hearth.hardware import SystemMemory
from hearth.hardware.fit import FitVerdict
from hearth.hardware.speed import RoughFit, format_speed
from hearth.hub.picks import Pick, PicksFile
from hearth.ui.style.tokens import SPACE
from hearth.ui.widgets.content_scroll import ContentScroll
from hearth.ui.widgets.fit_chip import SLOW_TOK_S, Chip, ChipLevel
from hearth.ui.widgets.page_style import IconButton
from hearth.ui.widgets.pick_card import PickCard

log = logging.getLogger(__name__)

FIT_WORDS = {
    FitVerdict.FULL_GPU: "Fits on the GPU",
    FitVerdict.PARTIAL_GPU: "Fits, partly on the GPU",
    FitVerdict.CPU_ONLY: "Fits in RAM (CPU)",
    FitVerdict.WONT_FIT: "Too big for this machine",
}


def fit_chip(fit: RoughFit, system: SystemMemory, tok_s: float | None = None) -> Chip:
    """The coloured chip for a card. ``system`` is the machine as it is: running in RAM
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


def checking_cards(picks: PicksFile, parent: QWidget) -> list[PickCard]:
    """Disabled cards that say "Checking…", one per category with its longest
    description: they hold the cards' area until the probes answer, so the window opens
    at (about) its final size rather than small, then jumping when the cards come."""
    by_kind: dict[str, Pick] = {}
    for p in picks.picks:
        held = by_kind.get(p.category)
        if held is None or len(p.description) > len(held.description):
            by_kind[p.category] = p
    cards = []
    for category, kind in picks.categories.items():
        if category not in by_kind:
            continue
        button = IconButton("downloads", "Checking this computer first", lambda: None, "Download")
        button.set_primary(True)
        button.setEnabled(False)
        card = PickCard(by_kind[category], parent, kicker=kind, actions=[button])
        card.chip.set_unknown("Checking this computer…")
        card.setEnabled(False)
        cards.append(card)
    return cards


@dataclass(frozen=True)
class HardwareFact:
    """One chip of the hardware row: a short key ("CPU"), its value, and details."""

    key: str
    value: str
    details: str = ""

    @property
    def text(self) -> str:
        return f"{self.key}: {self.value}"


def hardware_facts(
    system: SystemMemory,
    backend_name: str | None,
    gpu_offload: bool = False,
    error: str | None = None,
) -> list[HardwareFact]:
    """What the row shows; ``backend_name`` None while the backend probe runs,
    ``error`` the probe's when the library is broken."""
    facts = [
        HardwareFact(
            "CPU",
            f"{system.physical_cores} cores",
            f"{system.physical_cores} cores, {system.logical_cores} threads",
        ),
        HardwareFact(
            "RAM",
            f"{format_bytes(system.total_ram)} ({format_bytes(system.available_ram)} free)",
            "Models that don't fit on a GPU run from RAM.",
        ),
    ]
    for gpu in system.gpus:
        facts.append(
            HardwareFact(
                "GPU",
                f"{gpu.name}, {format_bytes(gpu.total_bytes)}",
                f"{format_bytes(gpu.free_bytes)} free ({gpu.backend})",
            )
        )
    if not system.gpus:
        facts.append(HardwareFact("GPU", "none found", "Models run on the CPU."))
    if backend_name is None:
        facts.append(HardwareFact("llama.cpp", "checking…"))
    elif error is not None:
        facts.append(HardwareFact("llama.cpp", "not working", error))
    else:
        offload = "GPU offload" if gpu_offload else "CPU only"
        value = offload if backend_name in ("CPU", offload) else f"{backend_name} ({offload})"
        facts.append(
            HardwareFact("llama.cpp", value, f"The llama.cpp build in this install: {backend_name}")
        )
    return facts


class FlowLayout(QLayout):
    """Items left to right, wrapping to a new line when the width runs out."""

    def __init__(self, parent: QWidget | None = None, spacing: int = SPACE["s"]) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setContentsMargins(0, 0, 0, 0)
        self.setSpacing(spacing)

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 - Qt override
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt override
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt override
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 - Qt override
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt override
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt override
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 - Qt override
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """All on one line."""
        width = sum(i.sizeHint().width() for i in self._items)
        width += self.spacing() * max(0, len(self._items) - 1)
        height = max((i.sizeHint().height() for i in self._items), default=0)
        return QSize(width, height)

    def minimumSize(self) -> QSize:  # noqa: N802 - Qt override
        """The widest item: narrower than that would cut it."""
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        return size

    def _arrange(self, rect: QRect, *, move: bool) -> int:
        x, y, line = rect.x(), rect.y(), 0
        for item in self._items:
            hint = item.sizeHint()
            if x > rect.x() and x + hint.width() > rect.right() + 1:
                x, y, line = rect.x(), y + line + self.spacing(), 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self.spacing()
            line = max(line, hint.height())
        return y + line - rect.y()


class HardwareRow(QWidget):
    """This machine as chips (``#hardwareChip``), wrapping on a narrow window."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("This computer")
        self.flow = FlowLayout(self)
        self.chips: list[QLabel] = []

    def show_facts(self, facts: list[HardwareFact]) -> None:
        for chip in self.chips:
            self.flow.removeWidget(chip)
            chip.deleteLater()
        self.chips = []
        for fact in facts:
            chip = QLabel(f"<b>{fact.key}</b>&nbsp;&nbsp;{fact.value}", self)
            chip.setObjectName("hardwareChip")
            chip.setTextFormat(Qt.TextFormat.RichText)
            chip.setAccessibleName(fact.text)
            chip.setToolTip(fact.details)
            chip.ensurePolished()  # its padding counts in the size hint from the start
            self.flow.addWidget(chip)
            chip.show()
            self.chips.append(chip)
        self.updateGeometry()

    def texts(self) -> list[str]:
        """Each chip as plain text ("RAM: 32 GiB (24 GiB free)")."""
        return [chip.accessibleName() for chip in self.chips]


class CardsScroll(ContentScroll):
    """The cards' area: its size hint is the cards' whole height at the width the dialog
    gives it (``for_width``), so the dialog opens as tall as its cards where the screen
    has room; its minimum is a fraction of that, so a small screen scrolls the cards
    instead of cutting the footer. Never a horizontal scroll: its minimum width is the
    cards' own (and the vertical bar's, which may come)."""

    MIN_HEIGHT = 150  # about a card's height: some of the cards always in view

    def __init__(self, content: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(content, parent, name="welcomeCards")
        self.setAccessibleName("Recommended models")
        self.for_width = 0  # the width the dialog will give it (set before measuring)

    def content_height(self, width: int) -> int:
        """The cards' whole height at ``width`` (wrapped descriptions included), never
        less than their minimum."""
        content = self.widget()
        if content is None:
            return 0
        return max(super().content_height(width), content.minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        content = self.widget()
        if content is None:
            return super().sizeHint()
        width = self.for_width or content.sizeHint().width()
        return QSize(content.sizeHint().width(), self.content_height(width))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        content = self.widget()
        width = content.minimumSizeHint().width() if content is not None else 0
        height = min(self.MIN_HEIGHT, self.sizeHint().height())
        return QSize(width + self.bar_width(), height)

    def needs_scrolling(self) -> bool:
        """True when the cards are taller than the area shows."""
        return self.content_height(self.viewport().width()) > self.viewport().height()
