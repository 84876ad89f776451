"""The one section panel of the app: a card with an icon, a title, a one-line description
and its content, laid out on the spacing scale.

Settings and the Server panel are made of these instead of stock ``QGroupBox`` frames
(whose title sits on the border, which reads as an admin tool). The look lives in the
stylesheet (``QFrame[section="true"]``, the labels' ``role``); this module only fixes
the structure, so every section of every page has the same margins and header.

``add_row`` is the settings row people know from LM Studio and Jan: the setting's name
with a hint under it on the left, its control on the right at the control's own width.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)

ICON_PX = 20
ROW_CONTROL_PX = 200  # the controls of a section's rows line up in one right column


class Message(QLabel):
    """A section's status line ("Added …", an error): it takes no room while empty, so a
    section has no blank gap at its foot until there is something to say."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setVisible(False)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        super().setText(text)
        self.setVisible(bool(text))

    def clear(self) -> None:
        super().clear()
        self.setVisible(False)


class Section(QFrame):
    """A titled panel; put the content in ``body`` (a vertical layout) or ``add_row``."""

    def __init__(
        self,
        title: str,
        description: str = "",
        parent: QWidget | None = None,
        *,
        icon_kind: str | None = None,
    ) -> None:
        """``icon_kind`` is a key of ``style.icons.NAMES``, drawn in the accent colour."""
        super().__init__(parent)
        self.setProperty("section", True)
        self.setObjectName("section")
        self.setAccessibleName(title)
        self.icon_kind = icon_kind
        self.icon_label = QLabel(self)
        self.icon_label.setObjectName("sectionIcon")
        self.icon_label.setFixedSize(ICON_PX, ICON_PX)
        self.icon_label.setVisible(icon_kind is not None)
        self.title_label = QLabel(title, self)
        self.title_label.setObjectName("sectionTitle")
        self.title_label.setProperty("role", "subtitle")
        self.description_label = QLabel(description, self)
        self.description_label.setObjectName("sectionDescription")
        self.description_label.setProperty("role", "muted")
        self.description_label.setWordWrap(True)
        self.description_label.setVisible(bool(description))
        header = QGridLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.setHorizontalSpacing(SPACE["s"])
        header.setVerticalSpacing(SPACE["xs"])
        header.addWidget(self.icon_label, 0, 0, Qt.AlignmentFlag.AlignVCenter)
        header.addWidget(self.title_label, 0, 1)
        header.addWidget(self.description_label, 1, 1)
        header.setColumnStretch(1, 1)
        self.body = QVBoxLayout()
        self.body.setContentsMargins(0, 0, 0, 0)
        self.body.setSpacing(SPACE["s"])
        outer = QVBoxLayout(self)
        outer.setContentsMargins(SPACE["l"], SPACE["l"], SPACE["l"], SPACE["l"])
        outer.setSpacing(SPACE["m"])
        outer.addLayout(header)
        outer.addLayout(self.body, 1)  # a section taller than its content grows below it
        self.refresh_icon()

    def title(self) -> str:
        return self.title_label.text()

    def description(self) -> str:
        return self.description_label.text()

    def add_row(self, name: str, control: QWidget, hint: str = "") -> QWidget:
        """A setting on one line: ``name`` (and ``hint`` under it) left, ``control`` right.

        The name is the control's buddy, so its accessible label and a mnemonic reach it.
        """
        row = QWidget(self)
        row.setObjectName("settingRow")
        label = QLabel(name, row)
        label.setObjectName("settingName")
        label.setBuddy(control)
        text = QVBoxLayout()
        text.setContentsMargins(0, 0, 0, 0)
        text.setSpacing(2)
        text.addWidget(label)
        if hint:
            note = QLabel(hint, row)
            note.setObjectName("settingHint")
            note.setProperty("role", "muted")
            note.setWordWrap(True)
            text.addWidget(note)
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(SPACE["l"])
        line.addLayout(text, 1)
        control.setParent(row)
        control.setMinimumWidth(ROW_CONTROL_PX)
        line.addWidget(control, 0, Qt.AlignmentFlag.AlignVCenter)
        self.body.addWidget(row)
        return row

    def refresh_icon(self) -> None:
        if self.icon_kind is None:
            return
        t = tokens_for(self.palette())
        pixmap = icon(self.icon_kind, t, color=t.accent).pixmap(QSize(ICON_PX, ICON_PX))
        self.icon_label.setPixmap(pixmap)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.refresh_icon()  # icons are tinted for the theme
        super().changeEvent(event)
