"""``hearth fit MODEL --draft-model NAME|FILE`` counts the draft model's memory and names
it; the name is resolved as ``hearth serve --draft-model`` resolves it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hearth.cli import main
from hearth.cli.fit import DraftError, read_draft
from hearth.library.library import Library

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _no_gui(_argv: list[str]) -> int:
    raise AssertionError("the fit verb opened the GUI")


def fit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["fit", *argv], open_gui=_no_gui)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def first_bytes(summary: str) -> float:
    """The first size in a fit summary: RAM with CPU only, GPU memory with offload."""
    found = re.search(r"([\d.]+) (B|KiB|MiB|GiB)", summary)
    assert found, summary
    return float(found.group(1)) * UNITS[found.group(2)]


@pytest.fixture
def library(spec_models: dict[str, Path]) -> dict[str, Path]:
    lib = Library()
    lib.import_in_place(spec_models["target"])
    lib.import_in_place(spec_models["draft"])
    return spec_models


def test_a_library_draft_is_counted_and_named(
    capsys: pytest.CaptureFixture[str], library: dict[str, Path]
) -> None:
    code, alone, _ = fit(capsys, "target-Q8_0", "--ctx", "512")
    assert code == 0 and "draft" not in alone
    code, both, stderr = fit(capsys, "target-Q8_0", "--ctx", "512", "--draft-model", "draft-Q8_0")
    assert code == 0, stderr
    assert "This includes the draft model draft-Q8_0 (" in both
    # the draft's weights at least (its file) come on top of the target's estimate
    added = first_bytes(both) - first_bytes(alone)
    assert added >= 0.9 * library["draft"].stat().st_size


def test_a_draft_file_outside_the_library_works_too(
    capsys: pytest.CaptureFixture[str], spec_models: dict[str, Path]
) -> None:
    code, both, stderr = fit(capsys, str(spec_models["target"]), "-md", str(spec_models["draft"]))
    assert code == 0, stderr
    assert "This includes the draft model draft-Q8_0" in both


def test_an_unknown_or_unreadable_draft_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], spec_models: dict[str, Path], tmp_path: Path
) -> None:
    code, stdout, stderr = fit(capsys, str(spec_models["target"]), "--draft-model", "nope-1b")
    assert code == 1 and stdout == ""
    assert "--draft-model nope-1b" in stderr and "hearth ls" in stderr
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all")
    code, stdout, stderr = fit(capsys, str(spec_models["target"]), "--draft-model", str(junk))
    assert code == 1 and stdout == "" and "junk.gguf" in stderr
    assert "Traceback" not in stderr


def test_read_draft_resolves_like_serve(library: dict[str, Path]) -> None:
    assert read_draft(None) is None
    draft = read_draft("draft-Q8_0")
    assert draft is not None and draft.path == library["draft"] and draft.name == "draft-Q8_0"
    assert draft.meta.block_count == 2
    with pytest.raises(DraftError, match="no model of that name"):
        read_draft("missing-model")
