"""Images waiting in the composer: what was attached, its thumbnails, and why a file
was refused.

Files come from the attach button's dialog, a drop, or a paste (an image on the
clipboard, or files copied in a file manager); each is checked at once
(``chats.images.check_image``: the worker's own formats and limits), so a bad file is
a line under the thumbnails now, not a refused request later. Files that are not
images are handed back to the composer, which passes them on (documents).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QObject, QSize, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from hearth.chats.images import ImageData, ImageFileError, check_count, check_image, read_image_file
from hearth.ui.style.icons import icon
from hearth.ui.style.theme_hook import ThemeHook
from hearth.ui.style.tokens import SPACE, Tokens

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"})
THUMB_SIDE = 56  # px: a thumbnail's longer side in the composer
PASTED_NAME = "Pasted image"


def is_image_file(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES


def local_files(mime: QMimeData) -> list[Path]:
    """The local files a drop or paste carries (URLs of other kinds are left out)."""
    return [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]


def has_media(mime: QMimeData) -> bool:
    """Whether a drop or paste brings an image or files (rather than text)."""
    return mime.hasImage() or bool(local_files(mime))


def png_of(image: QImage) -> bytes:
    """A clipboard image as PNG bytes (lossless, and a format every model is sent)."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs say bytes; str works
    buffer.close()
    return bytes(data.data())


def thumbnail(data: bytes, side: int) -> QPixmap:
    """The image scaled to fit ``side`` x ``side`` (never enlarged)."""
    pixmap = QPixmap()
    pixmap.loadFromData(data)
    if pixmap.width() > side or pixmap.height() > side:
        pixmap = pixmap.scaled(
            QSize(side, side),
            Qt.AspectRatioMode.KeepAspectRatio,
            Qt.TransformationMode.SmoothTransformation,
        )
    return pixmap


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
        self.thumbs: list[QLabel] = []
        self.remove_buttons: list[QToolButton] = []
        self._hook = ThemeHook(self, self._restyle)
        self.hide()

    def _restyle(self, t: Tokens) -> None:
        self.error.setStyleSheet(f"color: {t.danger};")
        for button in self.remove_buttons:
            button.setIcon(icon("close", t))

    def show_images(self, items: list[ImageData], tokens: Tokens) -> None:
        while self._row.count() > 1:  # all but the stretch
            taken = self._row.takeAt(0)
            widget = taken.widget() if taken is not None else None
            if widget is not None:
                widget.deleteLater()
        self.thumbs, self.remove_buttons = [], []
        for n, item in enumerate(items):
            self._row.insertWidget(n, self._thumb(n, item, tokens))
        self._update_visible()

    def _thumb(self, n: int, item: ImageData, tokens: Tokens) -> QWidget:
        box = QWidget(self)
        box.setObjectName("imageThumb")
        row = QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        label = QLabel(box)
        label.setPixmap(thumbnail(item.data, THUMB_SIDE))
        image = item.image
        name = item.name or PASTED_NAME
        label.setToolTip(f"{name} · {image.width}x{image.height}")
        label.setAccessibleName(f"Attached image {n + 1}: {name}")
        remove = QToolButton(box)
        remove.setObjectName("removeImage")
        remove.setAutoRaise(True)
        remove.setIcon(icon("close", tokens))
        remove.setToolTip("Remove this image")
        remove.setAccessibleName(f"Remove image {n + 1}")
        remove.setCursor(Qt.CursorShape.PointingHandCursor)
        remove.clicked.connect(lambda: self.remove_requested.emit(n))
        row.addWidget(label)
        row.addWidget(remove, 0, Qt.AlignmentFlag.AlignTop)
        self.thumbs.append(label)
        self.remove_buttons.append(remove)
        return box

    def say(self, message: str) -> None:
        """Show why a file was refused ("" clears the line)."""
        self.error.setText(message)
        self.error.setVisible(bool(message))
        self._update_visible()

    def _update_visible(self) -> None:
        self.setVisible(bool(self.thumbs) or bool(self.error.text()))


class ImageAttachments(QObject):
    """The composer's images, in order, checked; ``changed`` after each change."""

    changed = Signal()

    def __init__(self, tray: ImageTray, tokens: Tokens, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.tray = tray
        self.tokens = tokens
        self.items: list[ImageData] = []
        tray.remove_requested.connect(self.remove)

    def add_files(self, paths: Iterable[Path]) -> list[Path]:
        """Attach the image files among ``paths``; the other files, for the caller."""
        others: list[Path] = []
        added = False
        for path in paths:
            if not is_image_file(path):
                others.append(path)
                continue
            added |= self._add(functools.partial(read_image_file, path))
        if added:
            self._changed()
        return others

    def add_image(self, image: QImage, name: str = PASTED_NAME) -> bool:
        """Attach a pasted image (kept as PNG)."""
        data = png_of(image)
        added = self._add(lambda: check_image(data, name))
        if added:
            self._changed()
        return added

    def _add(self, read: Callable[[], ImageData]) -> bool:
        try:
            check_count(len(self.items) + 1)
            item = read()
        except ImageFileError as exc:
            log.info("image refused: %s", exc)
            self.tray.say(str(exc))
            return False
        self.items.append(item)
        self.tray.say("")
        return True

    def remove(self, index: int) -> None:
        if 0 <= index < len(self.items):
            del self.items[index]
            self.tray.say("")
            self._changed()

    def take(self) -> list[ImageData]:
        """The images, for the message being sent; the composer is emptied."""
        items, self.items = self.items, []
        self.tray.say("")
        self._changed()
        return items

    def put_back(self, items: list[ImageData]) -> None:
        """A message that was not sent (or is being edited) gets its images back."""
        self.items = list(items) + self.items
        self._changed()

    def set_tokens(self, tokens: Tokens) -> None:
        self.tokens = tokens
        self._changed()

    def _changed(self) -> None:
        self.tray.show_images(self.items, self.tokens)
        self.changed.emit()
