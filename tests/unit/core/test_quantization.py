"""The type tables in core agree with llama.cpp (through its gguf package and its own
constants), so the engine, the fit estimate and the library name things alike."""

from __future__ import annotations

import gguf
import llama_cpp
import pytest

from hearth.core.errors import InvalidRequestError
from hearth.core.quantization import (
    KV_CACHE_TYPES,
    UnknownCacheTypeError,
    file_type_name,
    ggml_type_name,
    kv_cache_type,
    kv_row_bytes,
    row_bytes,
)


@pytest.mark.parametrize(
    ("value", "name"),
    [(0, "F32"), (1, "F16"), (7, "Q8_0"), (15, "Q4_K_M"), (30, "IQ4_XS"), (32, "BF16"),
     ("15", "Q4_K_M")],  # llama.cpp's metadata dict holds strings
)  # fmt: skip
def test_file_type_names(value: int | str, name: str) -> None:
    assert file_type_name(value) == name


@pytest.mark.parametrize("value", [None, 1024, 999, -1, "x"])  # absent, GUESSED, new, junk
def test_unknown_file_types_have_no_name(value: int | str | None) -> None:
    assert file_type_name(value) is None


def test_file_type_names_match_llama_cpp_constants() -> None:
    """Every LLAMA_FTYPE_MOSTLY_<NAME> llama-cpp-python exports has that number here."""
    exported = {
        name.removeprefix("LLAMA_FTYPE_MOSTLY_").removeprefix("LLAMA_FTYPE_ALL_"): value
        for name, value in vars(llama_cpp).items()
        if name.startswith(("LLAMA_FTYPE_MOSTLY_", "LLAMA_FTYPE_ALL_"))
    }
    assert {"Q4_K_M", "Q8_0", "BF16"} <= exported.keys()
    for name, value in exported.items():
        if file_type_name(value) is not None:  # gguf may not know a brand-new one yet
            assert file_type_name(value) == name


def test_kv_cache_types_match_llama_cpp() -> None:
    assert KV_CACHE_TYPES[:2] == ("f32", "f16")
    for name in KV_CACHE_TYPES:
        constant = getattr(llama_cpp, f"GGML_TYPE_{name.upper()}", None)
        if constant is not None:  # llama-cpp-python does not export every name (BF16)
            assert kv_cache_type(name) == constant
    assert kv_cache_type("BF16") == 30  # ggml.h: GGML_TYPE_BF16 = 30
    assert kv_cache_type("Q8_0") is gguf.GGMLQuantizationType.Q8_0


def test_unknown_kv_cache_type_is_a_bad_request_naming_the_choices() -> None:
    with pytest.raises(UnknownCacheTypeError) as info:
        kv_cache_type("q3_k")
    assert isinstance(info.value, InvalidRequestError) and isinstance(info.value, ValueError)
    assert "q3_k" in info.value.message and "q8_0" in info.value.message


def test_row_bytes_count_partial_blocks_whole() -> None:
    assert kv_row_bytes("f16", 64) == 128
    assert kv_row_bytes("q8_0", 64) == 68  # 2 blocks of 32 values, 34 bytes each
    assert kv_row_bytes("q8_0", 33) == 68
    assert kv_row_bytes("q4_0", 32) == 18
    assert row_bytes(gguf.GGMLQuantizationType.Q4_K, 256) == 144
    assert row_bytes(12345, 256) is None


def test_ggml_type_names() -> None:
    assert ggml_type_name(8) == "Q8_0"
    assert ggml_type_name(12345) == "TYPE_12345"
