"""Images in the transcript: scaled thumbnails in the user's bubble, full size on click.

Each image is a resource of the transcript's document, named ``hearth-image:<sha256>``,
drawn at most ``THUMB_HEIGHT`` px tall and linked to the same name: a click opens
:class:`ImageViewer` (the picture at its own size, scrolled if larger than the
screen). The transcript keeps the bytes by sha256 for the viewer.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QSize, Qt, QUrl
from PySide6.QtGui import (
    QGuiApplication,
    QImage,
    QImageReader,
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
        picture = scaled_picture(item.data, THUMB_WIDTH, THUMB_HEIGHT)
        if picture.isNull():
            continue
        document.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), picture)
        fmt = QTextImageFormat()
        fmt.setName(name)
        fmt.setWidth(picture.width())
        fmt.setHeight(picture.height())
        fmt.setAnchor(True)
        fmt.setAnchorHref(name)
        width, height = item.image.width, item.image.height
        fmt.setToolTip(f"{width}x{height} · click for full size")
        cursor.insertImage(fmt)
        cursor.insertText(" ", QTextCharFormat())
        kept[sha] = item.data
    if kept:
        cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
    return kept


def scaled_picture(data: bytes, width: int, height: int) -> QImage:
    """The picture in ``data`` scaled to fit ``width`` x ``height`` (never enlarged),
    turned as its EXIF says. Read at that size: a JPEG is decoded scaled down (a
    40-megapixel photo in a fraction of a whole decode's time), and only the small
    picture is kept (a whole one is 160 MB at 40 megapixels). A ``QImage``: safe on a
    worker thread too (the composer makes its thumbnails there)."""
    box = QSize(width, height)
    buffer = QBuffer()
    buffer.setData(QByteArray(data))
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    reader.setAutoTransform(True)
    size = reader.size()
    if size.isValid() and (size.width() > width or size.height() > height):
        reader.setScaledSize(size.scaled(box, Qt.AspectRatioMode.KeepAspectRatio))
    picture = reader.read()
    buffer.close()
    if picture.width() > width or picture.height() > height:  # turned by its EXIF
        picture = picture.scaled(box, Qt.AspectRatioMode.KeepAspectRatio,
                                 Qt.TransformationMode.SmoothTransformation)  # fmt: skip
    return picture


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
