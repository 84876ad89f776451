"""Images waiting in the composer: what was attached, read off the Qt thread, in order.

Files come from the attach button's dialog, a drop, or a paste (an image on the
clipboard, or files copied in a file manager). Each is read, checked
(``chats.images.check_image``: the worker's own formats and limits, which decodes the
whole picture) and scaled to a thumbnail on a worker thread (``ui/threads.in_thread``),
as documents are read: a 40-megapixel photo takes a second or more to decode, and the
window must keep turning meanwhile. Until then the tray shows a spinner in the image's
place (``image_tray``); removing it cancels the read. A bad file is a line under the
thumbnails, not a refused request later. Files that are not images are handed back to
the composer, which passes them on (documents). The message can't be sent while an
image is still being read (``reading``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QObject, Signal
from PySide6.QtGui import QImage

from hearth.chats.images import ImageData, ImageFileError, check_count, check_image, read_image_file
from hearth.ui.chat.image_tray import PASTED_NAME, THUMB_SIDE, Attached, ImageTray
from hearth.ui.chat.image_view import scaled_picture
from hearth.ui.style.tokens import Tokens
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"})

__all__ = ["PASTED_NAME", "THUMB_SIDE", "ImageAttachments", "ImageTray", "has_media",
           "is_image_file", "local_files", "png_of", "thumbnail"]  # fmt: skip


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


def thumbnail(data: bytes, side: int) -> QImage:
    """The image scaled to fit ``side`` x ``side`` (never enlarged); safe on a worker
    thread, and quick even for a large photo (``image_view.scaled_picture``)."""
    return scaled_picture(data, side, side)


def read_with_thumbnail(read: Callable[[], ImageData]) -> tuple[ImageData, QImage]:
    """Read and check an image, then make its thumbnail (blocking: a worker thread's)."""
    item = read()
    return item, thumbnail(item.data, THUMB_SIDE)


def check_pasted(image: QImage, name: str) -> ImageData:
    """A pasted picture, as PNG bytes checked like a file (blocking)."""
    return check_image(png_of(image), name)


class ImageAttachments(QObject):
    """The composer's images, in order, each read and checked off the Qt thread;
    ``changed`` after each change (one attached, read, refused or removed)."""

    changed = Signal()

    def __init__(self, tray: ImageTray, tokens: Tokens, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.tray = tray
        self.tokens = tokens
        self.entries: list[Attached] = []
        self._jobs: dict[Attached, asyncio.Task[None]] = {}  # reads and thumbnails in flight
        self._tasks = TaskSet()
        tray.remove_requested.connect(self.remove)

    @property
    def items(self) -> list[ImageData]:
        """The images read and checked, in the order they were attached."""
        return [e.item for e in self.entries if e.item is not None]

    @property
    def reading(self) -> bool:
        """Whether an image is still being read (the message waits for it)."""
        return any(e.item is None for e in self.entries)

    def hold_send(self) -> bool:
        """True (and the tray says why) while an image is still being read: a message
        sent now would go without it."""
        if self.reading:
            self.tray.say("An image is still being read: send once its thumbnail shows.")
        return self.reading

    def add_files(self, paths: Iterable[Path]) -> list[Path]:
        """Start reading the image files among ``paths``; the other files, for the caller."""
        others: list[Path] = []
        added = False
        for path in paths:
            if not is_image_file(path):
                others.append(path)
                continue
            added |= self._add(path.name, functools.partial(read_image_file, path))
        if added:
            self._changed()
        return others

    def add_image(self, image: QImage, name: str = PASTED_NAME) -> bool:
        """Attach a pasted image (kept as PNG; encoded off the Qt thread)."""
        added = self._add(name, functools.partial(check_pasted, QImage(image), name))
        if added:
            self._changed()
        return added

    def _add(self, name: str, read: Callable[[], ImageData]) -> bool:
        try:
            check_count(len(self.entries) + 1)
        except ImageFileError as exc:
            log.info("image refused: %s", exc)
            self.tray.say(str(exc))
            return False
        entry = Attached(name)
        self.entries.append(entry)
        self._jobs[entry] = self._tasks.spawn(self._read(entry, read), name="attach-image")
        self.tray.say("")
        return True

    async def _read(self, entry: Attached, read: Callable[[], ImageData]) -> None:
        try:
            item, thumb = await in_thread(read_with_thumbnail, read)
        except Exception as exc:  # ImageFileError says why; anything else, plainly
            message = str(exc) if isinstance(exc, ImageFileError) else (
                f"{entry.name or PASTED_NAME} can't be read: {exc}")  # fmt: skip
            log.info("image refused: %s", message)
            self._refused(entry, message)
            return
        finally:
            self._jobs.pop(entry, None)
        if entry in self.entries:  # not removed meanwhile
            entry.item, entry.thumb = item, thumb
            self._changed()

    async def _thumb(self, entry: Attached) -> None:
        """The thumbnail of an image already checked (one put back), off the Qt thread."""
        assert entry.item is not None
        try:
            entry.thumb = await in_thread(thumbnail, entry.item.data, THUMB_SIDE)
        finally:
            self._jobs.pop(entry, None)
        if entry in self.entries:
            self._changed()

    def _refused(self, entry: Attached, message: str) -> None:
        if entry in self.entries:
            self.entries.remove(entry)
            self.tray.say(message)
            self._changed()

    def remove(self, index: int) -> None:
        """Remove the image at ``index``; one still being read stops being waited for."""
        if 0 <= index < len(self.entries):
            entry = self.entries.pop(index)
            task = self._jobs.pop(entry, None)
            if task is not None:
                task.cancel()
            self.tray.say("")
            self._changed()

    def take(self) -> list[ImageData]:
        """The images, for the message being sent; the composer is emptied (an image
        still being read is dropped: the view sends only when none is)."""
        items = self.items
        self.clear()
        return items

    def clear(self) -> None:
        """Empty the tray, cancelling the reads in flight."""
        for task in self._jobs.values():
            task.cancel()
        self._jobs.clear()
        self.entries = []
        self.tray.say("")
        self._changed()

    def put_back(self, items: list[ImageData]) -> None:
        """A message that was not sent (or is being edited) gets its images back."""
        back = [Attached(i.name, i) for i in items]
        self.entries = back + self.entries
        for entry in back:
            self._jobs[entry] = self._tasks.spawn(self._thumb(entry), name="image-thumbnail")
        self._changed()

    def set_tokens(self, tokens: Tokens) -> None:
        self.tokens = tokens
        self._changed()

    def _changed(self) -> None:
        self.tray.show_images(self.entries, self.tokens)
        self.changed.emit()
