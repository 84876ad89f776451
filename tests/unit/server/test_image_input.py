"""Images are decoded and checked in Python before any model sees them (issue 23).

Each bad input is a clear ``InvalidRequestError`` naming where the image was, never an
exception from Pillow and never bytes handed on to llama.cpp."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import pytest
from PIL import Image

from hearth.core.errors import ImagesNotSupportedError, InvalidRequestError
from hearth.core.generation import ChatMessage
from hearth.core.images import MAX_IMAGE_PIXELS, MAX_IMAGES_PER_REQUEST
from hearth.server import image_input


def encoded(image: Image.Image, fmt: str = "PNG", **save: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **save)
    return buffer.getvalue()


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height``: what a decompression bomb
    looks like before it is decoded."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 64)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_a_png_data_url_decodes_to_rgb_pixels():
    image = Image.new("RGB", (3, 2), (10, 20, 30))
    decoded = image_input.from_url(data_url(encoded(image)), "messages.0.content.1")
    assert (decoded.width, decoded.height, decoded.format) == (3, 2, "PNG")
    assert decoded.rgb == bytes([10, 20, 30]) * 6
    assert "ImageInput(PNG 3x2" in repr(decoded)  # pixels never reach a log line


def test_the_same_pixels_in_two_encodings_have_one_digest_and_others_another():
    image = Image.new("RGB", (8, 8), (200, 100, 50))
    as_png = image_input.decode(encoded(image, "PNG"), "a")
    as_bmp = image_input.decode(encoded(image, "BMP"), "b")
    other = image_input.decode(encoded(Image.new("RGB", (8, 8), (0, 0, 0))), "c")
    assert as_png.digest == as_bmp.digest
    assert as_png.digest != other.digest


def test_remote_and_file_urls_are_refused_without_fetching():
    for url in ("http://example.invalid/cat.png", "https://example.invalid/a.jpg",
                "file:///etc/passwd"):  # fmt: skip
        with pytest.raises(InvalidRequestError, match="not fetched") as caught:
            image_input.from_url(url, "messages.0.content.0")
        assert caught.value.param == "messages.0.content.0"


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("cat.png", "not a data URL"),
        ("data:image/png,rawbytes", "not base64"),
        ("data:image/png;base64,!!!!", "not valid base64|not an image"),
    ],
)
def test_malformed_data_urls_are_refused(url: str, words: str):
    with pytest.raises(InvalidRequestError, match=words):
        image_input.from_url(url, "x")


def test_bytes_that_are_no_image_are_refused():
    with pytest.raises(InvalidRequestError, match="not an image"):
        image_input.decode(b"this is plain text, not a picture" * 10, "images.0")
    with pytest.raises(InvalidRequestError, match="empty"):
        image_input.decode(b"", "images.0")


def test_a_truncated_png_is_refused():
    data = encoded(Image.effect_noise((64, 64), 40).convert("RGB"))
    with pytest.raises(InvalidRequestError, match="damaged or cut short"):
        image_input.decode(data[: len(data) // 2], "images.0")


def test_a_decompression_bomb_is_refused_before_its_pixels_are_decoded():
    with pytest.raises(InvalidRequestError, match="too large") as caught:
        image_input.decode(png_header_only(100_000, 100_000), "images.0")
    assert "megapixels" in caught.value.message
    side = int(MAX_IMAGE_PIXELS**0.5) + 1
    with pytest.raises(InvalidRequestError, match="too large"):
        image_input.decode(png_header_only(side, side), "images.0")


def test_an_animation_gives_its_first_frame():
    frames = [Image.new("RGB", (4, 4), color) for color in ((255, 0, 0), (0, 0, 255))]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=50)
    decoded = image_input.decode(buffer.getvalue(), "images.0")
    assert decoded.rgb[:3] == bytes([255, 0, 0])


def test_cmyk_palette_and_transparent_images_become_rgb():
    cmyk = image_input.decode(encoded(Image.new("CMYK", (2, 2), (0, 0, 0, 0)), "JPEG"), "a")
    assert len(cmyk.rgb) == 2 * 2 * 3 and min(cmyk.rgb) > 240  # no ink is white
    palette = Image.new("P", (2, 2), 1)
    palette.putpalette([0, 0, 0, 0, 255, 0] + [0] * 762)
    assert image_input.decode(encoded(palette), "b").rgb == bytes([0, 255, 0]) * 4
    clear = Image.new("RGBA", (2, 2), (0, 0, 0, 0))
    assert image_input.decode(encoded(clear), "c").rgb == bytes([255]) * 12  # over white


def test_exif_rotation_is_applied():
    image = Image.new("RGB", (6, 2), (0, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90° clockwise to show
    decoded = image_input.decode(encoded(image, "JPEG", exif=exif.tobytes()), "images.0")
    assert (decoded.width, decoded.height) == (2, 6)


def test_the_request_limits_count_images_and_their_pixels():
    one = image_input.decode(encoded(Image.new("RGB", (2, 2))), "a")
    image_input.check_request([one] * MAX_IMAGES_PER_REQUEST)
    with pytest.raises(InvalidRequestError, match=f"at most {MAX_IMAGES_PER_REQUEST}"):
        image_input.check_request([one] * (MAX_IMAGES_PER_REQUEST + 1))


def test_images_for_a_model_that_cannot_see_are_refused_with_the_fix():
    one = image_input.decode(encoded(Image.new("RGB", (2, 2))), "a")
    messages = [ChatMessage("user", "what is this?", images=(one, one))]
    with pytest.raises(ImagesNotSupportedError, match="reads text only") as caught:
        image_input.refuse_images(messages, "tiny")
    assert "2 images" in caught.value.message and "projector" in caught.value.message
    with pytest.raises(ImagesNotSupportedError, match="remote engines"):
        image_input.refuse_images(messages, "box/llama", remote=True)
    image_input.refuse_images([ChatMessage("user", "text only")], "tiny")  # no images: fine
