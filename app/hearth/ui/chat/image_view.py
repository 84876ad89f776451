"""Images in the transcript: scaled thumbnails in the user's bubble, full size on click.

Each image is a resource of the transcript's document, named ``hearth-image:<sha256>``,
drawn at most ``THUMB_HEIGHT`` px tall and linked to the same name: a click opens
:class:`ImageViewer` (the picture at its own size, scrolled if larger than the
screen). The transcript keeps the bytes by sha256 for the viewer.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QUrl
from PySide6.QtGui import (
    QGuiApplication,
    QImage,
    QPixmap,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextImageFormat,
)
from PySide6.QtWidgets import QDialog, QLabel, QScrollArea, QVBoxLayout, QWidget

from hearth.chats.images import ImageData

IMAGE_SCHEME = "hearth-image:"
THUMB_HEIGHT = 160  # px: an image in a user message, at most
THUMB_WIDTH = 320


def insert_images(
    cursor: QTextCursor, document: QTextDocument, images: Sequence[ImageData]
) -> dict[str, bytes]:
    """Draw ``images`` in a row at ``cursor`` (then a new block for the text); the
    bytes by sha256, for the full-size viewer."""
    kept: dict[str, bytes] = {}
    for item in images:
        sha = item.image.sha256
        name = IMAGE_SCHEME + sha
        picture = QImage.fromData(item.data)
        if picture.isNull():
            continue
        document.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), picture)
        scale = min(1.0, THUMB_HEIGHT / picture.height(), THUMB_WIDTH / picture.width())
        fmt = QTextImageFormat()
        fmt.setName(name)
        fmt.setWidth(round(picture.width() * scale))
        fmt.setHeight(round(picture.height() * scale))
        fmt.setAnchor(True)
        fmt.setAnchorHref(name)
        fmt.setToolTip(f"{picture.width()}x{picture.height()} · click for full size")
        cursor.insertImage(fmt)
        cursor.insertText(" ", QTextCharFormat())
        kept[sha] = item.data
    if kept:
        cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
    return kept


class ImageViewer(QDialog):
    """One image at its own size (scrolled when larger than the screen)."""

    def __init__(self, data: bytes, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("imageViewer")
        self.setWindowTitle("Image")
        pixmap = QPixmap()
        pixmap.loadFromData(data)
        self.label = QLabel(self)
        self.label.setPixmap(pixmap)
        self.label.setAccessibleName(f"Image, {pixmap.width()} by {pixmap.height()} pixels")
        area = QScrollArea(self)
        area.setWidget(self.label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(area)
        screen = QGuiApplication.primaryScreen()
        room = screen.availableSize() * 0.9 if screen is not None else pixmap.size()
        self.resize(min(pixmap.width() + 4, room.width()), min(pixmap.height() + 4, room.height()))
