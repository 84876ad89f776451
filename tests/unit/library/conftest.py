"""Helpers for library tests: split models made the way llama.cpp's gguf-split makes them."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest


def split_gguf(src: Path, dst: Path, max_tensors: int) -> list[Path]:
    """Rewrite ``src`` as shards ``dst-0000i-of-0000N.gguf`` of ``max_tensors`` tensors."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(dst, arch, split_max_tensors=max_tensors)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), vtype, sub_type=sub_type)
    for tensor in reader.tensors:
        writer.add_tensor(
            tensor.name,
            tensor.data,
            raw_shape=[int(d) for d in reversed(tensor.shape)],
            raw_dtype=tensor.tensor_type,
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return sorted(dst.parent.glob(f"{dst.stem}-*-of-*.gguf"))


@pytest.fixture
def split_tiny(tmp_path: Path, tiny_model_f16: Path) -> list[Path]:
    """The tiny F16 model as three shards in tmp_path/split/."""
    return split_gguf(tiny_model_f16, tmp_path / "split" / "tiny.gguf", 8)
