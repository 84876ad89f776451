"""The Load dialog's layout: cards like the rest of the app, the estimate as a summary.

- the model and its facts on top; the main knobs in the first card; "Advanced" folded
  until asked for; Speculation a card of its own; the estimate pinned at the foot with
  Load as the primary button;
- the estimate's chip is green, amber or red for the layers chosen (what Load will do),
  its bar and meters follow the slider, and every text in the card is readable (WCAG AA)
  in both themes, measured on the rendered pixels;
- on a 900x650 screen the dialog fits: the cards scroll, the estimate and Load stay.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication, QWidget

from hearth.core.units import format_bytes
from hearth.hardware import GpuInfo, SystemMemory
from hearth.library.library import Library
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_dialog import ADVANCED_OPEN, LoadDialog
from hearth.ui.dialogs.load_placement import Placement
from hearth.ui.dialogs.load_summary import placement_chip
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.style.theme import apply_theme
from hearth.ui.style.tokens import contrast_ratio
from hearth.ui.widgets.fit_chip import ChipLevel

pytestmark = pytest.mark.ui

GIB = 1 << 30
GPU = GpuInfo("NVIDIA GeForce RTX 4070", 12 * GIB, 11 * GIB, "cuda")
GPU_MACHINE = SystemMemory(32 * GIB, 20 * GIB, 8, 16, (GPU,))
SHOTS_ENV = "HEARTH_SHOTS_DIR"  # set it to keep the screenshots (tests write tmp_path)
SCREEN = (900, 650)


def _open(arun: Any, model: Path, store: SettingsStore, system: SystemMemory) -> LoadDialog:
    library = Library()
    library.import_in_place(model)
    dialog = LoadDialog(model, store, system=system, library=library,
                        speed=MachineSpeed(ram_bps=20e9))  # fmt: skip
    dialog.show()
    arun(arun.wait_until(lambda: dialog.bandwidth is not None, 30, "the estimate"))
    arun(arun.wait_until(dialog.model_combo.fill_task.done, 30, "the library"))
    return dialog


def _top(widget: QWidget, dialog: QWidget) -> int:
    return widget.mapTo(dialog, widget.rect().topLeft()).y()


def _text_contrast(widget: QWidget) -> float:
    """The best contrast between any pixel of ``widget`` and its corner (its background):
    the colour its glyphs are drawn in, as rendered."""
    image: QImage = widget.grab().toImage()
    background = QColor(image.pixel(0, 0)).name()
    best = 1.0
    for y in range(0, image.height(), 1):
        for x in range(0, image.width(), 1):
            best = max(best, contrast_ratio(QColor(image.pixel(x, y)).name(), background))
    return best


def test_cards_in_order_advanced_folded_and_the_estimate_at_the_foot(
    arun: Any, tiny_model_q8: Path, tmp_path: Path
) -> None:
    dialog = _open(arun, tiny_model_q8, SettingsStore(tmp_path / "s.json"), GPU_MACHINE)
    try:
        form = dialog.form
        # top to bottom: the model, its facts, the cards (scrolled), the estimate, Load
        order = [dialog.model_combo, dialog.info_label, dialog.scroll_area, dialog.summary,
                 dialog.load_button]  # fmt: skip
        tops = [_top(w, dialog) for w in order]
        assert tops == sorted(tops)
        cards = [form.main_section, form.advanced, dialog.spec.section]
        tops = [_top(w, form) for w in cards if w is not None]
        assert len(tops) == len(cards) and tops == sorted(tops)
        assert "layers" in dialog.info_label.text() and "Q8_0" in dialog.info_label.text()
        assert dialog.gpu_slider.isVisible() and dialog.ctx_spin.isVisible()
        # folded: said what is inside, shown on demand
        assert not form.advanced.expanded and not dialog.parallel_spin.isVisible()
        assert "KV cache" in form.advanced.description()
        form.advanced.toggle.click()
        assert form.advanced.expanded
        for knob in (dialog.parallel_spin, dialog.kv_combo, dialog.flash_combo,
                     dialog.threads_spin, dialog.mmap_check, dialog.format_combo):  # fmt: skip
            assert knob.isVisible()
        assert dialog.load_button.property("primary") is True
        assert dialog.spec.mode_combo.isVisible()
    finally:
        dialog.close()
    again = _open(arun, tiny_model_q8, SettingsStore(tmp_path / "s.json"), GPU_MACHINE)
    try:  # the fold is remembered
        assert again.form.advanced.expanded and again.parallel_spin.isVisible()
        again.form.advanced.toggle.click()
        assert not again.parallel_spin.isVisible()
    finally:
        again.close()
    assert SettingsStore(tmp_path / "s.json").settings.extra[ADVANCED_OPEN] is False


def test_the_chip_bar_and_meters_follow_the_layers(
    arun: Any, tiny_model_q8: Path, tmp_path: Path
) -> None:
    dialog = _open(arun, tiny_model_q8, SettingsStore(tmp_path / "s.json"), GPU_MACHINE)
    summary = dialog.summary

    def level() -> ChipLevel:  # read anew after each change
        return summary.chip.level

    try:
        n = dialog.gpu_slider.maximum()
        assert dialog.auto_fit() == n  # a tiny model: all of it on the GPU
        assert level() is ChipLevel.GOOD and "Fits on GPU" in summary.chip.text()
        assert "tok/s" in summary.chip.text()
        assert summary.gpu_meter.isVisible() and summary.gpu_meter.value() > 0
        parts = [p.name for p in summary.bar.parts]
        assert parts == ["Weights", "KV cache", "Compute"]
        assert "Weights" in summary.breakdown_text()

        dialog.gpu_slider.setValue(0)  # no layers on the GPU: amber
        assert level() is ChipLevel.WARN and "CPU only" in summary.chip.text()
        # only llama.cpp's compute buffer stays on the GPU (a GPU build runs a big
        # batch's matrix products there), as the meter shows
        placed, memory = dialog.placement(), dialog.memory()
        assert placed is not None and memory is not None and placed.gpu_layers == 0
        assert placed.gpu_bytes == memory.compute_bytes > 0
        assert summary.gpu_amount.text().startswith(format_bytes(placed.gpu_bytes) + " of ")

        dialog.ctx_spin.setValue(1 << 20)  # a million tokens, four slots: red
        dialog.parallel_spin.setValue(64)
        assert level() is ChipLevel.BAD and summary.chip.text() == "Won't fit"
        assert "does NOT fit" in dialog.estimate_label.text()
    finally:
        dialog.close()


def test_placement_chip_levels() -> None:
    def place(layers: int, gpu: int, ram: int, vram: int = 10 * GIB) -> Placement:
        return Placement(layers, 10, gpu, ram, vram, 16 * GIB, unified=False)

    assert placement_chip(place(10, GIB, GIB), 40.0).level is ChipLevel.GOOD
    assert placement_chip(place(10, GIB, GIB), 0.5).text == "Fits on GPU, slow · <1 tok/s"
    assert placement_chip(place(5, GIB, GIB), 20.0).text.startswith("Partial GPU (5/10)")
    assert placement_chip(place(0, 0, GIB), None).level is ChipLevel.WARN
    assert placement_chip(place(0, 0, GIB, vram=0), None).text == "Fits"
    assert placement_chip(place(10, 9.5 * GIB, GIB), None).text.startswith("Tight")  # type: ignore[arg-type]
    assert placement_chip(place(10, 11 * GIB, GIB), None).level is ChipLevel.BAD


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_estimate_is_readable_and_the_dialog_fits_a_small_screen(
    arun: Any, tiny_model_q8: Path, tmp_path: Path, theme: str
) -> None:
    apply_theme("dark" if theme == "light" else "light")  # opened in the other theme:
    dialog = _open(arun, tiny_model_q8, SettingsStore(tmp_path / "s.json"), GPU_MACHINE)
    try:
        apply_theme(theme)  # every colour follows the switch
        dialog.ctx_spin.setValue(1 << 16)  # past the trained context: the warning shows
        dialog.form.advanced.toggle.click()  # the tallest it gets
        QApplication.processEvents()
        natural = dialog.sizeHint().expandedTo(dialog.minimumSize())
        dialog.resize(min(natural.width(), SCREEN[0] - 40), min(natural.height(), SCREEN[1] - 40))
        QApplication.processEvents()
        assert dialog.width() <= SCREEN[0] - 40 and dialog.height() <= SCREEN[1] - 40
        # the knobs scroll; the estimate and Load stay in view
        assert dialog.scroll_area.verticalScrollBar().maximum() > 0
        for widget in (dialog.summary, dialog.load_button, dialog.model_combo):
            bottom = widget.mapTo(dialog, widget.rect().bottomRight())
            assert 0 <= bottom.y() <= dialog.height() and bottom.x() <= dialog.width()
        labels = (dialog.estimate_label, dialog.summary.ram_amount, dialog.info_label,
                  dialog.spec.note, dialog.ctx_warning)  # fmt: skip
        assert dialog.ctx_warning.isVisible()
        for label in labels:
            assert _text_contrast(label) >= 4.5, (label.objectName(), theme)
        assert _text_contrast(dialog.summary.chip) >= 4.5
        folder = Path(os.environ.get(SHOTS_ENV) or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        assert dialog.grab().save(str(folder / f"load_small_{theme}.png"))
        dialog.form.advanced.toggle.click()
        dialog.resize(720, dialog.sizeHint().height())
        QApplication.processEvents()
        assert dialog.grab().save(str(folder / f"load_{theme}.png"))
    finally:
        dialog.close()
        apply_theme("light")
