"""A repo's projectors are not models to download alone: each model gets its own."""

from __future__ import annotations

from hearth.hub.names import parse_quant
from hearth.hub.repo import GgufFile, RepoListing, group_gguf_files


def _file(path: str) -> GgufFile:
    return GgufFile(path, 10, None, None, parse_quant(path), None)


def _listing(models: list[str], projectors: list[str]) -> RepoListing:
    return RepoListing(
        "o/r", None, False, None, False, None,
        group_gguf_files([_file(p) for p in models]), (),
        tuple(_file(p) for p in projectors),
    )  # fmt: skip


def test_f16_unless_only_quantized_ones_exist() -> None:
    listing = _listing(
        ["m-Q4_K_M.gguf"], ["mmproj-Q8_0.gguf", "mmproj-F32.gguf", "mmproj-F16.gguf"]
    )
    assert listing.vision
    (model,) = listing.models
    found = listing.projector_for(model)
    assert found is not None and found.path == "mmproj-F16.gguf"
    quantized = _listing(["m-Q4_K_M.gguf"], ["mmproj-Q4_K_M.gguf", "mmproj-Q8_0.gguf"])
    found = quantized.projector_for(quantized.models[0])
    assert found is not None and found.path == "mmproj-Q8_0.gguf"


def test_a_projector_in_another_folder_or_none_at_all() -> None:
    listing = _listing(["big/m-Q4_K_M.gguf"], ["small/mmproj-F16.gguf"])
    assert listing.projector_for(listing.models[0]) is None
    plain = _listing(["m-Q4_K_M.gguf"], [])
    assert not plain.vision and plain.projector_for(plain.models[0]) is None
