"""Images in chats: checked before they are sent, kept as files named by their sha256.

An image the user attaches is checked here first (Pillow: a format a vision model is
sent, its pixel count read from the header before any pixel is decoded, then the
whole file decoded, so a damaged one is refused in the composer with a message, not
by the worker a turn later). The limits are the worker's own (``core/images.py``).

Kept images are files in the data folder's ``images/`` (``config/paths.py``), named by
the sha256 of their bytes: the same picture attached twice, in one chat or in two, is
one file. ``message_images`` rows (schema v6) say which message shows which image, in
order. A file is deleted with the last row that names it (:meth:`ImageIndex.prune`).
"""

from __future__ import annotations

import hashlib
import io
import logging
import sqlite3
import threading
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from hearth.chats.schema import transaction
from hearth.config.atomic import write_bytes_atomic
from hearth.core.images import MAX_IMAGE_PIXELS, MAX_IMAGES_PER_REQUEST
from hearth.core.units import MIB

log = logging.getLogger(__name__)

MAX_IMAGE_BYTES = 8 * MIB
"""One file's size: the whole conversation goes to the worker each turn as base64 (a
third larger) in one request body, which the worker caps at 32 MiB."""

MIME_TYPES = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "WEBP": "image/webp",
    "GIF": "image/gif",
    "BMP": "image/bmp",
}
"""The formats the worker reads (``server/image_input.py``), by Pillow's names."""

_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp",
               "image/gif": "gif", "image/bmp": "bmp"}  # fmt: skip


class ImageFileError(ValueError):
    """A file that can't be attached; the message says why, for the user."""


@dataclass(frozen=True)
class ChatImage:
    """One kept image: its file's sha256 and what it is."""

    sha256: str
    mime: str
    width: int
    height: int
    size: int  # bytes

    @property
    def filename(self) -> str:
        return f"{self.sha256}.{_EXTENSIONS.get(self.mime, 'img')}"


@dataclass(frozen=True)
class ImageData:
    """An image with its bytes, as the composer holds it and a request sends it."""

    image: ChatImage
    data: bytes
    name: str = ""  # the file's name when attached (shown in the thumbnail's tooltip)


def check_image(data: bytes, name: str = "The image") -> ImageData:
    """``data`` as an image the worker accepts, or :class:`ImageFileError`."""
    if not data:
        raise ImageFileError(f"{name} is empty.")
    if len(data) > MAX_IMAGE_BYTES:
        raise _too_large(name, len(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data), formats=tuple(MIME_TYPES)) as image:
                width, height = image.size
                if width * height > MAX_IMAGE_PIXELS:
                    raise ImageFileError(
                        f"{name} is {width}x{height}: at most "
                        f"{MAX_IMAGE_PIXELS // 1_000_000} megapixels are accepted."
                    )
                image.load()
                fmt = image.format or ""
        except ImageFileError:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise ImageFileError(
                f"{name} has too many pixels: at most {MAX_IMAGE_PIXELS // 1_000_000} "
                "megapixels are accepted."
            ) from None
        except UnidentifiedImageError:
            raise ImageFileError(
                f"{name} is not an image Hearth can send (PNG, JPEG, WebP, GIF or BMP)."
            ) from None
        except (OSError, SyntaxError, ValueError, EOFError):
            raise ImageFileError(f"{name} is damaged or cut short.") from None
    image_info = ChatImage(hashlib.sha256(data).hexdigest(), MIME_TYPES[fmt], width, height,
                           len(data))  # fmt: skip
    return ImageData(image_info, data, name)


def read_image_file(path: Path) -> ImageData:
    """Read and check an image file (blocking: call off the GUI thread for big files)."""
    try:
        size = path.stat().st_size
        if size > MAX_IMAGE_BYTES:  # refused before reading it
            raise _too_large(path.name, size)
        data = path.read_bytes()
    except OSError as exc:
        raise ImageFileError(f"{path.name} can't be read: {exc.strerror or exc}") from None
    return check_image(data, path.name)


def _too_large(name: str, size: int) -> ImageFileError:
    return ImageFileError(
        f"{name} is {size / MIB:.1f} MB; images up to {MAX_IMAGE_BYTES // MIB} MB can be attached."
    )


def check_count(count: int) -> None:
    """A conversation's images all go with each turn: at most the worker's limit."""
    if count > MAX_IMAGES_PER_REQUEST:
        raise ImageFileError(
            f"A chat can hold {MAX_IMAGES_PER_REQUEST} images at most (each turn sends them "
            "all); start a new chat for more."
        )


class ImageIndex:
    """Which message shows which image, and the files themselves.

    ``ChatStore`` owns the connection and hands it (and its lock) here, as it does to
    the attachments index. ``folder`` None (an in-memory store) keeps no image.
    """

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock, folder: Path | None):
        self._conn = conn
        self._lock = lock
        self.folder = folder

    def path(self, image: ChatImage) -> Path:
        if self.folder is None:
            raise ImageFileError("This chat store keeps no images.")
        return self.folder / image.filename

    def add(self, message_id: int, images: Sequence[ImageData]) -> None:
        """Keep ``images`` as ``message_id``'s, in order (files first, then the rows)."""
        if not images:
            return
        for item in images:
            self._write_file(item)
        with self._lock, transaction(self._conn):
            self._conn.executemany(
                "INSERT INTO message_images(message_id, ordinal, sha256, mime, width, height,"
                " bytes) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        message_id,
                        n,
                        i.image.sha256,
                        i.image.mime,
                        i.image.width,
                        i.image.height,
                        i.image.size,
                    )
                    for n, i in enumerate(images)
                ],
            )

    def _write_file(self, item: ImageData) -> None:
        target = self.path(item.image)
        if target.exists() and target.stat().st_size == item.image.size:
            return  # the same bytes: content-addressed
        write_bytes_atomic(target, item.data)

    def of_messages(self, message_ids: Iterable[int]) -> dict[int, list[ChatImage]]:
        """Each listed message's images, in order (messages without any are left out)."""
        ids = list(message_ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._conn.execute(
                "SELECT message_id, sha256, mime, width, height, bytes FROM message_images"
                f" WHERE message_id IN ({marks}) ORDER BY message_id, ordinal",
                ids,
            ).fetchall()
        out: dict[int, list[ChatImage]] = {}
        for row in rows:
            out.setdefault(row[0], []).append(ChatImage(row[1], row[2], row[3], row[4], row[5]))
        return out

    def load(self, images: Iterable[ChatImage]) -> list[ImageData]:
        """The images with their bytes; a file gone from disk is skipped (logged)."""
        out = []
        for image in images:
            try:
                out.append(ImageData(image, self.path(image).read_bytes()))
            except (OSError, ImageFileError) as exc:
                log.warning("chat image %s is missing: %s", image.filename, exc)
        return out

    def of_conversation(self, conversation_id: int) -> set[str]:
        """The sha256 of every image the conversation's messages show (hidden ones too)."""
        return self._shas(
            "SELECT i.sha256 FROM message_images i JOIN messages m ON m.id = i.message_id"
            " WHERE m.conversation_id = ?",
            (conversation_id,),
        )

    def of_messages_from(self, conversation_id: int, message_id: int) -> set[str]:
        return self._shas(
            "SELECT i.sha256 FROM message_images i JOIN messages m ON m.id = i.message_id"
            " WHERE m.conversation_id = ? AND m.id >= ?",
            (conversation_id, message_id),
        )

    def _shas(self, sql: str, params: tuple[int, ...]) -> set[str]:
        with self._lock:
            return {row[0] for row in self._conn.execute(sql, params).fetchall()}

    def prune(self, shas: Iterable[str]) -> list[Path]:
        """Delete the files of ``shas`` that no message shows any more; the paths gone."""
        if self.folder is None:
            return []
        gone = []
        for sha in shas:
            with self._lock:
                used = self._conn.execute(
                    "SELECT 1 FROM message_images WHERE sha256 = ? LIMIT 1", (sha,)
                ).fetchone()
            if used is not None:
                continue
            for path in self.folder.glob(f"{sha}.*"):
                path.unlink(missing_ok=True)
                gone.append(path)
        if gone:
            log.info("deleted %d chat image(s) no chat uses", len(gone))
        return gone
