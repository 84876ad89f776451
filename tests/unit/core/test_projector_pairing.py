"""The one rule pairing a model with the projector beside it (core/projector_pairing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.core.projector_pairing import (
    is_projector,
    pair_projector,
    projector_precision,
    projector_rank,
)

D = Path("/models/owner/repo")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mmproj-F16.gguf", True),
        ("mmproj-gemma-3-4b-it-f16.gguf", True),
        ("Qwen2.5-VL-7B-Instruct-mmproj-f16.gguf", True),
        ("MMPROJ-model-f16.GGUF", True),
        ("gemma-3-4b-it-Q4_K_M.gguf", False),
        ("mmproj-F16.gguf.part", False),
    ],
)
def test_is_projector(name: str, expected: bool) -> None:
    assert is_projector(name) is expected


def test_precision_and_rank_prefer_f16_then_bf16_f32_then_most_bits() -> None:
    names = ["mmproj-Q4_K_M.gguf", "mmproj-F32.gguf", "mmproj-Q8_0.gguf", "mmproj.gguf",
             "mmproj-BF16.gguf", "mmproj-fp16.gguf"]  # fmt: skip
    assert projector_precision("mmproj-fp16.gguf") == "F16"
    ordered = sorted(names, key=projector_rank)
    assert ordered == ["mmproj-fp16.gguf", "mmproj-BF16.gguf", "mmproj-F32.gguf",
                       "mmproj-Q8_0.gguf", "mmproj-Q4_K_M.gguf", "mmproj.gguf"]  # fmt: skip


def test_generic_projector_pairs_with_the_folders_model_f16_first() -> None:
    model = D / "gemma-3-4b-it-Q4_K_M.gguf"
    files = [model, D / "mmproj-BF16.gguf", D / "mmproj-F16.gguf", D / "mmproj-F32.gguf"]
    assert pair_projector(model, files) == D / "mmproj-F16.gguf"


def test_a_name_sharing_the_models_stem_wins_over_precision() -> None:
    model = D / "gemma-3-4b-it-Q4_K_M.gguf"
    named = D / "mmproj-gemma-3-4b-it-Q8_0.gguf"
    assert pair_projector(model, [D / "mmproj-F16.gguf", named]) == named


def test_a_projector_naming_another_model_or_size_is_not_paired() -> None:
    model = D / "gemma-3-4b-it-Q4_K_M.gguf"
    assert pair_projector(model, [D / "mmproj-qwen2.5-vl-7b-f16.gguf"]) is None
    assert pair_projector(model, [D / "mmproj-gemma-3-12b-it-f16.gguf"]) is None


def test_only_projectors_in_the_models_own_folder() -> None:
    model = D / "gemma-3-4b-it-Q4_K_M.gguf"
    assert pair_projector(model, [Path("/elsewhere/mmproj-F16.gguf")]) is None
    assert pair_projector(model, [D / "other-model.gguf"]) is None
    assert pair_projector(D / "mmproj-F16.gguf", [D / "mmproj-F16.gguf"]) is None


def test_real_repo_names_pair() -> None:
    """Names as bartowski, ggml-org and Qwen publish them."""
    bart = D / "mistralai_Mistral-Small-3.2-24B-Instruct-2506-Q4_K_M.gguf"
    proj = D / "mmproj-mistralai_Mistral-Small-3.2-24B-Instruct-2506-f16.gguf"
    assert pair_projector(bart, [proj]) == proj
    qwen = D / "Qwen2.5-VL-7B-Instruct-Q4_K_M-00001-of-00002.gguf"
    qproj = D / "Qwen2.5-VL-7B-Instruct-mmproj-f16.gguf"
    assert pair_projector(qwen, [qproj]) == qproj
