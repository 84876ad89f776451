"""``hearth serve --model/--draft-model/--mmproj`` take a library model's name as well as
a path, and a model named from the library gets its vision projector."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from hearth.cli.serve import UnknownModelError, resolve_model_names
from hearth.config.launch import LaunchSettings, add_launch_arguments
from hearth.library.library import Library


def settings(*argv: str) -> LaunchSettings:
    parser = argparse.ArgumentParser()
    add_launch_arguments(parser)
    return LaunchSettings.from_args(parser.parse_args(list(argv)))


def test_a_library_name_becomes_its_file(spec_models: dict[str, Path]) -> None:
    library = Library()
    library.import_in_place(spec_models["target"])
    library.import_in_place(spec_models["draft"])
    resolved = resolve_model_names(
        settings("--model", "target-Q8_0", "--draft-model", "draft-Q8_0")
    )
    assert resolved.load.model_path == spec_models["target"]
    assert resolved.load.draft_model_path == spec_models["draft"]
    # the rest of the settings travel unchanged, and back through the worker's argv
    assert "--draft-model" in resolved.to_argv()
    assert str(spec_models["draft"]) in resolved.to_argv()


def test_a_path_is_used_as_given_without_reading_the_library(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")

    def no_library(name: str) -> Path | None:
        raise AssertionError(f"looked up {name} although it is a file")

    resolved = resolve_model_names(settings("--model", str(model), "--draft-model", str(model)),
                                   no_library)  # fmt: skip
    assert resolved.load.model_path == model and resolved.load.draft_model_path == model


def test_a_name_found_nowhere_is_a_clear_error(tiny_model_q8: Path) -> None:
    with pytest.raises(UnknownModelError) as caught:
        resolve_model_names(settings("--model", str(tiny_model_q8), "--draft-model", "nope-1b"))
    message = str(caught.value)
    assert "--draft-model nope-1b" in message and "hearth ls" in message


def test_no_model_needs_no_lookup() -> None:
    plain = settings()
    assert resolve_model_names(plain) is plain


def test_a_model_named_from_the_library_gets_the_projector_beside_it(tmp_path: Path) -> None:
    folder = tmp_path / "owner" / "vision-GGUF"
    folder.mkdir(parents=True)
    model, projector = folder / "vision-Q4_K_M.gguf", folder / "mmproj-F16.gguf"
    for path in (model, projector, folder / "mmproj-Q8_0.gguf"):
        path.write_bytes(b"GGUF")
    library = {"vision-Q4_K_M": model}
    resolved = resolve_model_names(settings("--model", "vision-Q4_K_M"), library.get)
    assert resolved.load.mmproj_path == projector  # F16 before the quantized one
    argv = resolved.to_argv()  # and on to the worker
    assert argv[argv.index("--mmproj") + 1] == str(projector)
    by_path = resolve_model_names(settings("--model", str(model)), library.get)
    assert by_path.load.mmproj_path is None  # a file given by path loads as given
    chosen = resolve_model_names(
        settings("--model", "vision-Q4_K_M", "--mmproj", str(folder / "mmproj-Q8_0.gguf")),
        library.get,
    )
    assert chosen.load.mmproj_path == folder / "mmproj-Q8_0.gguf"  # the flag wins


def test_an_mmproj_found_nowhere_is_a_clear_error(tiny_model_q8: Path) -> None:
    with pytest.raises(UnknownModelError, match=r"--mmproj mmproj-nope\.gguf: no such GGUF"):
        resolve_model_names(settings("--model", str(tiny_model_q8), "--mmproj", "mmproj-nope.gguf"))
