"""Errors of the local model library, each with a message a person can act on."""

from __future__ import annotations

from hearth.core.errors import HearthError


class LibraryError(HearthError):
    """A library operation failed (index file, delete, import)."""

    code = "library_error"


class InvalidModelFileError(LibraryError):
    """The file is not a usable GGUF model: wrong format, truncated or malformed header."""

    code = "invalid_model_file"


class NeedMoreBytesError(HearthError):
    """A bytes prefix of a GGUF file ended before its header did.

    ``needed`` is a lower bound: the header continues at least up to that byte. Fetch at
    least ``needed`` bytes, better ``suggested`` (fewer round trips), and parse again.
    """

    code = "need_more_bytes"

    def __init__(self, needed: int, suggested: int | None = None) -> None:
        super().__init__(
            f"The GGUF header continues past the bytes read so far; read at least the "
            f"first {needed} bytes and try again."
        )
        self.needed = needed
        self.suggested = max(needed, suggested or needed)
