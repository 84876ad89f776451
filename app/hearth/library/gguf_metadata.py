"""What a GGUF file says about its model, read from the header without loading it.

``read_metadata`` takes a path or the bytes of a file prefix (for example the first MBs
of a file on the Hub, fetched with an HTTP Range request). A prefix that is too short
raises :class:`NeedMoreBytesError`; ``read_metadata_incremental`` does the fetch-more loop.
A file that is not a GGUF, is truncated or has a malformed header raises
:class:`InvalidModelFileError` with a message that says so and what to do.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hearth.core.quantization import (
    block_size,
    element_count,
    file_type_name,
    ggml_type_name,
)
from hearth.core.units import format_count
from hearth.library.errors import InvalidModelFileError, NeedMoreBytesError
from hearth.library.gguf_reader import (
    ArraySummary,
    MalformedHeaderError,
    MetaValue,
    RawHeader,
    ShortBufferError,
    parse_header,
)

log = logging.getLogger(__name__)

FIRST_READ_BYTES = 1 << 20  # most headers fit; big vocabularies need a few MB
MAX_HEADER_BYTES = 512 << 20
_LAYER_RE = re.compile(r"^blk\.(\d+)\.")


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]  # ggml order: row length first
    ggml_type: int
    type_name: str  # "F16", "Q4_K", ... or "TYPE_<n>" for types gguf does not know
    n_elements: int
    n_bytes: int
    offset: int  # relative to the tensor data section of its shard
    shard: int = 0

    @property
    def layer(self) -> int | None:
        """The block index of ``blk.N.*`` tensors; None for embeddings, output, norms."""
        match = _LAYER_RE.match(self.name)
        return int(match.group(1)) if match else None


@dataclass(frozen=True)
class GgufMetadata:
    architecture: str
    name: str | None
    version: int
    parameter_count: int
    file_type: int | None  # general.file_type (llama_ftype)
    quantization: str  # "Q4_K_M", "F16", ...; from file_type, else the dominant tensor type
    context_length: int | None
    embedding_length: int | None
    feed_forward_length: int | None
    block_count: int | None
    head_count: int | None
    head_count_kv: int | None  # the largest, when a model varies it per layer
    head_count_kv_per_layer: tuple[int, ...]  # empty when the file does not say
    key_length: int | None  # per-head K width; embedding_length / head_count if absent
    value_length: int | None
    vocab_size: int | None
    chat_template: str | None
    fim_token_ids: tuple[int, int, int] | None  # (prefix, suffix, middle)
    tensors: tuple[TensorInfo, ...]
    data_offset: int  # bytes of header before the tensor data (first shard)
    expected_size: int  # bytes the header describes, summed over shards
    file_size: int | None  # actual bytes on disk, when known
    split_count: int
    kv: Mapping[str, MetaValue]
    path: Path | None = None

    @property
    def has_chat_template(self) -> bool:
        return bool(self.chat_template)

    @property
    def supports_fim(self) -> bool:
        return self.fim_token_ids is not None

    @property
    def tensor_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)

    def layer_bytes(self) -> list[int]:
        """Bytes of weights per block ``blk.N``, for N in range(block_count)."""
        count = self.block_count or 0
        sizes = [0] * count
        for tensor in self.tensors:
            layer = tensor.layer
            if layer is not None and layer < count:
                sizes[layer] += tensor.n_bytes
        return sizes

    def non_layer_tensors(self) -> list[TensorInfo]:
        return [t for t in self.tensors if t.layer is None]

    @property
    def parameter_label(self) -> str:
        """Parameter count the way model cards say it: "135M", "7.2B"."""
        return format_count(self.parameter_count)


# --------------------------------------------------------------------------- names


def tensor_nbytes(ggml_type: int, shape: Sequence[int]) -> int | None:
    """Bytes of a tensor's data; None for a type the gguf package does not know."""
    size = block_size(ggml_type)
    if size is None:
        return None
    block, type_size = size
    if shape and shape[0] % block:
        raise MalformedHeaderError(f"a row of {shape[0]} elements does not fit blocks of {block}")
    return element_count(shape) // block * type_size


def dominant_tensor_type(tensors: Sequence[TensorInfo]) -> str:
    """The type holding most bytes among matrices (norms stay F32 in every file type)."""
    totals: dict[str, int] = {}
    for tensor in tensors:
        if len([d for d in tensor.shape if d > 1]) >= 2:
            totals[tensor.type_name] = totals.get(tensor.type_name, 0) + tensor.n_bytes
    if not totals:
        return "unknown"
    return max(totals.items(), key=lambda item: item[1])[0]


# --------------------------------------------------------------------------- building


def _tensor_infos(header: RawHeader, shard: int, file_size: int | None) -> list[TensorInfo]:
    ordered = sorted(header.tensors, key=lambda t: t.offset)
    infos: list[TensorInfo] = []
    for index, raw in enumerate(ordered):
        n_elements = 1
        for dim in raw.shape:
            n_elements *= dim
        n_bytes = tensor_nbytes(raw.ggml_type, raw.shape)
        if n_bytes is None:  # a type newer than our gguf package: measure by offsets
            if index + 1 < len(ordered):
                n_bytes = ordered[index + 1].offset - raw.offset
            elif file_size is not None:
                n_bytes = max(0, file_size - header.data_offset - raw.offset)
            else:
                n_bytes = 0
        type_name = ggml_type_name(raw.ggml_type)
        infos.append(
            TensorInfo(
                raw.name,
                raw.shape,
                raw.ggml_type,
                type_name,
                n_elements,
                n_bytes,
                raw.offset,
                shard,
            )
        )
    return infos


def _int(kv: Mapping[str, MetaValue], key: str) -> int | None:
    value = kv.get(key)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return max(int(v) for v in value if isinstance(v, int))
    return None


def _str(kv: Mapping[str, MetaValue], key: str) -> str | None:
    value = kv.get(key)
    return value if isinstance(value, str) else None


def _vocab_size(kv: Mapping[str, MetaValue], arch: str) -> int | None:
    tokens = kv.get("tokenizer.ggml.tokens")
    if isinstance(tokens, ArraySummary):
        return tokens.length
    if isinstance(tokens, list):
        return len(tokens)
    return _int(kv, f"{arch}.vocab_size")


def _fim_ids(kv: Mapping[str, MetaValue]) -> tuple[int, int, int] | None:
    ids = [_int(kv, f"tokenizer.ggml.fim_{part}_token_id") for part in ("pre", "suf", "mid")]
    if any(i is None or i < 0 for i in ids):
        return None
    return (int(ids[0] or 0), int(ids[1] or 0), int(ids[2] or 0))


def _from_header(header: RawHeader, file_size: int | None, path: Path | None) -> GgufMetadata:
    kv = header.kv
    arch = _str(kv, "general.architecture") or "unknown"
    tensors = _tensor_infos(header, 0, file_size)
    expected = header.data_offset + max((t.offset + t.n_bytes for t in tensors), default=0)
    file_type = _int(kv, "general.file_type")
    quant = (file_type_name(file_type) if file_type is not None else None) or (
        dominant_tensor_type(tensors)
    )
    kv_heads = kv.get(f"{arch}.attention.head_count_kv")
    per_layer = (
        tuple(int(v) for v in kv_heads if isinstance(v, int)) if isinstance(kv_heads, list) else ()
    )
    return GgufMetadata(
        architecture=arch,
        name=_str(kv, "general.name"),
        version=header.version,
        parameter_count=sum(t.n_elements for t in tensors),
        file_type=file_type,
        quantization=quant,
        context_length=_int(kv, f"{arch}.context_length"),
        embedding_length=_int(kv, f"{arch}.embedding_length"),
        feed_forward_length=_int(kv, f"{arch}.feed_forward_length"),
        block_count=_int(kv, f"{arch}.block_count"),
        head_count=_int(kv, f"{arch}.attention.head_count"),
        head_count_kv=_int(kv, f"{arch}.attention.head_count_kv"),
        head_count_kv_per_layer=per_layer,
        key_length=_int(kv, f"{arch}.attention.key_length"),
        value_length=_int(kv, f"{arch}.attention.value_length"),
        vocab_size=_vocab_size(kv, arch),
        chat_template=_str(kv, "tokenizer.chat_template"),
        fim_token_ids=_fim_ids(kv),
        tensors=tuple(tensors),
        data_offset=header.data_offset,
        expected_size=expected,
        file_size=file_size,
        split_count=max(1, _int(kv, "split.count") or 1),
        kv=kv,
        path=path,
    )


# --------------------------------------------------------------------------- reading


def _describe(path: Path | None) -> str:
    return path.name if path is not None else "This file"


def _invalid(path: Path | None, reason: str) -> InvalidModelFileError:
    return InvalidModelFileError(
        f"{_describe(path)} is not a usable GGUF model: {reason}. "
        "Download it again or pick another file.",
        param=str(path) if path is not None else None,
    )


def _truncated(path: Path | None, have: int, want: int) -> InvalidModelFileError:
    return InvalidModelFileError(
        f"{_describe(path)} is truncated: it has {have} bytes but its header describes "
        f"{want}. The download or copy was probably interrupted; download it again.",
        param=str(path) if path is not None else None,
    )


def _parse(
    data: bytes | bytearray | memoryview, total: int | None, path: Path | None
) -> GgufMetadata:
    try:
        header = parse_header(data)
    except MalformedHeaderError as exc:
        raise _invalid(path, str(exc)) from None
    except ShortBufferError as short:
        if total is not None and short.needed > total:
            raise _truncated(path, total, short.needed) from None
        raise NeedMoreBytesError(short.needed, min(MAX_HEADER_BYTES, 2 * len(data))) from None
    try:
        meta = _from_header(header, total, path)
    except MalformedHeaderError as exc:
        raise _invalid(path, str(exc)) from None
    if total is not None and total < meta.expected_size:
        raise _truncated(path, total, meta.expected_size)
    return meta


def read_metadata(
    source: Path | str | bytes | bytearray | memoryview, *, total_size: int | None = None
) -> GgufMetadata:
    """Read a GGUF header from a file, or from bytes that are (a prefix of) one.

    For bytes, pass ``total_size`` when the full file size is known (e.g. from a HEAD
    request): a header running past it is then reported as truncated, not as
    :class:`NeedMoreBytesError`.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _parse(source, total_size, None)
    path = Path(source)
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            data = handle.read(min(size, FIRST_READ_BYTES))
            while True:
                try:
                    return _parse(data, size, path)
                except NeedMoreBytesError as more:
                    want = min(size, max(more.suggested, len(data) * 2))
                    handle.seek(len(data))
                    data += handle.read(want - len(data))
    except FileNotFoundError:
        raise InvalidModelFileError(f"Model file not found: {path}", param=str(path)) from None
    except IsADirectoryError:
        raise InvalidModelFileError(f"Not a file: {path}", param=str(path)) from None
    except PermissionError:
        raise InvalidModelFileError(
            f"Hearth may not read {path}; check the file's permissions.", param=str(path)
        ) from None
    except OSError as exc:
        raise InvalidModelFileError(f"Could not read {path}: {exc}", param=str(path)) from exc


def read_metadata_incremental(
    fetch_prefix: Callable[[int], bytes],
    *,
    first_bytes: int = FIRST_READ_BYTES,
    total_size: int | None = None,
    max_bytes: int = MAX_HEADER_BYTES,
) -> GgufMetadata:
    """Read a header through ``fetch_prefix(n)``, which returns the first n bytes.

    Starts with ``first_bytes`` and doubles (at least) until the header is complete; for
    remote files ``fetch_prefix`` is a ranged GET of ``bytes=0-(n-1)``.
    """
    want = first_bytes if total_size is None else min(first_bytes, total_size)
    while True:
        data = fetch_prefix(want)
        try:
            return read_metadata(data, total_size=total_size)
        except NeedMoreBytesError as more:
            if len(data) < want:  # the source has no more bytes to give
                raise _truncated(None, len(data), more.needed) from None
            grown = max(more.suggested, want * 2)
            if total_size is not None:
                grown = min(grown, total_size)
            if grown > max_bytes:
                raise InvalidModelFileError(
                    f"The GGUF header is larger than {max_bytes >> 20} MB; this is not a "
                    "model file Hearth can read."
                ) from None
            want = grown


def merge_shards(shards: Sequence[GgufMetadata]) -> GgufMetadata:
    """Combine the headers of a split model (``-00001-of-0000N``) into one description.

    The first shard carries the model's metadata; every shard carries its own tensors.
    """
    if not shards:
        raise ValueError("no shards to merge")
    first = shards[0]
    tensors = [replace(t, shard=i) for i, meta in enumerate(shards) for t in meta.tensors]
    sizes = [m.file_size for m in shards]
    return replace(
        first,
        tensors=tuple(tensors),
        parameter_count=sum(t.n_elements for t in tensors),
        expected_size=sum(m.expected_size for m in shards),
        file_size=None if any(s is None for s in sizes) else sum(s or 0 for s in sizes),
        quantization=(file_type_name(first.file_type) if first.file_type is not None else None)
        or dominant_tensor_type(tensors),
    )
