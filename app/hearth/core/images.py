"""Images that clients send with a chat message, once decoded and checked.

An image reaches the model as pixels, never as the client's bytes: the worker decodes
each one in Python first (``server/image_input.py``), so that a file llama.cpp's own
decoder would choke on is a clear 4xx instead of a crashed worker. The same picture
sent twice, in any encoding, has one ``digest``, which is what a prompt cache matches.
"""

from __future__ import annotations

from dataclasses import dataclass

IMAGE_MARKER = "<__media__>"
"""Where an image stands in a message's text (llama.cpp's own media marker): the text
around it keeps its order, and the engine puts the image's embeddings there."""

MAX_IMAGES_PER_REQUEST = 16
"""More images than this in one request are refused."""

MAX_IMAGE_PIXELS = 50_000_000
"""One image's width times height above this is refused before its pixels are decoded (a
decompression bomb is a few kilobytes that would decode to gigabytes)."""

MAX_REQUEST_PIXELS = 100_000_000
"""All of a request's images together: about 300 MB of RGB."""


@dataclass(frozen=True)
class ImageInput:
    """A decoded image: 8-bit RGB, rows top to bottom, EXIF rotation applied."""

    width: int
    height: int
    rgb: bytes
    digest: str
    """sha256 over the size and the pixels: equal pictures are equal, however sent."""
    format: str
    """What the client's bytes were (``PNG``, ``JPEG``, ...), for logs and messages."""

    @property
    def pixels(self) -> int:
        return self.width * self.height

    def __repr__(self) -> str:  # never dump the pixels into a log line
        return f"ImageInput({self.format} {self.width}x{self.height} {self.digest[:12]})"
