"""The "Vision" chip: a repo with a projector (``mmproj-*.gguf``), whose models see.

Shown on Discover's model page once the repo's listing has a projector, and on the
cards of picks marked ``vision``; the projector is downloaded with the model. (A
library model paired with a projector gets a chip of the Library's own kind,
``library.capabilities``.)
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from hearth.ui.style.theme_hook import ThemeHook, set_sheet
from hearth.ui.style.tokens import RADIUS, SPACE, Tokens

VISION = "Vision"
VISION_TIP = (
    "This repo has a vision projector (mmproj): its models see images. It is "
    "downloaded with the model you choose."
)


class VisionChip(QLabel):
    """A small neutral chip; hidden until shown (a listing with a projector, a pick)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(VISION, parent)
        self.setObjectName("visionChip")
        self.setToolTip(VISION_TIP)
        self.setAccessibleName(VISION)
        self.setAccessibleDescription(VISION_TIP)
        self.hide()
        self._hook = ThemeHook(self, self._restyle)

    def _restyle(self, t: Tokens) -> None:
        set_sheet(
            self,
            f"QLabel#visionChip {{ color: {t.text}; background: {t.surface_alt}; "
            f"border: 1px solid {t.border}; border-radius: {RADIUS['m']}px; "
            f"padding: 1px {SPACE['xs']}px; }}",
        )
