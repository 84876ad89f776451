"""GGUF headers are read from files and from byte prefixes, checked against gguf's reader."""

from __future__ import annotations

import struct
from pathlib import Path

import gguf
import numpy as np
import pytest

import gguf_factory as gf
from hearth.library.errors import InvalidModelFileError, NeedMoreBytesError
from hearth.library.gguf_metadata import (
    dominant_tensor_type,
    merge_shards,
    read_metadata,
    read_metadata_incremental,
)


def test_tiny_f16_matches_the_gguf_reference_reader(tiny_model_f16: Path) -> None:
    meta = read_metadata(tiny_model_f16)
    ref = gguf.GGUFReader(tiny_model_f16)
    spec = gf.TinyLlamaSpec()

    assert meta.architecture == "llama"
    assert meta.name == "Hearth Tiny Test"
    assert meta.version == 3
    assert (meta.file_type, meta.quantization) == (1, "F16")
    assert meta.context_length == spec.context_length
    assert meta.embedding_length == spec.n_embd
    assert meta.feed_forward_length == spec.n_ff
    assert meta.block_count == spec.n_layer
    assert (meta.head_count, meta.head_count_kv) == (spec.n_head, spec.n_head_kv)
    assert meta.vocab_size == gf.N_VOCAB
    assert meta.chat_template == gf.CHATML_TEMPLATE and meta.has_chat_template
    assert meta.fim_token_ids == (gf.FIM_PRE_ID, gf.FIM_SUF_ID, gf.FIM_MID_ID)
    assert meta.supports_fim
    assert meta.file_size == meta.expected_size == tiny_model_f16.stat().st_size
    assert meta.split_count == 1

    ours = {t.name: t for t in meta.tensors}
    assert set(ours) == {t.name for t in ref.tensors}
    for t in ref.tensors:
        mine = ours[t.name]
        assert mine.n_bytes == int(t.n_bytes)
        assert mine.n_elements == int(t.n_elements)
        assert mine.shape == tuple(int(d) for d in t.shape)
        assert meta.data_offset + mine.offset == int(t.data_offset)
    assert meta.parameter_count == sum(int(t.n_elements) for t in ref.tensors)
    assert meta.parameter_label == f"{meta.parameter_count / 1e6:.1f}M"

    per_layer = meta.layer_bytes()
    assert len(per_layer) == spec.n_layer and len(set(per_layer)) == 1
    non_layer = sum(t.n_bytes for t in meta.non_layer_tensors())
    assert sum(per_layer) + non_layer == meta.tensor_bytes


@pytest.mark.parametrize(
    ("fixture", "label", "dominant"),
    [("tiny_model_q8", "Q8_0", "Q8_0"), ("tiny_model_q4km", "Q4_K_M", "Q4_K")],
)
def test_quantization_from_file_type_and_from_tensors(
    request: pytest.FixtureRequest, fixture: str, label: str, dominant: str
) -> None:
    meta = read_metadata(request.getfixturevalue(fixture))
    assert meta.quantization == label
    assert dominant_tensor_type(meta.tensors) == dominant
    assert meta.tensor_bytes < read_metadata(request.getfixturevalue("tiny_model_f16")).tensor_bytes


def test_model_without_chat_template(tmp_path: Path) -> None:
    path = gf.write_tiny_llama(tmp_path / "plain.gguf", chat_template=None)
    meta = read_metadata(path)
    assert meta.chat_template is None and not meta.has_chat_template


# --------------------------------------------------------------------------- prefixes


def test_prefix_that_holds_the_header_is_enough(tiny_model_f16: Path) -> None:
    whole = read_metadata(tiny_model_f16)
    data = tiny_model_f16.read_bytes()
    meta = read_metadata(data[: whole.data_offset])
    assert meta.file_size is None and meta.path is None
    assert meta.tensors == whole.tensors
    assert meta.chat_template == whole.chat_template
    assert meta.expected_size == whole.expected_size


@pytest.mark.parametrize("cut", [0, 3, 20, 200, 5000, -1])
def test_short_prefix_asks_for_more_bytes(tiny_model_f16: Path, cut: int) -> None:
    header_end = read_metadata(tiny_model_f16).data_offset
    data = tiny_model_f16.read_bytes()[: cut if cut >= 0 else header_end - 40]
    with pytest.raises(NeedMoreBytesError) as info:
        read_metadata(data)
    assert len(data) < info.value.needed <= header_end
    assert info.value.suggested >= info.value.needed


def test_incremental_reader_grows_its_reads(tiny_model_f16: Path) -> None:
    data = tiny_model_f16.read_bytes()
    asked: list[int] = []

    def fetch(n: int) -> bytes:
        asked.append(n)
        return data[:n]

    meta = read_metadata_incremental(fetch, first_bytes=64, total_size=len(data))
    assert meta.tensors == read_metadata(tiny_model_f16).tensors
    assert meta.file_size == len(data)
    assert asked[0] == 64 and asked == sorted(asked) and len(asked) > 2
    assert asked[-1] < len(data)  # the header, not the whole file


def test_prefix_past_the_known_size_is_truncated(tiny_model_f16: Path) -> None:
    data = tiny_model_f16.read_bytes()[:500]
    with pytest.raises(InvalidModelFileError, match="truncated"):
        read_metadata(data, total_size=500)
    with pytest.raises(InvalidModelFileError, match="truncated"):
        read_metadata_incremental(lambda n: data[:n], first_bytes=100)


# --------------------------------------------------------------------------- bad files


@pytest.mark.parametrize(
    ("kind", "message"),
    [("truncated", "truncated"), ("bad_magic", "GGUF signature"), ("header_only", "truncated")],
)
def test_corrupt_files_give_clear_errors(tmp_path: Path, kind: str, message: str) -> None:
    path = gf.write_corrupt_gguf(tmp_path / f"{kind}.gguf", kind)  # type: ignore[arg-type]
    with pytest.raises(InvalidModelFileError, match=message) as info:
        read_metadata(path)
    assert path.name in info.value.message
    assert "again" in info.value.message or "another" in info.value.message


def test_missing_empty_and_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidModelFileError, match="not found"):
        read_metadata(tmp_path / "nope.gguf")
    (tmp_path / "empty.gguf").write_bytes(b"")
    with pytest.raises(InvalidModelFileError, match="truncated"):
        read_metadata(tmp_path / "empty.gguf")
    with pytest.raises(InvalidModelFileError, match="Not a file"):
        read_metadata(tmp_path)


def test_absurd_length_is_malformed_not_more_bytes(tiny_model_f16: Path) -> None:
    data = bytearray(tiny_model_f16.read_bytes()[:4096])
    struct.pack_into("<Q", data, 24, 1 << 50)  # length of the first metadata key
    with pytest.raises(InvalidModelFileError, match="claims a length"):
        read_metadata(bytes(data))


def test_unsupported_version(tiny_model_f16: Path) -> None:
    data = bytearray(tiny_model_f16.read_bytes()[:4096])
    struct.pack_into("<I", data, 4, 1)
    with pytest.raises(InvalidModelFileError, match="version 1"):
        read_metadata(bytes(data))


def test_big_endian_file(tmp_path: Path) -> None:
    path = tmp_path / "be.gguf"
    writer = gguf.GGUFWriter(path, "llama", endianess=gguf.GGUFEndian.BIG)
    writer.add_block_count(1)
    writer.add_context_length(512)
    writer.add_head_count_kv(2)
    writer.add_tensor("blk.0.attn_q.weight", np.ones((4, 32), dtype=np.float32).byteswap())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    meta = read_metadata(path)
    assert (meta.block_count, meta.context_length, meta.head_count_kv) == (1, 512, 2)
    assert [(t.name, t.shape, t.n_bytes) for t in meta.tensors] == [
        ("blk.0.attn_q.weight", (32, 4), 4 * 32 * 4)
    ]


# --------------------------------------------------------------------------- shards


def test_split_shards_merge_to_the_whole_model(
    split_tiny: list[Path], tiny_model_f16: Path
) -> None:
    whole = read_metadata(tiny_model_f16)
    parts = [read_metadata(p) for p in split_tiny]
    assert len(parts) == 3 and parts[0].split_count == 3
    assert parts[0].parameter_count < whole.parameter_count
    merged = merge_shards(parts)
    assert merged.parameter_count == whole.parameter_count
    assert merged.tensor_bytes == whole.tensor_bytes
    assert merged.layer_bytes() == whole.layer_bytes()
    assert merged.quantization == "F16"
    assert merged.chat_template == gf.CHATML_TEMPLATE
    assert merged.file_size == sum(p.stat().st_size for p in split_tiny)
    assert {t.shard for t in merged.tensors} == {0, 1, 2}
