"""The Library pairs a model with the projector beside it and says it sees (issue 23)."""

from __future__ import annotations

import shutil
from pathlib import Path

from gguf_projector import write_projector
from hearth.config.paths import AppPaths
from hearth.library.capabilities import model_capabilities
from hearth.library.library import Library


def test_a_model_pairs_with_the_f16_projector_in_its_folder(
    tmp_path: Path, tiny_model_q8: Path
) -> None:
    library = Library(AppPaths(tmp_path / "data", tmp_path / "config").ensure())
    repo = library.models_dir / "owner" / "tiny-vision-GGUF"
    lone = library.models_dir / "owner" / "text-only-GGUF"
    for folder in (repo, lone):
        folder.mkdir(parents=True)
        shutil.copy(tiny_model_q8, folder / "tiny-Q8_0.gguf")
    write_projector(repo / "mmproj-Q8_0.gguf")  # written as F16; the names differ
    write_projector(repo / "mmproj-F16.gguf")
    write_projector(repo / "mmproj-other-model-f16.gguf")  # names another model

    by_path = {m.path: m for m in library.models()}
    seer, blind = by_path[repo / "tiny-Q8_0.gguf"], by_path[lone / "tiny-Q8_0.gguf"]
    assert seer.projector == repo / "mmproj-F16.gguf"
    assert blind.projector is None
    projector = by_path[repo / "mmproj-F16.gguf"]
    assert projector.kind == "mmproj" and projector.projector is None
    chips = model_capabilities(seer.metadata, seer.kind, seer.projector)
    assert [c.label for c in chips][-1] == "Vision"
    assert "mmproj-F16.gguf" in chips[-1].tooltip
    assert "Vision" not in [c.label for c in model_capabilities(blind.metadata, blind.kind)]
