"""The fit chip: will this model run here, and how fast? Green, amber or red.

Green: it fits with room to spare (all on the GPU, or on a machine with no usable GPU
in RAM). Amber: it runs, but split between GPU and RAM, on the CPU although there is a
GPU, or with under 15% of memory to spare. Red: it won't fit. The text adds the speed
estimate (``hardware.speed``), e.g. "Fits · ~42 tok/s".

The chip colours extend the theme's tokens (``ui.style.tokens``): red is the theme's
own danger pair; green and amber are picked per theme so that every chip's text meets
WCAG AA on its fill (``tests/ui/test_pages_discover.py`` checks the ratios).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QWidget

from hearth.hardware.fit import FitEstimate, FitVerdict
from hearth.hardware.speed import (
    Bandwidth,
    RoughFit,
    estimate_speed,
    estimate_speed_from_size,
    format_speed,
)
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.theme_hook import ThemeHook, set_sheet
from hearth.ui.style.tokens import RADIUS, SPACE, Tokens

log = logging.getLogger(__name__)

TIGHT_SHARE = 0.85  # using more than this share of the free memory is "tight"
SLOW_TOK_S = 2.0  # below this a reply of a few hundred tokens takes minutes: amber


class ChipLevel(str, Enum):
    GOOD = "good"
    WARN = "warn"
    BAD = "bad"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ChipColors:
    text: str
    fill: str
    border: str


def chip_colors(t: Tokens, level: ChipLevel) -> ChipColors:
    """Text, fill and border of a chip in theme ``t``."""
    if level is ChipLevel.BAD:
        return ChipColors(t.danger, t.danger_bg, t.danger_border)
    if level is ChipLevel.UNKNOWN:
        return ChipColors(t.text_muted, t.surface_alt, t.border)
    if level is ChipLevel.GOOD:
        return ChipColors(t.good, t.good_bg, t.good_border)
    return ChipColors(t.warn, t.warn_bg, t.warn_border)


@dataclass(frozen=True)
class Chip:
    level: ChipLevel
    text: str
    tooltip: str
    tok_s: float | None = None


def _with_speed(words: str, tok_s: float | None) -> str:
    speed = format_speed(tok_s)
    return f"{words} · {speed}" if speed else words


def _slow(level: ChipLevel, words: str, tok_s: float | None) -> tuple[ChipLevel, str]:
    """A model that fits but crawls is amber: it runs, but not pleasantly."""
    if level is ChipLevel.GOOD and tok_s is not None and tok_s < SLOW_TOK_S:
        return ChipLevel.WARN, f"{words}, slow"
    return level, words


def chip_for_estimate(est: FitEstimate, bandwidth: Bandwidth | None, active: float = 1.0) -> Chip:
    """The chip for a header-based estimate (Discover's model page, the Load dialog)."""
    tok_s = estimate_speed(est, bandwidth, active) if bandwidth else None
    speed_note = (
        f" Estimated speed on this machine: {format_speed(tok_s)} (memory bandwidth bound)."
        if tok_s
        else ""
    )
    tip = est.summary + speed_note
    if est.verdict is FitVerdict.WONT_FIT:
        return Chip(ChipLevel.BAD, "Won't fit", tip)
    tight = est.available_ram > 0 and est.ram_bytes > TIGHT_SHARE * est.available_ram
    if est.verdict is FitVerdict.FULL_GPU:
        level, words = ChipLevel.GOOD, "Fits on GPU"
    elif est.verdict is FitVerdict.PARTIAL_GPU:
        level, words = ChipLevel.WARN, f"Partial GPU ({est.gpu_layers}/{est.n_layers})"
    elif est.free_vram > 0:
        level, words = ChipLevel.WARN, "CPU only"
    else:
        level, words = ChipLevel.GOOD, "Fits"
    if tight:
        level, words = ChipLevel.WARN, f"Tight: {words[0].lower()}{words[1:]}"
    level, words = _slow(level, words, tok_s)
    return Chip(level, _with_speed(words, tok_s), tip, tok_s)


def chip_for_rough(
    fit: RoughFit, bandwidth: Bandwidth | None, *, active: float = 1.0, size_bytes: int = 0
) -> Chip:
    """The chip for a model known only by its file size (Discover's picks)."""
    if fit.verdict is FitVerdict.WONT_FIT:
        return Chip(ChipLevel.BAD, "Won't fit", "Needs more memory than this machine has free.")
    tok_s = (
        estimate_speed_from_size(size_bytes, bandwidth, on_gpu=fit.on_gpu, active=active)
        if bandwidth and size_bytes
        else None
    )
    if fit.verdict is FitVerdict.FULL_GPU:
        level, words = ChipLevel.GOOD, "Fits on GPU"
    elif fit.verdict is FitVerdict.PARTIAL_GPU:
        level, words = ChipLevel.WARN, "Partial GPU"
    elif bandwidth is not None and bandwidth.gpu_bps and fit.on_gpu == 0:
        level, words = ChipLevel.WARN, "CPU only"
    else:
        level, words = ChipLevel.GOOD, "Fits"
    if fit.tight:
        level, words = ChipLevel.WARN, "Tight fit"
    level, words = _slow(level, words, tok_s)
    tip = (
        "Judged from the file size of the default quantization; open the model for an "
        "estimate per file from its header."
    )
    return Chip(level, _with_speed(words, tok_s), tip, tok_s)


class FitChip(QLabel):
    """A rounded label showing one :class:`Chip`, restyled when the theme changes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Checking…", parent)
        self.setObjectName("fitChip")
        self.chip = Chip(ChipLevel.UNKNOWN, "Checking…", "")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Fit on this machine")
        self._hook = ThemeHook(self, self._restyle)

    @property
    def level(self) -> ChipLevel:
        return self.chip.level

    def set_chip(self, chip: Chip) -> None:
        self.chip = chip
        self.setText(chip.text)
        self.setToolTip(chip.tooltip)
        self.setAccessibleDescription(chip.text)
        self._restyle()

    def set_unknown(self, text: str, tooltip: str = "") -> None:
        self.set_chip(Chip(ChipLevel.UNKNOWN, text, tooltip))

    def colors(self) -> ChipColors:
        # The app's palette, not the chip's own: its style sheet paints the chip's
        # palette with the fill, which would make a light chip read as a dark theme.
        return chip_colors(tokens_for(QGuiApplication.palette()), self.chip.level)

    def _restyle(self, _tokens: Tokens | None = None) -> None:
        c = self.colors()
        set_sheet(
            self,
            f"QLabel#fitChip {{ color: {c.text}; background: {c.fill}; "
            f"border: 1px solid {c.border}; border-radius: {RADIUS['m']}px; "
            f"padding: 2px {SPACE['s']}px; }}",
        )


def chip_cell(inset: int = SPACE["s"]) -> QWidget:
    """A table cell holding one :class:`FitChip`, left-aligned ``inset`` px in (0 in a
    table whose style sheet pads its items: the padding insets cell widgets too)."""
    cell = QWidget()
    row = QHBoxLayout(cell)
    row.setContentsMargins(inset, 0, inset, 0)
    row.addWidget(FitChip(cell))
    row.addStretch(1)
    return cell


def cell_chip(cell: QWidget | None) -> FitChip | None:
    """The chip of a :func:`chip_cell` (None for an empty cell)."""
    return cell.findChild(FitChip) if cell is not None else None
