"""The composer's tray of attached images: a thumbnail each, a spinner while one is read.

An image is read, checked and scaled on a worker thread (``image_attach``), so the tray
shows what it has at each moment: a placeholder with a spinner for an image still
being read (removable: that cancels the read), the thumbnail once it is ready, in the
order the images were attached. The thumbnail arrives as a small ``QImage`` made off
the Qt thread; here it only becomes a pixmap, which is cheap at that size.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPaintEvent, QPen, QPixmap, QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from hearth.chats.images import ImageData
from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.theme_hook import ThemeHook
from hearth.ui.style.tokens import SPACE, Tokens

log = logging.getLogger(__name__)

THUMB_SIDE = 56  # px: a thumbnail's longer side in the composer
PASTED_NAME = "Pasted image"
SPIN_STEP_MS = 80  # the spinner's frame interval
SPIN_DEGREES = 30  # its turn per frame


@dataclass(eq=False)
class Attached:
    """One image in the tray: reading (``item`` None) or read, with its thumbnail."""

    name: str
    item: ImageData | None = None
    thumb: QImage | None = None


class Spinner(QWidget):
    """A turning arc in the accent colour: an image is being read. It turns only
    while shown (a hidden one costs no timer ticks)."""

    def __init__(self, side: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFixedSize(side, side)
        self.angle = 0
        self._timer = QTimer(self)
        self._timer.setInterval(SPIN_STEP_MS)
        self._timer.timeout.connect(self._turn)

    @property
    def turning(self) -> bool:
        return self._timer.isActive()

    def _turn(self) -> None:
        self.angle = (self.angle + SPIN_DEGREES) % 360
        self.update()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        self._timer.start()
        super().showEvent(event)

    def hideEvent(self, event: object) -> None:  # noqa: N802 - Qt override
        self._timer.stop()

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        t = tokens_for(self.palette())
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(t.surface_alt))
        painter.drawRoundedRect(QRectF(self.rect()), 6, 6)
        side = min(self.width(), self.height()) / 3
        box = QRectF(0, 0, side, side)
        box.moveCenter(QRectF(self.rect()).center())
        pen = QPen(QColor(t.accent_fill))
        pen.setWidthF(3)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawArc(box, -self.angle * 16, 270 * 16)  # Qt's angles: 1/16 degree
        painter.end()


class ImageTray(QWidget):
    """The thumbnails above the message box, each with its remove button, and a line
    that says why the last file was refused. Hidden while it has nothing to show."""

    remove_requested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("imageTray")
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(SPACE["xs"])
        self._row = QHBoxLayout()
        self._row.setSpacing(SPACE["s"])
        self._row.addStretch(1)
        col.addLayout(self._row)
        self.error = QLabel(self)
        self.error.setObjectName("imageError")
        self.error.setWordWrap(True)
        self.error.setAccessibleName("Image problem")
        self.error.hide()
        col.addWidget(self.error)
        self.thumbs: list[QWidget] = []  # a QLabel with the picture, or a Spinner
        self.remove_buttons: list[QToolButton] = []
        self._hook = ThemeHook(self, self._restyle)
        self.hide()

    def _restyle(self, t: Tokens) -> None:
        self.error.setStyleSheet(f"color: {t.danger};")
        for button in self.remove_buttons:
            button.setIcon(icon("close", t))

    @property
    def spinners(self) -> list[Spinner]:
        """The placeholders of images still being read."""
        return [w for w in self.thumbs if isinstance(w, Spinner)]

    def show_images(self, items: list[Attached], tokens: Tokens) -> None:
        while self._row.count() > 1:  # all but the stretch
            taken = self._row.takeAt(0)
            widget = taken.widget() if taken is not None else None
            if widget is not None:
                widget.deleteLater()
        self.thumbs, self.remove_buttons = [], []
        for n, item in enumerate(items):
            self._row.insertWidget(n, self._thumb(n, item, tokens))
        self._update_visible()

    def _thumb(self, n: int, entry: Attached, tokens: Tokens) -> QWidget:
        box = QWidget(self)
        box.setObjectName("imageThumb")
        row = QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        name = entry.name or PASTED_NAME
        shown: QWidget
        if entry.item is None or entry.thumb is None:
            shown = Spinner(THUMB_SIDE, box)
            shown.setToolTip(f"Reading {name}…")
            shown.setAccessibleName(f"Attached image {n + 1}: {name}, reading")
        else:
            label = QLabel(box)
            label.setPixmap(QPixmap.fromImage(entry.thumb))
            image = entry.item.image
            label.setToolTip(f"{name} · {image.width}x{image.height}")
            label.setAccessibleName(f"Attached image {n + 1}: {name}")
            shown = label
        remove = QToolButton(box)
        remove.setObjectName("removeImage")
        remove.setAutoRaise(True)
        remove.setIcon(icon("close", tokens))
        remove.setToolTip("Remove this image")
        remove.setAccessibleName(f"Remove image {n + 1}")
        remove.setCursor(Qt.CursorShape.PointingHandCursor)
        remove.clicked.connect(lambda: self.remove_requested.emit(n))
        row.addWidget(shown)
        row.addWidget(remove, 0, Qt.AlignmentFlag.AlignTop)
        self.thumbs.append(shown)
        self.remove_buttons.append(remove)
        return box

    def say(self, message: str) -> None:
        """Show why a file was refused ("" clears the line)."""
        self.error.setText(message)
        self.error.setVisible(bool(message))
        self._update_visible()

    def _update_visible(self) -> None:
        self.setVisible(bool(self.thumbs) or bool(self.error.text()))
