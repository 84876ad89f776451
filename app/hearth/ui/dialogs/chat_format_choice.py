"""The Load dialog's "Chat format" choice: detect the family's format, or name one.

Detection reads the chat template with the worker's own table (``core/chat_formats``;
the worker reads the vocabulary too at load), so "Detect" says what it finds in this
model's header. A chosen name
becomes ``LoadOptions.chat_format`` and the worker's ``--chat-format``: for templates
that detection reads wrongly (fine-tunes, merges with a borrowed template).
"""

from __future__ import annotations

import logging

from PySide6.QtWidgets import QComboBox, QWidget

from hearth.core.chat_formats import CHAT_FORMATS, detect_tool_format

log = logging.getLogger(__name__)


def detect_label(detected: str | None) -> str:
    """The "Detect" item's text: what detection found, once the header is read."""
    return f"Detect ({detected})" if detected else "Detect"


class ChatFormatCombo(QComboBox):
    """The "Detect (<found>)" item first (data None), then each format name (data the name)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Chat format")
        self.setToolTip(
            "How tool calls and reasoning are read from this model's replies. "
            "Detect reads it from the chat template; choose a format when it reads wrongly."
        )
        self.addItem(detect_label(None), None)
        for name in CHAT_FORMATS:
            self.addItem(name, name)

    def show_detected(self, template: str | None) -> str:
        """Name on the "Detect" item what the model's chat template points to."""
        found = detect_tool_format(template).value
        self.setItemText(0, detect_label(found))
        return found

    def reset(self) -> None:
        """Back to "Detect", with nothing detected yet (another model was picked)."""
        self.setItemText(0, detect_label(None))
        self.setCurrentIndex(0)

    def chosen(self) -> str | None:
        """The chosen format name, or None to detect."""
        data = self.currentData()
        return data if isinstance(data, str) else None

    def choose(self, name: object) -> None:
        """Select ``name`` (a saved choice); anything unknown selects "Detect"."""
        index = self.findData(name) if isinstance(name, str) and name in CHAT_FORMATS else 0
        self.setCurrentIndex(max(index, 0))
