"""Decoding and checking the images of a request, before any model sees them.

Every dialect hands its images here (OpenAI ``image_url`` and Responses ``input_image``
data URLs, Anthropic base64 ``source`` blocks, Ollama's raw base64 ``images``). Bad
input is refused with an ``InvalidRequestError`` that names the image and what is wrong
with it, so each dialect answers in its own error shape. Hearth fetches nothing for a
client: an ``http(s)`` or ``file`` URL is refused, not downloaded.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import logging
import re
import warnings
from collections.abc import Iterable

from PIL import Image, ImageOps, UnidentifiedImageError

from hearth.core.errors import ImagesNotSupportedError, InvalidRequestError
from hearth.core.generation import ChatMessage
from hearth.core.images import (
    MAX_IMAGE_PIXELS,
    MAX_IMAGES_PER_REQUEST,
    MAX_REQUEST_PIXELS,
    ImageInput,
)

log = logging.getLogger(__name__)

FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
"""What vision models are sent in practice, and what llama-server's decoder reads."""

_SPACE = re.compile(r"\s+")
_URL_SAFE = str.maketrans("-_", "+/")
_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(;[^;,]*)*?),", re.I)


def from_url(url: str, where: str) -> ImageInput:
    """An image given as a URL: only ``data:`` URLs with base64 content are read."""
    head = url[:64].strip().lower()
    if head.startswith(("http://", "https://", "file:", "ftp:")):
        scheme = head.split(":", 1)[0]
        raise InvalidRequestError(
            f"Image URLs are not fetched ({scheme}: at {where}): Hearth runs offline and "
            "downloads nothing for a client. Send the image inline as a data URL "
            "(data:image/png;base64,...).",
            param=where,
        )
    match = _DATA_URL.match(url)
    if match is None:
        raise InvalidRequestError(
            f"The image at {where} is not a data URL. Send it as "
            "data:image/png;base64,... (or jpeg, webp).",
            param=where,
        )
    if ";base64" not in match.group("params").lower():
        raise InvalidRequestError(
            f"The image data URL at {where} is not base64-encoded.", param=where
        )
    return from_base64(url[match.end():], where)


def from_base64(text: str, where: str) -> ImageInput:
    """An image as base64 text (Ollama's ``images``, Anthropic's ``source.data``)."""
    compact = _SPACE.sub("", text).translate(_URL_SAFE)  # line breaks; URL-safe base64
    compact += "=" * (-len(compact) % 4)
    try:
        data = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequestError(
            f"The image at {where} is not valid base64.", param=where
        ) from None
    return decode(data, where)


def decode(data: bytes, where: str) -> ImageInput:
    """Decode and check one image's bytes: its format, its size before its pixels, the
    whole file (a truncated one is refused), then the first frame in RGB, upright."""
    if not data:
        raise InvalidRequestError(f"The image at {where} is empty.", param=where)
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data), formats=FORMATS) as image:
                _check_size(image.size, where)
                image.load()
                return _to_input(image, where)
        except InvalidRequestError:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise _too_big(where) from None
        except UnidentifiedImageError:
            raise InvalidRequestError(
                f"The data at {where} is not an image Hearth can read (PNG, JPEG, WebP, "
                "GIF or BMP).",
                param=where,
            ) from None
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            log.info("image at %s does not decode: %s", where, exc)
            raise InvalidRequestError(
                f"The image at {where} is damaged or cut short and cannot be decoded.",
                param=where,
            ) from None


def check_request(images: Iterable[ImageInput]) -> None:
    """The limits on all of one request's images together."""
    listed = list(images)
    if len(listed) > MAX_IMAGES_PER_REQUEST:
        raise InvalidRequestError(
            f"This request has {len(listed)} images; at most {MAX_IMAGES_PER_REQUEST} are "
            "accepted at once.",
            param="messages",
        )
    total = sum(image.pixels for image in listed)
    if total > MAX_REQUEST_PIXELS:
        raise InvalidRequestError(
            f"This request's images have {total / 1e6:.0f} megapixels together; at most "
            f"{MAX_REQUEST_PIXELS // 1_000_000} are accepted. Send smaller images.",
            param="messages",
        )


def refuse_images(messages: Iterable[ChatMessage], model: str, *, remote: bool = False) -> None:
    """Images for a model that can't see them are a clear 4xx, never silently dropped."""
    n_images = sum(len(message.images) for message in messages)
    if n_images:
        raise ImagesNotSupportedError(model, n_images, remote=remote)


def _check_size(size: tuple[int, int], where: str) -> None:
    width, height = size
    if width <= 0 or height <= 0:
        raise InvalidRequestError(f"The image at {where} has no pixels.", param=where)
    if width * height > MAX_IMAGE_PIXELS:
        raise _too_big(where, width, height)


def _too_big(where: str, width: int = 0, height: int = 0) -> InvalidRequestError:
    size = f" ({width}x{height})" if width else ""
    return InvalidRequestError(
        f"The image at {where} is too large{size}: at most "
        f"{MAX_IMAGE_PIXELS // 1_000_000} megapixels are accepted. Scale it down and send "
        "it again.",
        param=where,
    )


def _to_input(image: Image.Image, where: str) -> ImageInput:
    source = image.format or "image"
    image.seek(0)  # an animation's first frame
    upright = ImageOps.exif_transpose(image)
    rgb = _flatten(upright)
    pixels = rgb.tobytes()
    digest = hashlib.sha256(f"{rgb.width}x{rgb.height}:".encode() + pixels).hexdigest()
    log.debug("image at %s: %s %dx%d", where, source, rgb.width, rgb.height)
    return ImageInput(rgb.width, rgb.height, pixels, digest, source)


def _flatten(image: Image.Image) -> Image.Image:
    """8-bit RGB; transparency over white, as a viewer shows it (not black)."""
    if image.mode in ("RGBA", "LA", "PA") or (
        image.mode == "P" and "transparency" in image.info
    ):
        rgba = image.convert("RGBA")
        canvas = Image.new("RGB", rgba.size, (255, 255, 255))
        canvas.paste(rgba, mask=rgba.getchannel("A"))
        return canvas
    return image.convert("RGB") if image.mode != "RGB" else image
