"""The library indexes folders without copying, imports in place, deletes safely."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import gguf_factory as gf
from hearth.config.paths import default_paths
from hearth.library import InvalidModelFileError, Library, LibraryError, ModelSource
from hearth.library.files import group_shards, parse_shard_name, sibling_shards


@pytest.fixture
def library() -> Library:
    return Library(default_paths().ensure())  # HEARTH_* dirs point into tmp_path


def put(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


def by_id(library: Library) -> dict[str, object]:
    return {m.id: m for m in library.models()}


# --------------------------------------------------------------------------- names


def test_shard_names_group_per_folder(tmp_path: Path) -> None:
    assert parse_shard_name("m-00002-of-00003.gguf").index == 2  # type: ignore[union-attr]
    assert parse_shard_name("m-00004-of-00003.gguf") is None
    assert parse_shard_name("m.gguf") is None
    paths = [
        tmp_path / "a" / "m-00002-of-00002.gguf",
        tmp_path / "a" / "m-00001-of-00002.gguf",
        tmp_path / "b" / "m-00001-of-00002.gguf",
        tmp_path / "a" / "single.gguf",
    ]
    groups = {(g.first.parent.name, g.name): g for g in group_shards(paths)}
    assert set(groups) == {("a", "m.gguf"), ("b", "m.gguf"), ("a", "single.gguf")}
    assert [p.name for p in groups["a", "m.gguf"].files] == [
        "m-00001-of-00002.gguf",
        "m-00002-of-00002.gguf",
    ]
    assert groups["a", "m.gguf"].complete and not groups["b", "m.gguf"].complete


def test_sibling_shards(split_tiny: list[Path]) -> None:
    assert sibling_shards(split_tiny[1]).files == tuple(split_tiny)


# --------------------------------------------------------------------------- listing


def test_models_dir_is_indexed_with_metadata(library: Library, tiny_model_q8: Path) -> None:
    put(tiny_model_q8, library.models_dir / "owner" / "repo" / "tiny-Q8_0.gguf")
    (library.models_dir / "owner" / "repo" / "tiny-Q4.gguf.part").write_bytes(b"partial")
    [model] = library.models()
    assert model.id == "owner/repo/tiny-Q8_0.gguf"
    assert model.source is ModelSource.HEARTH and model.ok and model.kind == "model"
    assert model.metadata is not None and model.metadata.quantization == "Q8_0"
    assert model.size_bytes == tiny_model_q8.stat().st_size


def test_broken_files_get_an_error_and_the_rest_still_loads(
    library: Library, tiny_model_f16: Path, tmp_path: Path
) -> None:
    put(tiny_model_f16, library.models_dir / "good.gguf")
    gf.write_corrupt_gguf(library.models_dir / "cut.gguf", "truncated")
    gf.write_corrupt_gguf(library.models_dir / "junk.gguf", "bad_magic")
    models = by_id(library)
    assert set(models) == {"good.gguf", "cut.gguf", "junk.gguf"}
    assert models["good.gguf"].ok  # type: ignore[attr-defined]
    assert "truncated" in models["cut.gguf"].error  # type: ignore[attr-defined]
    assert "GGUF signature" in models["junk.gguf"].error  # type: ignore[attr-defined]


def test_split_model_is_one_entry(library: Library, split_tiny: list[Path]) -> None:
    for shard in split_tiny:
        put(shard, library.models_dir / "r" / shard.name)
    [model] = library.models()
    assert model.id == "r/tiny.gguf" and len(model.files) == 3 and model.ok
    assert model.size_bytes == sum(p.stat().st_size for p in split_tiny)
    (library.models_dir / "r" / split_tiny[2].name).unlink()
    [model] = library.models()
    assert not model.ok and "only 2 are here" in (model.error or "")


def test_extra_folders_are_indexed_in_place_and_persist(
    library: Library, tiny_model_f16: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "my-models"
    put(tiny_model_f16, folder / "sub" / "a.gguf")
    added = library.add_folder(folder)
    assert added == folder.resolve()
    library.add_folder(folder)  # twice is once
    assert library.folders() == [folder.resolve()]

    again = Library(library.paths)  # a fresh process sees the same library
    [model] = again.models()
    assert model.id == "my-models/sub/a.gguf" and model.source is ModelSource.FOLDER
    assert model.path == folder.resolve() / "sub" / "a.gguf"  # not copied
    assert not any(library.models_dir.rglob("*.gguf"))

    again.remove_folder(folder)
    assert library.models() == [] and library.folders() == []
    with pytest.raises(LibraryError, match="not a folder"):
        library.add_folder(tmp_path / "missing")


def test_import_in_place(library: Library, tiny_model_q4km: Path, tmp_path: Path) -> None:
    elsewhere = put(tiny_model_q4km, tmp_path / "downloads" / "model.gguf")
    model = library.import_in_place(elsewhere, name="my model", origin="lmstudio")
    assert (model.id, model.source, model.origin) == ("my model", ModelSource.IMPORTED, "lmstudio")
    assert model.path == elsewhere and model.ok
    assert library.import_in_place(elsewhere) == model  # no duplicate
    saved = json.loads(library.index_file.read_text())
    assert saved["imports"] == [{"path": str(elsewhere), "name": "my model", "origin": "lmstudio"}]
    assert library.get("my model") == model
    assert library.get(str(elsewhere)) == model

    elsewhere.unlink()
    [gone] = library.models()
    assert "gone" in (gone.error or "")


def test_import_split_model_by_any_shard(
    library: Library, split_tiny: list[Path], tmp_path: Path
) -> None:
    model = library.import_in_place(split_tiny[1])
    assert model.path == split_tiny[0] and len(model.files) == 3 and model.ok
    assert model.id == "tiny.gguf"
    library.forget(model)
    assert library.models() == []
    split_tiny[2].unlink()
    with pytest.raises(InvalidModelFileError, match="only 2 are next to"):
        library.import_in_place(split_tiny[0])


def test_import_refuses_broken_files(library: Library, tmp_path: Path) -> None:
    bad = gf.write_corrupt_gguf(tmp_path / "bad.gguf", "header_only")
    with pytest.raises(InvalidModelFileError, match="truncated"):
        library.import_in_place(bad)
    with pytest.raises(InvalidModelFileError, match="not found"):
        library.import_in_place(tmp_path / "none.gguf")
    assert library.models() == []


def test_import_of_a_file_already_listed_returns_it(
    library: Library, tiny_model_f16: Path, tmp_path: Path
) -> None:
    put(tiny_model_f16, tmp_path / "f" / "x.gguf")
    library.add_folder(tmp_path / "f")
    model = library.import_in_place(tmp_path / "f" / "x.gguf")
    assert model.source is ModelSource.FOLDER and len(library.models()) == 1


def test_same_names_get_distinct_ids(
    library: Library, tiny_model_f16: Path, tmp_path: Path
) -> None:
    a = library.import_in_place(put(tiny_model_f16, tmp_path / "a" / "m.gguf"))
    b = library.import_in_place(put(tiny_model_f16, tmp_path / "b" / "m.gguf"))
    assert (a.id, b.id) == ("m.gguf", "m.gguf#2")


# --------------------------------------------------------------------------- delete


def test_delete_own_model_removes_files_and_empty_folders(
    library: Library, split_tiny: list[Path]
) -> None:
    for shard in split_tiny:
        put(shard, library.models_dir / "owner" / "repo" / shard.name)
    [model] = library.models()
    deleted = library.delete(model)
    assert sorted(p.name for p in deleted) == [p.name for p in split_tiny]
    assert not (library.models_dir / "owner").exists() and library.models_dir.is_dir()
    assert library.models() == []


def test_delete_import_forgets_unless_asked(
    library: Library, tiny_model_f16: Path, tmp_path: Path
) -> None:
    path = put(tiny_model_f16, tmp_path / "x.gguf")
    model = library.import_in_place(path)
    assert library.delete(model) == [] and path.exists() and library.models() == []
    model = library.import_in_place(path)
    assert library.delete(model, delete_files=True) == [path] and not path.exists()


def test_delete_in_added_folder_hides_until_reimported(
    library: Library, tiny_model_f16: Path, tmp_path: Path
) -> None:
    path = put(tiny_model_f16, tmp_path / "f" / "x.gguf")
    library.add_folder(tmp_path / "f")
    [model] = library.models()
    assert library.delete(model) == [] and path.exists()
    assert library.models() == []
    assert library.import_in_place(path).source is ModelSource.FOLDER


def test_ollama_blobs_are_never_deleted(
    library: Library, tiny_model_f16: Path, tmp_path: Path
) -> None:
    blob = put(tiny_model_f16, tmp_path / "blobs" / "sha256-abc")
    model = library.import_in_place(blob, name="library/tiny:latest", origin="ollama")
    with pytest.raises(LibraryError, match="ollama rm"):
        library.delete(model, delete_files=True)
    assert blob.exists()


def test_owned_delete_refuses_paths_outside_models_dir(
    library: Library, tiny_model_f16: Path, tmp_path: Path
) -> None:
    from dataclasses import replace

    outside = put(tiny_model_f16, tmp_path / "outside.gguf")
    put(tiny_model_f16, library.models_dir / "in.gguf")
    [model] = library.models()
    forged = replace(model, files=(outside,))
    with pytest.raises(LibraryError, match="outside"):
        library.delete(forged)
    assert outside.exists()


# --------------------------------------------------------------------------- index file


def test_damaged_index_is_set_aside(library: Library, tiny_model_f16: Path) -> None:
    put(tiny_model_f16, library.models_dir / "m.gguf")
    library.index_file.write_text("{not json")
    assert [m.id for m in library.models()] == ["m.gguf"]
    assert "damaged" in (library.index_problem() or "")
    assert library.index_file.with_name("library.json.broken").read_text() == "{not json"
    library.add_folder(library.paths.data_dir)  # a working index again
    assert json.loads(library.index_file.read_text())["version"] == 1


def test_index_writes_are_atomic(
    library: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    library.add_folder(tmp_path / "one")
    before = library.index_file.read_text()

    def fail(*_args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        library.add_folder(tmp_path / "two")
    assert library.index_file.read_text() == before
    assert [p.name for p in library.index_file.parent.iterdir()] == ["library.json"]
