"""The naming rule that pairs a model with its vision projector (core/projector_pairing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.core.projector_pairing import is_projector, pair_projector

FOLDER = Path("/models/ggml-org/gemma-3-4b-it-GGUF")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mmproj-F16.gguf", True),
        ("mmproj-gemma-3-4b-it-f16.gguf", True),
        ("gemma-3-4b-it-mmproj-BF16.gguf", True),
        ("MMPROJ-model-f16.GGUF", True),
        ("gemma-3-4b-it-Q4_K_M.gguf", False),
        ("mmproj-F16.gguf.part", False),
    ],
)
def test_projectors_are_named_for_mmproj(name: str, expected: bool) -> None:
    assert is_projector(FOLDER / name) is expected


def test_a_lone_projector_in_the_folder_pairs_whatever_its_name() -> None:
    model = FOLDER / "gemma-3-4b-it-Q4_K_M.gguf"
    projector = FOLDER / "mmproj-F16.gguf"
    assert pair_projector(model, [model, projector]) == projector


def test_no_projector_means_a_text_only_model() -> None:
    model = FOLDER / "gemma-3-4b-it-Q4_K_M.gguf"
    assert pair_projector(model, [model, FOLDER / "gemma-3-4b-it-Q8_0.gguf"]) is None
    assert pair_projector(model, []) is None


def test_a_projector_in_another_folder_is_not_beside_the_model() -> None:
    model = FOLDER / "gemma-3-4b-it-Q4_K_M.gguf"
    assert pair_projector(model, [Path("/elsewhere/mmproj-F16.gguf")]) is None


def test_f16_is_preferred_over_quantized_and_other_precisions() -> None:
    model = FOLDER / "gemma-3-4b-it-Q4_K_M.gguf"
    names = ["mmproj-Q8_0.gguf", "mmproj-F32.gguf", "mmproj-BF16.gguf", "mmproj-F16.gguf"]
    assert pair_projector(model, [FOLDER / n for n in names]) == FOLDER / "mmproj-F16.gguf"
    names.remove("mmproj-F16.gguf")
    assert pair_projector(model, [FOLDER / n for n in names]) == FOLDER / "mmproj-BF16.gguf"


def test_the_projector_sharing_the_models_name_wins_in_a_shared_folder() -> None:
    folder = Path("/models/flat")
    qwen = folder / "Qwen2.5-VL-7B-Instruct-Q4_K_M.gguf"
    gemma = folder / "gemma-3-4b-it-Q4_K_M-00001-of-00002.gguf"
    candidates = [
        folder / "mmproj-Qwen2.5-VL-7B-Instruct-Q8_0.gguf",
        folder / "mmproj-gemma-3-4b-it-f16.gguf",
        folder / "mmproj-Qwen2.5-VL-7B-Instruct-f16.gguf",
    ]
    assert pair_projector(qwen, candidates) == candidates[2]
    assert pair_projector(gemma, candidates) == candidates[1]
