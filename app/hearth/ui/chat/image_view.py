"""Images in the transcript: scaled thumbnails in the user's bubble, full size on click.

Each image is a resource of the transcript's document, named ``hearth-image:<sha256>``,
drawn at most ``THUMB_HEIGHT`` px tall and linked to the same name: a click opens
:class:`ImageViewer` (the picture at its own size, scrolled if larger than the
screen), which decodes the whole picture on a worker thread behind a spinner, as the
composer reads attachments (``image_attach``). The transcript keeps the bytes by
sha256 for the viewer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QSize, Qt, QUrl, Signal
from PySide6.QtGui import (
    QGuiApplication,
    QImage,
    QImageIOHandler,
    QImageReader,
    QPainter,
    QPaintEvent,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextImageFormat,
)
from PySide6.QtWidgets import QDialog, QLabel, QScrollArea, QVBoxLayout, QWidget

from hearth.chats.images import ImageData
from hearth.ui.chat.image_tray import Spinner
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

IMAGE_SCHEME = "hearth-image:"
THUMB_HEIGHT = 160  # px: an image in a user message, at most
THUMB_WIDTH = 320
SPINNER_SIDE = 48  # px: the viewer's spinner while the picture is decoded


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


def picture_size(data: bytes) -> QSize:
    """The picture's size as shown (turned as its EXIF says), from its header alone:
    no pixel is decoded, so it is cheap on the Qt thread."""
    buffer = QBuffer()
    buffer.setData(QByteArray(data))
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    size = reader.size()
    turned = reader.transformation() & QImageIOHandler.Transformation.TransformationRotate90
    buffer.close()
    return size.transposed() if turned else size


def full_picture(data: bytes) -> QImage:
    """The whole picture in ``data``, turned as its EXIF says; a null image if it can't
    be decoded. Blocking, and slow for a large photo (40 megapixels: a second or more,
    160 MB): a worker thread's. A ``QImage``, which may cross threads."""
    buffer = QBuffer()
    buffer.setData(QByteArray(data))
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    reader.setAutoTransform(True)
    picture = reader.read()
    if picture.isNull():
        log.info("image not shown: %s", reader.errorString())
    buffer.close()
    return picture


class Picture(QWidget):
    """A picture at its own size. It paints the ``QImage`` the worker thread decoded,
    only the part in view: no conversion to a pixmap of the whole photo on the Qt
    thread."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.image = QImage()

    def set_image(self, image: QImage) -> None:
        self.image = image
        self.setFixedSize(image.size())
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        if self.image.isNull():
            return
        painter = QPainter(self)
        painter.drawImage(event.rect(), self.image, event.rect())
        painter.end()


class ImageViewer(QDialog):
    """One image at its own size (scrolled when larger than the screen).

    It opens at once, sized from the picture's header, with a spinner in the picture's
    place; the picture is decoded on a worker thread (a large photo takes a second or
    more, and the window must keep turning meanwhile) and shown when ready (``ready``).
    Closing the viewer first drops the decode's result."""

    ready = Signal()

    def __init__(self, data: bytes, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("imageViewer")
        self.setWindowTitle("Image")
        size = picture_size(data)
        self.picture = Picture(self)
        self.picture.setAccessibleName(f"Image, {size.width()} by {size.height()} pixels")
        self.spinner = Spinner(SPINNER_SIDE, self)
        self.spinner.setAccessibleName("Opening the image")
        self.message = QLabel(self)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.hide()
        self.area = QScrollArea(self)
        self.area.setWidget(self.picture)
        self.area.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.spinner, 0, Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.message)
        layout.addWidget(self.area)
        screen = QGuiApplication.primaryScreen()
        room = screen.availableSize() * 0.9 if screen is not None else size
        width = max(size.width() + 4, SPINNER_SIDE * 2)
        height = max(size.height() + 4, SPINNER_SIDE * 2)
        self.resize(min(width, room.width()), min(height, room.height()))
        self._tasks = TaskSet()
        self.task = self._tasks.spawn(self._open(data), name="image-viewer")

    @property
    def loaded(self) -> bool:
        """Whether the picture is shown (or was found unreadable)."""
        return self.spinner.isHidden()

    async def _open(self, data: bytes) -> None:
        picture = await in_thread(full_picture, data)
        self.spinner.hide()
        if picture.isNull():
            self.message.setText("This image can't be shown: it could not be decoded.")
            self.message.show()
        else:
            self.picture.set_image(picture)
            self.area.show()
        self.ready.emit()

    def done(self, result: int) -> None:
        self._tasks.cancel_all()
        super().done(result)
