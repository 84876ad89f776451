"""A small, strict parser for the GGUF header (metadata and tensor table).

It reads from a buffer that may be only a prefix of the file, such as the first few MB
fetched with an HTTP Range request. When the buffer ends before the header does, it
raises :class:`ShortBufferError` with the offset it needed to reach, so the caller can read
more and try again. Anything else that is wrong raises :class:`MalformedHeaderError`.

Only the header is parsed: tensor data is never touched, so even a 100 GB model costs a
few MB of reading. Large arrays (the vocabulary, merges) are skipped and summarized by
type and length rather than kept in memory.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TypeAlias

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS

# Sanity limits: a header beyond these is corrupt, not merely large. Without them a
# flipped bit in a length field would ask the caller to fetch terabytes.
MAX_STRING_BYTES = 64 * 1024 * 1024
MAX_ARRAY_ITEMS = 1 << 27
MAX_KV_PAIRS = 1 << 20
MAX_TENSORS = 1 << 22
KEEP_ARRAY_ITEMS = 512  # arrays up to this length are kept; longer ones summarized

# GGUF value types (gguf.GGUFValueType), with the struct format of the scalar ones.
_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL = range(8)
_STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = range(8, 13)
_SCALAR_FORMATS = {
    _UINT8: "B",
    _INT8: "b",
    _UINT16: "H",
    _INT16: "h",
    _UINT32: "I",
    _INT32: "i",
    _FLOAT32: "f",
    _BOOL: "?",
    _UINT64: "Q",
    _INT64: "q",
    _FLOAT64: "d",
}
VALUE_TYPE_NAMES = {
    _UINT8: "u8",
    _INT8: "i8",
    _UINT16: "u16",
    _INT16: "i16",
    _UINT32: "u32",
    _INT32: "i32",
    _FLOAT32: "f32",
    _BOOL: "bool",
    _STRING: "str",
    _ARRAY: "arr",
    _UINT64: "u64",
    _INT64: "i64",
    _FLOAT64: "f64",
}


@dataclass(frozen=True)
class ArraySummary:
    """Stands in for an array too long to keep (e.g. ``tokenizer.ggml.tokens``)."""

    item_type: str
    length: int


MetaValue: TypeAlias = "int | float | bool | str | list[MetaValue] | ArraySummary"


@dataclass(frozen=True)
class RawTensorInfo:
    name: str
    shape: tuple[int, ...]  # ggml order: ne[0] (row length) first
    ggml_type: int
    offset: int  # relative to the start of the tensor data section


@dataclass(frozen=True)
class RawHeader:
    version: int
    big_endian: bool
    kv: dict[str, MetaValue]
    tensors: tuple[RawTensorInfo, ...]
    alignment: int
    data_offset: int  # absolute offset of the tensor data section


class ShortBufferError(Exception):
    """The buffer ended; the header continues at least up to byte ``needed``."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


class MalformedHeaderError(Exception):
    """The bytes are not a well-formed GGUF header; the message says what is wrong."""


class _Cursor:
    __slots__ = ("_data", "_formats", "_order", "pos")

    def __init__(self, data: bytes | bytearray | memoryview, order: str) -> None:
        self._data = memoryview(data).cast("B")
        self._order = order
        self._formats = {k: struct.Struct(order + f) for k, f in _SCALAR_FORMATS.items()}
        self.pos = 0

    def take(self, n: int) -> memoryview:
        end = self.pos + n
        if end > len(self._data):
            raise ShortBufferError(end)
        view = self._data[self.pos : end]
        self.pos = end
        return view

    def skip(self, n: int) -> None:
        self.take(n)

    def scalar(self, value_type: int) -> int | float | bool:
        fmt = self._formats[value_type]
        value: int | float | bool = fmt.unpack(self.take(fmt.size))[0]
        return value

    def u32(self) -> int:
        return int(self.scalar(_UINT32))

    def u64(self) -> int:
        return int(self.scalar(_UINT64))

    def string(self, what: str) -> str:
        length = self.u64()
        if length > MAX_STRING_BYTES:
            raise MalformedHeaderError(f"{what} claims a length of {length} bytes")
        return bytes(self.take(length)).decode("utf-8", errors="replace")

    def skip_string(self, what: str) -> None:
        length = self.u64()
        if length > MAX_STRING_BYTES:
            raise MalformedHeaderError(f"{what} claims a length of {length} bytes")
        self.skip(length)

    def value(self, value_type: int, what: str) -> MetaValue:
        if value_type in _SCALAR_FORMATS:
            return self.scalar(value_type)
        if value_type == _STRING:
            return self.string(what)
        if value_type == _ARRAY:
            return self.array(what)
        raise MalformedHeaderError(f"{what} has unknown value type {value_type}")

    def array(self, what: str) -> MetaValue:
        item_type = self.u32()
        length = self.u64()
        if length > MAX_ARRAY_ITEMS:
            raise MalformedHeaderError(f"{what} claims {length} items")
        if item_type not in VALUE_TYPE_NAMES:
            raise MalformedHeaderError(f"{what} has unknown item type {item_type}")
        keep = length <= KEEP_ARRAY_ITEMS
        if item_type in _SCALAR_FORMATS:
            fmt = self._formats[item_type]
            raw = self.take(fmt.size * length)
            if not keep:
                return ArraySummary(VALUE_TYPE_NAMES[item_type], length)
            return [v[0] for v in fmt.iter_unpack(raw)]
        if item_type == _STRING and not keep:
            for _ in range(length):
                self.skip_string(what)
            return ArraySummary("str", length)
        items = [self.value(item_type, what) for _ in range(length)]
        return items if keep else ArraySummary(VALUE_TYPE_NAMES[item_type], length)


def _byte_order(data: bytes | bytearray | memoryview) -> tuple[str, int]:
    """Detect endianness from the version field: files for big-endian hosts exist."""
    if len(data) < 8:
        raise ShortBufferError(8)
    little = struct.unpack_from("<I", data, 4)[0]
    big = struct.unpack_from(">I", data, 4)[0]
    if little in SUPPORTED_VERSIONS:
        return "<", little
    if big in SUPPORTED_VERSIONS:
        return ">", big
    version = little if little < 0x10000 else big
    if version == 1:
        raise MalformedHeaderError("it uses GGUF version 1, which llama.cpp no longer reads")
    raise MalformedHeaderError(f"it declares an unsupported GGUF version ({version})")


def parse_header(data: bytes | bytearray | memoryview) -> RawHeader:
    """Parse a GGUF header from ``data`` (the whole file or a prefix of it)."""
    if len(data) < 4:
        raise ShortBufferError(24)
    if bytes(data[:4]) != GGUF_MAGIC:
        raise MalformedHeaderError("it does not start with the GGUF signature")
    order, version = _byte_order(data)
    cur = _Cursor(data, order)
    cur.skip(8)
    n_tensors = cur.u64()
    n_kv = cur.u64()
    if n_tensors > MAX_TENSORS:
        raise MalformedHeaderError(f"it claims {n_tensors} tensors")
    if n_kv > MAX_KV_PAIRS:
        raise MalformedHeaderError(f"it claims {n_kv} metadata entries")

    kv: dict[str, MetaValue] = {}
    for index in range(n_kv):
        key = cur.string(f"metadata key #{index}")
        value_type = cur.u32()
        kv[key] = cur.value(value_type, f"metadata value {key!r}")

    alignment = kv.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise MalformedHeaderError(f"general.alignment is {alignment!r}, not a power of two")

    tensors: list[RawTensorInfo] = []
    for index in range(n_tensors):
        name = cur.string(f"tensor name #{index}")
        n_dims = cur.u32()
        if not 1 <= n_dims <= MAX_DIMS:
            raise MalformedHeaderError(f"tensor {name!r} has {n_dims} dimensions")
        shape = tuple(cur.u64() for _ in range(n_dims))
        ggml_type = cur.u32()
        offset = cur.u64()
        if offset % alignment:
            raise MalformedHeaderError(f"tensor {name!r} starts at a misaligned offset")
        tensors.append(RawTensorInfo(name, shape, ggml_type, offset))

    data_offset = -(-cur.pos // alignment) * alignment
    return RawHeader(
        version=version,
        big_endian=order == ">",
        kv=kv,
        tensors=tuple(tensors),
        alignment=alignment,
        data_offset=data_offset,
    )
