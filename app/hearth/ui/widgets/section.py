"""The one section panel of the app: a card with an icon, a title, a one-line description
and its content, laid out on the spacing scale.

Settings and the Server panel are made of these instead of stock ``QGroupBox`` frames
(whose title sits on the border, which reads as an admin tool). The look lives in the
stylesheet (``QFrame[section="true"]``, the labels' ``role``); this module only fixes
the structure, so every section of every page has the same margins and header.

``add_row`` is the settings row people know from LM Studio and Jan: the setting's name
with a hint under it on the left, its control on the right at the control's own width.
``SectionIndex`` is a page's table of contents beside its scrolled sections.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from PySide6.QtCore import QEvent, QPoint, QSize, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)

ICON_PX = 20
ROW_CONTROL_PX = 200  # the controls of a section's rows line up in one right column
INDEX_PX = 180
INDEX_ITEM_PX = 32


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
        header = self._header = QGridLayout()
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

    def add_header_widget(self, widget: QWidget) -> None:
        """``widget`` at the right end of the title line (a chip, a Show/Hide toggle)."""
        widget.setParent(self)
        align = Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignRight
        self._header.addWidget(widget, 0, 2, 2, 1, align)

    def description(self) -> str:
        return self.description_label.text()

    def add_row(self, name: str, control: QWidget, hint: str = "") -> QWidget:
        """A setting on one line: ``name`` (and ``hint`` under it) left, ``control`` right.

        The name is the control's buddy, so its accessible label and a mnemonic reach it.
        """
        row = QWidget(self)
        row.setObjectName("settingRow")
        text, label = _name_and_hint(row, name, hint)
        label.setBuddy(control)
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(SPACE["l"])
        line.addLayout(text, 1)
        control.setParent(row)
        control.setMinimumWidth(ROW_CONTROL_PX)
        line.addWidget(control, 0, Qt.AlignmentFlag.AlignVCenter)
        self.body.addWidget(row)
        return row

    def add_wide_row(self, name: str, control: QLayout, hint: str = "") -> QWidget:
        """A setting whose control spans the card: ``name`` and ``hint`` above,
        ``control`` (a layout: a slider with its value and a button) below them."""
        row = QWidget(self)
        row.setObjectName("settingRow")
        column, _label = _name_and_hint(row, name, hint)
        row.setLayout(column)
        column.addSpacing(4)
        column.addLayout(control)
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


class SectionIndex(QListWidget):
    """One entry per section of a scrolled page: choosing one scrolls to its section,
    and scrolling marks the section at the top, as LM Studio's and Jan's settings do."""

    def __init__(
        self, area: QScrollArea, sections: Sequence[Section], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("sectionIndex")
        self.setAccessibleName("Sections")
        self.area = area
        self.sections = list(sections)
        self._jumping = False  # scrolling to a chosen section: keep the choice marked
        self._following = False  # marking the section scrolled to: do not scroll again
        self.setFixedWidth(INDEX_PX)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        for section in self.sections:
            item = QListWidgetItem(section.title())
            item.setToolTip(section.description())
            item.setSizeHint(QSize(INDEX_PX, INDEX_ITEM_PX))
            self.addItem(item)
        self.setFixedHeight(INDEX_ITEM_PX * len(self.sections) + 2 * SPACE["xs"])
        self.setCurrentRow(0)
        self.currentRowChanged.connect(self.go_to)
        area.verticalScrollBar().valueChanged.connect(self._follow)

    def top_of(self, section: Section) -> int:
        """Where ``section`` starts in the scrolled content, less a margin above it."""
        content = self.area.widget()
        if content is None:
            return 0
        return max(0, section.mapTo(content, QPoint(0, 0)).y() - SPACE["l"])

    def go_to(self, row: int) -> None:
        """Scroll so the section of ``row`` is at the top (as far as the page scrolls)."""
        if self._following or not 0 <= row < len(self.sections):
            return
        self._jumping = True
        try:
            self.area.verticalScrollBar().setValue(self.top_of(self.sections[row]))
        finally:
            self._jumping = False

    def _follow(self, value: int) -> None:
        if self._jumping:
            return
        bar = self.area.verticalScrollBar()
        row = 0
        for i, section in enumerate(self.sections):
            if self.top_of(section) <= value:
                row = i
        if bar.maximum() > 0 and value >= bar.maximum():
            row = len(self.sections) - 1  # the last ones never reach the top
        self._following = True
        try:
            self.setCurrentRow(row)
        finally:
            self._following = False


def _name_and_hint(row: QWidget, name: str, hint: str) -> tuple[QVBoxLayout, QLabel]:
    """A setting's name, with its hint in muted text under it when there is one; the
    layout and the name's label."""
    label = QLabel(name, row)
    label.setObjectName("settingName")
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
    return text, label
