"""The Load dialog's memory estimate, as a summary card at its foot.

The estimate is where Hearth is ahead of LM Studio, so it gets the clearest place: a
fit chip (green, amber or red, as everywhere else: ``ui/widgets/fit_chip.py``) with the speed
estimate next to the card's title; one bar stacked by what takes the memory (weights,
KV cache, compute buffers, a draft model) with its legend and sizes; a meter each for
the GPU's memory and the RAM, filled to the share this load would take; and one line
in words (where the layers go, the verdict, the speed with its basis in the tooltip).

The chip is judged from the dialog's own ``Placement`` (the layers the user chose), not
from ``hardware.fit``'s best guess: it must say what Load will do. Colours come from the
theme's tokens when painted, so the card follows a theme change without re-estimating.
Every text is in the theme's text or muted colour on the card's surface (WCAG AA in
both themes, ``tests/ui/test_load_dialog_layout.py``); the verdict's colour is carried
by the chip, whose text/fill pairs are checked where they are defined.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPainter, QPainterPath, QPaintEvent
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QProgressBar, QWidget

from hearth.core.units import format_bytes
from hearth.hardware import MemoryBreakdown
from hearth.hardware.speed import format_speed
from hearth.ui.dialogs.load_placement import Placement
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import RADIUS, SPACE, Tokens
from hearth.ui.widgets.fit_chip import (
    SLOW_TOK_S,
    TIGHT_SHARE,
    Chip,
    ChipLevel,
    FitChip,
    chip_colors,
)
from hearth.ui.widgets.section import Section

log = logging.getLogger(__name__)

BAR_PX = 12
LEGEND_COLUMNS = 3  # a draft model or a projector wraps to a second row, unclipped
METER_STEPS = 1000


def part_color(t: Tokens, part: str) -> str:
    """The colour of one part of the stacked bar (and its legend swatch)."""
    return {
        "weights": t.accent_fill,
        "kv": t.syntax.keyword,
        "compute": t.syntax.number,
        "draft": t.text_muted,
        "projector": t.syntax.function,
    }[part]


@dataclass(frozen=True)
class Part:
    key: str  # part_color's key
    name: str
    size: int
    detail: str = ""  # the legend's tooltip


def parts_of(
    mem: MemoryBreakdown, draft: MemoryBreakdown | None, projector_bytes: int = 0
) -> list[Part]:
    """What takes the memory, in the bar's order; a draft model is one part, and so is
    a vision projector (its weights)."""
    parts = [
        Part("weights", "Weights", mem.weights_bytes, "The model's tensors"),
        Part("kv", "KV cache", mem.kv_cache_bytes, "The context's keys and values, all slots"),
        Part("compute", "Compute", mem.compute_bytes, "llama.cpp's work buffers"),
    ]
    if draft is not None:
        detail = (
            f"Draft model: weights {format_bytes(draft.weights_bytes)}, KV cache "
            f"{format_bytes(draft.kv_cache_bytes)}, compute {format_bytes(draft.compute_bytes)}."
        )
        parts.append(Part("draft", "Draft model", draft.total_bytes, detail))
    if projector_bytes:
        parts.append(Part("projector", "Vision", projector_bytes,
                          "The vision projector's weights (its image encoder)"))  # fmt: skip
    return parts


def placement_chip(place: Placement, tok_s: float | None) -> Chip:
    """Green, amber or red for the layers chosen, with the speed: what Load will do."""
    tip = place.describe()
    if not place.fits:
        return Chip(ChipLevel.BAD, "Won't fit", tip)
    has_gpu = place.free_vram > 0
    if has_gpu and place.n_layers and place.gpu_layers >= place.n_layers:
        level, words = ChipLevel.GOOD, "Fits on GPU"
    elif has_gpu and place.gpu_layers > 0:
        level, words = ChipLevel.WARN, f"Partial GPU ({place.gpu_layers}/{place.n_layers})"
    elif has_gpu:
        level, words = ChipLevel.WARN, "CPU only"
    else:
        level, words = ChipLevel.GOOD, "Fits"
    ram = place.gpu_bytes + place.ram_bytes if place.unified else place.ram_bytes
    tight = ram > TIGHT_SHARE * place.available_ram or (
        has_gpu and place.gpu_bytes > TIGHT_SHARE * place.free_vram
    )
    if tight:
        level, words = ChipLevel.WARN, f"Tight: {words[0].lower()}{words[1:]}"
    if level is ChipLevel.GOOD and tok_s is not None and tok_s < SLOW_TOK_S:
        level, words = ChipLevel.WARN, f"{words}, slow"
    speed = format_speed(tok_s)
    return Chip(level, f"{words} · {speed}" if speed else words, tip, tok_s)


def _theme() -> Tokens:
    # The app's palette: a widget with a style sheet of its own may report another.
    return tokens_for(QGuiApplication.palette())


class MemoryBar(QWidget):
    """One bar, stacked by part, each part as wide as its share of the total."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("loadMemoryBar")
        self.setAccessibleName("Memory by part")
        self.parts: list[Part] = []
        self.setFixedHeight(BAR_PX)

    def set_parts(self, parts: list[Part]) -> None:
        self.parts = parts
        total = sum(p.size for p in parts)
        self.setToolTip(", ".join(f"{p.name} {format_bytes(p.size)}" for p in parts))
        self.setAccessibleDescription(self.toolTip() + f" (total {format_bytes(total)})")
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(200, BAR_PX)

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        t = _theme()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect())
        clip = QPainterPath()
        clip.addRoundedRect(rect, RADIUS["s"], RADIUS["s"])
        painter.setClipPath(clip)
        painter.fillRect(rect, QColor(t.surface_alt))
        total = sum(p.size for p in self.parts)
        x = rect.left()
        for part in self.parts:
            if total <= 0 or part.size <= 0:
                continue
            width = rect.width() * part.size / total
            painter.fillRect(
                QRectF(x, rect.top(), width, rect.height()), QColor(part_color(t, part.key))
            )
            x += width
        painter.end()


class Swatch(QWidget):
    """A legend's colour square, painted in the theme of the moment."""

    def __init__(self, key: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.setFixedSize(10, 10)

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(part_color(_theme(), self.key)))
        painter.drawRoundedRect(QRectF(self.rect()), 2, 2)
        painter.end()


class EstimatePanel(Section):
    """The summary card; ``estimate_label`` holds the line in words."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Memory estimate", "", parent, icon_kind="disk")
        self.setObjectName("loadSummary")
        self.chip = FitChip(self)
        self.chip.set_unknown("Estimating…")
        self.add_header_widget(self.chip)
        self.bar = MemoryBar(self)
        self.legend = QGridLayout()  # LEGEND_COLUMNS parts a row, the total on the first
        self.legend.setHorizontalSpacing(SPACE["l"])
        self.legend.setVerticalSpacing(SPACE["xs"])
        self.legend.setColumnStretch(LEGEND_COLUMNS, 1)
        self._legend_items: list[tuple[QWidget, QLabel]] = []
        self.meters = QGridLayout()
        self.meters.setHorizontalSpacing(SPACE["m"])
        self.meters.setVerticalSpacing(SPACE["xs"])
        self.gpu_meter, self.gpu_amount = self._meter(0, "GPU")
        self.ram_meter, self.ram_amount = self._meter(1, "RAM")
        self.meters.setColumnStretch(1, 1)
        self.estimate_label = QLabel(self)
        self.estimate_label.setObjectName("loadEstimate")
        self.estimate_label.setAccessibleName("Memory estimate")
        self.estimate_label.setWordWrap(True)
        self.estimate_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.addWidget(self.bar)
        self.body.addLayout(self.legend)
        self.body.addLayout(self.meters)
        self.body.addWidget(self.estimate_label)
        self._levels: dict[QProgressBar, ChipLevel] = {}
        self.show_text("Estimating memory…")

    def _meter(self, row: int, name: str) -> tuple[QProgressBar, QLabel]:
        label = QLabel(name, self)
        label.setObjectName("settingName")
        meter = QProgressBar(self)
        meter.setObjectName("loadMeter")
        meter.setAccessibleName(f"{name} memory used")
        meter.setRange(0, METER_STEPS)
        meter.setTextVisible(False)
        meter.setFixedHeight(8)
        amount = QLabel(self)
        amount.setProperty("role", "muted")
        self.meters.addWidget(label, row, 0)
        self.meters.addWidget(meter, row, 1)
        self.meters.addWidget(amount, row, 2)
        return meter, amount

    # ------------------------------------------------------------------ state
    def show_text(self, text: str, chip: str = "Estimating…") -> None:
        """No estimate yet (or none possible): the words alone, the rest emptied."""
        self.chip.set_unknown(chip)
        self.bar.set_parts([])
        self._set_legend([])
        for widget in (self.gpu_meter, self.gpu_amount, self.ram_meter, self.ram_amount):
            widget.setVisible(False)
        self.meters.itemAtPosition(0, 0).widget().setVisible(False)  # type: ignore[union-attr]
        self.meters.itemAtPosition(1, 0).widget().setVisible(False)  # type: ignore[union-attr]
        self.estimate_label.setToolTip("")
        self.estimate_label.setText(text)

    def show_estimate(
        self,
        parts: list[Part],
        place: Placement,
        tok_s: float | None,
        words: str,
        tip: str,
    ) -> None:
        """The estimate for the layers chosen; ``words`` is the line under the meters."""
        chip = placement_chip(place, tok_s)
        self.chip.set_chip(chip)
        self.bar.set_parts(parts)
        self._set_legend(parts)
        has_gpu = place.free_vram > 0 or place.gpu_bytes > 0
        self.meters.itemAtPosition(0, 0).widget().setVisible(has_gpu)  # type: ignore[union-attr]
        self.meters.itemAtPosition(1, 0).widget().setVisible(True)  # type: ignore[union-attr]
        self.gpu_meter.setVisible(has_gpu)
        self.gpu_amount.setVisible(has_gpu)
        self.ram_meter.setVisible(True)
        self.ram_amount.setVisible(True)
        ram = place.gpu_bytes + place.ram_bytes if place.unified else place.ram_bytes
        self._fill(self.gpu_meter, place.gpu_bytes, place.free_vram)
        self._fill(self.ram_meter, ram, place.available_ram)
        self.gpu_amount.setText(
            f"{format_bytes(place.gpu_bytes)} of {format_bytes(place.free_vram)} free"
        )
        self.ram_amount.setText(
            f"{format_bytes(ram)} of {format_bytes(place.available_ram)} available"
        )
        self.estimate_label.setToolTip(tip)
        self.estimate_label.setText(words)

    def breakdown_text(self) -> str:
        """The legend in words, one part a line (a draft model with its own parts)."""
        lines = []
        for swatch, label in self._legend_items:
            lines.append(label.text())
            if swatch.toolTip():
                lines.append(swatch.toolTip())
        return "\n".join(lines)

    def _set_legend(self, parts: list[Part]) -> None:
        while self.legend.count():
            item = self.legend.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self._legend_items = []
        for part in parts:
            cell = QWidget(self)
            row = QHBoxLayout(cell)
            row.setContentsMargins(0, 0, 0, 0)
            row.setSpacing(SPACE["xs"])
            swatch = Swatch(part.key, cell)
            label = QLabel(f"{part.name} {format_bytes(part.size)}", cell)
            cell.setToolTip(part.detail)
            swatch.setToolTip(part.detail if part.key == "draft" else "")
            row.addWidget(swatch, 0, Qt.AlignmentFlag.AlignVCenter)
            row.addWidget(label)
            n = len(self._legend_items)
            self.legend.addWidget(cell, n // LEGEND_COLUMNS, n % LEGEND_COLUMNS)
            self._legend_items.append((swatch, label))
        if parts:
            total = QLabel(f"Total {format_bytes(sum(p.size for p in parts))}", self)
            total.setObjectName("loadTotal")
            total.setProperty("role", "muted")
            self.legend.addWidget(total, 0, LEGEND_COLUMNS + 1)

    def _fill(self, meter: QProgressBar, used: int, capacity: int) -> None:
        share = used / capacity if capacity > 0 else (1.0 if used else 0.0)
        meter.setValue(round(min(1.0, share) * METER_STEPS))
        if share > 1:
            level = ChipLevel.BAD
        elif share > TIGHT_SHARE:
            level = ChipLevel.WARN
        else:
            level = ChipLevel.GOOD
        self._levels[meter] = level
        self._restyle(meter)

    def _restyle(self, meter: QProgressBar) -> None:
        t = _theme()
        level = self._levels.get(meter, ChipLevel.GOOD)
        fill = t.accent_fill if level is ChipLevel.GOOD else chip_colors(t, level).text
        sheet = (
            f"QProgressBar#loadMeter {{ background: {t.surface_alt}; border: none; "
            f"border-radius: 4px; min-height: 8px; max-height: 8px; }}"
            f"QProgressBar#loadMeter::chunk {{ background: {fill}; border-radius: 4px; }}"
        )
        if meter.styleSheet() != sheet:
            meter.setStyleSheet(sheet)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            for meter in (self.gpu_meter, self.ram_meter):
                self._restyle(meter)
        super().changeEvent(event)
