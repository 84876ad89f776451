"""llama.cpp's type tables, by the names people and tools use, written once.

Every number here comes from the ``gguf`` package's enums (the same ones llama.cpp's
own Python tools use), so a new llama.cpp type is a ``gguf`` upgrade, not an edit:

- file types (``general.file_type``, ``llama_ftype``): ``15`` is ``"Q4_K_M"``;
- tensor element types (``ggml_type``): names and bytes per block;
- KV-cache types, by the lower-case names of llama.cpp's ``-ctk``/``-ctv`` flags,
  and the bytes a row of the cache takes in each.

The engine hands these values to llama.cpp (an ``IntEnum`` is an ``int``), the fit
estimate sizes memory with them, and the library names files with them.
"""

from __future__ import annotations

from collections.abc import Sequence

import gguf

from hearth.core.errors import InvalidRequestError

_FILE_TYPE_PREFIXES = ("ALL_", "MOSTLY_")

# The element types llama.cpp accepts for the KV cache (its ``-ctk`` list).
_KV_TYPES: dict[str, gguf.GGMLQuantizationType] = {
    t.name.lower(): t
    for t in (
        gguf.GGMLQuantizationType.F32,
        gguf.GGMLQuantizationType.F16,
        gguf.GGMLQuantizationType.BF16,
        gguf.GGMLQuantizationType.Q8_0,
        gguf.GGMLQuantizationType.Q5_1,
        gguf.GGMLQuantizationType.Q5_0,
        gguf.GGMLQuantizationType.Q4_1,
        gguf.GGMLQuantizationType.Q4_0,
        gguf.GGMLQuantizationType.IQ4_NL,
    )
}
KV_CACHE_TYPES: tuple[str, ...] = tuple(_KV_TYPES)
"""KV-cache type names in the order a picker shows them ("f16" is llama.cpp's default)."""


class UnknownCacheTypeError(InvalidRequestError, ValueError):
    """A KV-cache type name llama.cpp does not accept; the message lists those it does."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"unknown KV cache type {name!r}; use one of {', '.join(KV_CACHE_TYPES)}",
            param="cache_type",
        )


def file_type_name(value: int | str | None) -> str | None:
    """``general.file_type`` as the name tools use (15 -> ``"Q4_K_M"``).

    None when the value is absent, not a number, "guessed" or newer than this ``gguf``
    package: callers then fall back to the tensors' dominant type.
    """
    if value is None:
        return None
    try:
        member = gguf.LlamaFileType(int(value))
    except ValueError:
        return None
    if member is gguf.LlamaFileType.GUESSED:
        return None
    name = member.name
    for prefix in _FILE_TYPE_PREFIXES:
        name = name.removeprefix(prefix)
    return name


def ggml_type_name(ggml_type: int) -> str:
    """A tensor element type's name (``"Q8_0"``); ``TYPE_<n>`` for one ``gguf`` lacks."""
    try:
        return gguf.GGMLQuantizationType(ggml_type).name
    except ValueError:
        return f"TYPE_{ggml_type}"


def block_size(ggml_type: int) -> tuple[int, int] | None:
    """(elements per block, bytes per block) of an element type; None if unknown."""
    try:
        block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(ggml_type)]
    except (ValueError, KeyError):
        return None
    return block, type_size


def row_bytes(ggml_type: int, n_elements: int) -> int | None:
    """Bytes of ``n_elements`` values stored as ``ggml_type`` (a partial block counts
    whole); None for a type ``gguf`` does not know."""
    size = block_size(ggml_type)
    if size is None:
        return None
    block, type_size = size
    return -(-n_elements // block) * type_size


def element_count(shape: Sequence[int]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def kv_cache_type(name: str) -> gguf.GGMLQuantizationType:
    """The element type for a KV-cache name (``"q8_0"``, any case).

    Raises :class:`UnknownCacheTypeError` (an ``InvalidRequestError``, so the HTTP
    layer answers 400, and a ``ValueError``) for any other name.
    """
    try:
        return _KV_TYPES[name.lower()]
    except KeyError:
        raise UnknownCacheTypeError(name) from None


def kv_row_bytes(cache_type: str, n_elements: int) -> int:
    """Bytes of ``n_elements`` KV values stored as ``cache_type`` ("f16", "q8_0", ...)."""
    size = row_bytes(kv_cache_type(cache_type), n_elements)
    if size is None:  # every KV type is in GGML_QUANT_SIZES; a gguf without one is broken
        raise UnknownCacheTypeError(cache_type)
    return size
