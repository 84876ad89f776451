"""The Load dialog's building blocks on top of the app's ``Section`` card.

Settings and the Server page are made of ``ui/widgets/section.py`` cards; the Load dialog uses
the same ones so it looks like the rest of the app. Two things it needs that a settings
page does not: a row whose control spans the card (the GPU-offload slider reads badly
squeezed into the right-hand column), and a card that folds (LM Studio keeps the
rarely-touched knobs under "Advanced", closed until asked for). Both only arrange
widgets; the dialog owns what they mean.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialogButtonBox,
    QLabel,
    QPushButton,
    QToolButton,
    QWidget,
)

from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.theme_hook import ThemeHook, app_tokens, set_sheet
from hearth.ui.style.tokens import SPACE, Tokens
from hearth.ui.widgets.content_scroll import ContentScroll
from hearth.ui.widgets.section import Section

log = logging.getLogger(__name__)


class ToneLabel(QLabel):
    """A wrapped note in the theme's muted or danger colour, repainted when the theme
    changes (a colour fixed when the note was written would be the other theme's)."""

    def __init__(self, name: str, accessible: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.setAccessibleName(accessible)
        self.setWordWrap(True)
        self.tone = "muted"
        self._hook = ThemeHook(self, self._restyle)

    def set_tone(self, tone: str) -> None:
        """``"muted"`` or ``"danger"``."""
        self.tone = tone
        self._restyle(app_tokens())

    def _restyle(self, t: Tokens) -> None:
        color = t.danger if self.tone == "danger" else t.text_muted
        set_sheet(self, f"QLabel#{self.objectName()} {{ color: {color}; }}")


def compact_combo(combo: QComboBox, chars: int) -> None:
    """A combo as wide as ``chars`` characters, whatever its items: a long model name
    is elided instead of widening the dialog past a small screen."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(chars)


def primary_button(
    box: QDialogButtonBox, text: str, accessible: str, icon_kind: str
) -> QPushButton:
    """The dialog's one main action: accent-filled (the stylesheet's primary rule), with
    its icon, and the default button (Enter presses it)."""
    button = box.addButton(text, QDialogButtonBox.ButtonRole.AcceptRole)
    button.setAccessibleName(accessible)
    button.setProperty("primary", True)
    style = button.style()  # the box polished it on adding it: polish it again,
    style.unpolish(button)  # or the primary rule does not apply
    style.polish(button)
    theme = tokens_for(box.palette())
    button.setIcon(icon(icon_kind, theme, color=theme.on_accent))
    button.setDefault(True)
    return button


def grow_to_hint(window: QWidget) -> None:
    """Make ``window`` as tall as it asks for (a card just unfolded), as far as its
    screen allows; past that its scroll area scrolls, and it never shrinks (the size
    the user gave it stays)."""
    screen = window.screen()
    room = screen.availableGeometry().height() - 2 * SPACE["xxl"] if screen else 0
    want = window.sizeHint().height()
    if room > 0 and want > window.height():
        window.resize(window.width(), min(want, room))


class FoldingSection(Section):
    """A section whose body folds away under its title; ``expanded`` says which.

    Folded, the description still says what is inside, so nothing is hidden without
    a word: "Parallel slots, KV cache, …"."""

    toggled = Signal(bool)

    def __init__(
        self,
        title: str,
        description: str = "",
        parent: QWidget | None = None,
        *,
        expanded: bool = False,
    ) -> None:
        super().__init__(title, description, parent)
        self.toggle = QToolButton(self)
        self.toggle.setObjectName("foldToggle")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setAccessibleName(f"Show {title.lower()} settings")
        self.toggle.toggled.connect(self.set_expanded)
        self.add_header_widget(self.toggle)
        self._expanded = not expanded  # so that set_expanded lays it out
        self.set_expanded(expanded)

    @property
    def expanded(self) -> bool:
        return self._expanded

    def set_expanded(self, expanded: bool) -> None:
        if expanded == self._expanded:
            return
        self._expanded = expanded
        self.toggle.blockSignals(True)
        self.toggle.setChecked(expanded)
        self.toggle.blockSignals(False)
        self.toggle.setText("Hide" if expanded else "Show")
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        for i in range(self.body.count()):
            item = self.body.itemAt(i)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.setVisible(expanded)
        self.toggled.emit(expanded)

    def add_row(self, name: str, control: QWidget, hint: str = "") -> QWidget:
        row = super().add_row(name, control, hint)
        row.setVisible(self._expanded)
        return row

    def add_widget(self, widget: QWidget) -> None:
        """A widget of its own in the body (a check box), folded with the rows."""
        self.body.addWidget(widget)
        widget.setVisible(self._expanded)


class FittingScroll(ContentScroll):
    """A scroll area that asks for its content's whole size: the dialog opens as tall
    as its cards on a big screen, and scrolls only where the screen is smaller."""

    def __init__(self, content: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(content, parent, name="loadScroll")

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        content = self.widget()
        if content is None:
            return super().sizeHint()
        hint = content.sizeHint()
        width = max(self.viewport().width(), hint.width())
        return QSize(hint.width() + self.bar_width(), self.content_height(width))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        content = self.widget()
        width = content.minimumSizeHint().width() if content is not None else 0
        return QSize(width + self.bar_width(), 120)
