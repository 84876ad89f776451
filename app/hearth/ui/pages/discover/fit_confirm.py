"""Ask before downloading a quantization that won't fit in this machine's memory.

A download of many GB that then fails to load wastes the user's time, bandwidth and
disk, so the Download button of a "won't fit" row asks first, with the estimate against
what the machine has. The box is window-modal and opened with ``open()``, not
``exec()``: a nested event loop would stall the asyncio tasks running on the Qt loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from hearth.core.units import format_bytes
from hearth.hardware.fit import FitEstimate

log = logging.getLogger(__name__)

OBJECT_NAME = "wontFitConfirm"
DOWNLOAD_ANYWAY = "Download anyway"


def wont_fit_message(est: FitEstimate, n_ctx: int) -> str:
    """The estimate against what this machine has, in plain words (free memory less
    what the worker process and the GPU driver need themselves)."""
    have = f"{format_bytes(est.available_ram)} of RAM"
    if est.free_vram:
        have += f" and {format_bytes(est.free_vram)} of GPU memory"
    return (
        f"Loading it needs about {format_bytes(est.memory.total_bytes)} of memory "
        f"(weights {format_bytes(est.memory.weights_bytes)}, context cache "
        f"{format_bytes(est.memory.kv_cache_bytes)} at {n_ctx:,} tokens), but this machine "
        f"has only {have} free for it. It will most likely fail to load. A smaller "
        "quantization or a shorter context may fit."
    )


def ask_wont_fit(
    parent: QWidget,
    label: str,
    est: FitEstimate,
    n_ctx: int,
    answered: Callable[[bool], None],
) -> QMessageBox:
    """Open the question; ``answered(True)`` only for "Download anyway" (Cancel, Esc
    and closing the box all mean no). Returns the open box."""
    box = QMessageBox(parent)
    box.setObjectName(OBJECT_NAME)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("This model won't fit")
    box.setText(f"{label} probably won't fit in this machine's memory.")
    box.setInformativeText(wont_fit_message(est, n_ctx))
    box.setDetailedText(est.summary)
    anyway = box.addButton(DOWNLOAD_ANYWAY, QMessageBox.ButtonRole.AcceptRole)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(cancel)
    box.setEscapeButton(cancel)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

    def finished(_result: int) -> None:
        yes = box.clickedButton() is anyway
        log.info("won't-fit download of %s %s", label, "confirmed" if yes else "declined")
        answered(yes)

    box.finished.connect(finished)
    box.open()
    return box
