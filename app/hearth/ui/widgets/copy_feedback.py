""" "Copied" on a Copy button for a moment: the feedback people expect where they clicked.

A message elsewhere on the page (the endpoint's status line, say) is easy to miss and
overwrites what that line was saying; the button itself is where the eye already is.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QPushButton

log = logging.getLogger(__name__)

COPIED_MS = 1500
COPIED = "Copied"


def flash_copied(button: QPushButton) -> None:
    """Show "Copied" on ``button`` for ``COPIED_MS``, keeping its width (no row jumps)."""
    text = button.property("restText") or button.text()
    button.setProperty("restText", text)
    button.setMinimumWidth(max(button.minimumWidth(), button.sizeHint().width()))
    button.setText(COPIED)
    QTimer.singleShot(COPIED_MS, button, lambda: button.setText(str(text)))
