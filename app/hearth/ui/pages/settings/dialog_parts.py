"""Parts the Settings dialogs that edit MCP servers share: the error line and Save/Cancel."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel


def error_line(parent: QDialog, name: str) -> QLabel:
    """A hidden, wrapping line in the error colours (``role="error"`` in the stylesheet),
    shown with the reason a save was refused."""
    label = QLabel(parent)
    label.setObjectName(name)
    label.setProperty("role", "error")
    label.setWordWrap(True)
    label.setVisible(False)
    return label


def save_cancel(parent: QDialog, save: Callable[[], object]) -> QDialogButtonBox:
    """Save (calls ``save``, which decides whether to close) and Cancel (rejects)."""
    buttons = QDialogButtonBox(
        QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, parent
    )
    buttons.accepted.connect(save)
    buttons.rejected.connect(parent.reject)
    return buttons
