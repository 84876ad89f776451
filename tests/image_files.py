"""Small real image files for the chat-image tests (Pillow), and broken ones."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image, ImageDraw


def png_bytes(
    width: int = 24, height: int = 16, color: tuple[int, int, int] = (200, 40, 40)
) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def jpeg_bytes(width: int = 20, height: int = 20) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (30, 90, 200)).save(out, "JPEG")
    return out.getvalue()


def big_jpeg_bytes(width: int, height: int) -> bytes:
    """A large photo-sized JPEG (smooth gradients: a 40-megapixel one is under 1 MB,
    yet every pixel must be decoded to check it)."""
    ramp = Image.linear_gradient("L").resize((width, height))
    other = ramp.transpose(Image.Transpose.ROTATE_90).resize((width, height))
    picture = Image.merge("RGB", (ramp, other, ramp.transpose(Image.Transpose.FLIP_TOP_BOTTOM)))
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=85)
    return out.getvalue()


def huge_header_png(width: int = 10_000, height: int = 10_000) -> bytes:
    """A small PNG whose header claims ``width`` x ``height`` (a decompression bomb's
    shape): the check must refuse it from the header, before any pixel."""
    data = bytearray(png_bytes(4, 4))
    ihdr = 8  # after the signature: length(4) 'IHDR'(4) then width, height
    struct.pack_into(">II", data, ihdr + 8, width, height)
    body = bytes(data[ihdr + 4 : ihdr + 8 + 13])
    struct.pack_into(">I", data, ihdr + 8 + 13, zlib.crc32(body))
    return bytes(data)


def picture_png(width: int = 320, height: int = 200) -> bytes:
    """A picture with something to see (a sky gradient, a sun, a hill), for screenshots."""
    image = Image.new("RGB", (width, height))
    for y in range(height):
        shade = int(150 + 90 * y / height)
        image.paste((90, shade - 40, 230), (0, y, width, y + 1))
    draw = ImageDraw.Draw(image)
    draw.ellipse((width * 0.65, height * 0.12, width * 0.85, height * 0.44), fill=(255, 205, 60))
    draw.ellipse((-width * 0.3, height * 0.6, width * 0.9, height * 1.6), fill=(70, 150, 80))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()
