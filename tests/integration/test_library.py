"""Models other apps left on disk are found, imported in place, and load in llama.cpp.

A fake home holds real tiny GGUF files in each app's own layout: LM Studio's publisher
folders, the Hugging Face cache (snapshot symlinks into blobs), Ollama (a JSON manifest
whose model layer names a ``sha256-...`` blob), GPT4All's data folder and Jan's models.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import gguf_factory as gf
from hearth.config.paths import default_paths
from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel
from hearth.library import HostEnv, InvalidModelFileError, Library, ModelSource, discover_all


def put(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


@pytest.fixture
def fake_home(tmp_path: Path, tiny_model_q8: Path, tiny_model_q4km: Path) -> Path:
    home = tmp_path / "home"
    # LM Studio: models/<publisher>/<repo>/<file>
    put(tiny_model_q8, home / ".lmstudio/models/lmstudio-community/Tiny-GGUF/Tiny-Q8_0.gguf")
    # Hugging Face cache: snapshots/<commit>/<file> -> ../../blobs/<sha256>
    repo = home / ".cache/huggingface/hub/models--owner--Tiny-GGUF"
    blob = put(tiny_model_q4km, repo / "blobs" / ("9f" * 32))
    link = repo / "snapshots" / ("c0" * 20) / "tiny-Q4_K_M.gguf"
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("c0" * 20)
    # Ollama: manifests/registry.ollama.ai/library/<model>/<tag> -> blobs/sha256-<digest>
    ollama = home / ".ollama/models"
    digest = "ab" * 32
    put(tiny_model_q8, ollama / "blobs" / f"sha256-{digest}")
    manifest = ollama / "manifests/registry.ollama.ai/library/tiny/latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "schemaVersion": 2,
                "layers": [
                    {
                        "mediaType": "application/vnd.ollama.image.model",
                        "digest": f"sha256:{digest}",
                        "size": tiny_model_q8.stat().st_size,
                    },
                    {
                        "mediaType": "application/vnd.ollama.image.params",
                        "digest": "sha256:00",
                        "size": 2,
                    },
                ],
            }
        )
    )
    # GPT4All: files directly in its data folder
    put(tiny_model_q4km, home / ".local/share/nomic.ai/GPT4All/tiny.Q4_K_M.gguf")
    # Jan: models/<id>/<file> plus its model.json
    put(tiny_model_q8, home / "jan/models/tiny-q8/model.gguf")
    (home / "jan/models/tiny-q8/model.json").write_text('{"id": "tiny-q8"}')
    # A download that died halfway, in LM Studio's folder
    gf.write_corrupt_gguf(home / ".lmstudio/models/someone/Broken-GGUF/broken.gguf", "truncated")
    return home


def test_found_on_disk_and_imported_in_place(fake_home: Path) -> None:
    found = discover_all(HostEnv(fake_home, "Linux", {}, system_folders=False))
    names = {(m.app, m.name) for m in found}
    assert names == {
        ("lmstudio", "lmstudio-community/Tiny-GGUF/Tiny-Q8_0.gguf"),
        ("lmstudio", "someone/Broken-GGUF/broken.gguf"),
        ("huggingface", "owner/Tiny-GGUF/tiny-Q4_K_M.gguf"),
        ("ollama", "library/tiny:latest"),
        ("gpt4all", "tiny.Q4_K_M.gguf"),
        ("jan", "tiny-q8/model.gguf"),
    }
    before = {m.path: (m.path.stat().st_size, m.path.stat().st_mtime_ns) for m in found}

    library = Library(default_paths().ensure())
    imported, refused = [], []
    for model in found:
        try:
            imported.append(library.import_in_place(model.path, name=model.name, origin=model.app))
        except InvalidModelFileError as exc:
            refused.append((model.name, exc.message))
    assert [name for name, _ in refused] == ["someone/Broken-GGUF/broken.gguf"]
    assert "truncated" in refused[0][1]

    listed = {m.id: m for m in Library(library.paths).models()}  # as a new process sees it
    assert set(listed) == {m.id for m in imported} and len(listed) == 5
    for model in listed.values():
        assert model.source is ModelSource.IMPORTED and model.ok, model.error
        assert model.metadata is not None and model.metadata.architecture == "llama"
    assert listed["library/tiny:latest"].metadata.quantization == "Q8_0"  # type: ignore[union-attr]
    assert listed["owner/Tiny-GGUF/tiny-Q4_K_M.gguf"].metadata.quantization == "Q4_K_M"  # type: ignore[union-attr]
    assert listed["library/tiny:latest"].origin == "ollama"

    # Nothing was copied or touched.
    assert not any(library.models_dir.rglob("*"))
    assert {m.path: (m.path.stat().st_size, m.path.stat().st_mtime_ns) for m in found} == before


@pytest.mark.parametrize("ref", ["library/tiny:latest", "owner/Tiny-GGUF/tiny-Q4_K_M.gguf"])
def test_imported_files_load_where_they_are(fake_home: Path, ref: str) -> None:
    library = Library(default_paths().ensure())
    for model in discover_all(HostEnv(fake_home, "Linux", {}, system_folders=False)):
        if model.name == ref:
            library.import_in_place(model.path, name=model.name, origin=model.app)
    entry = library.get(ref)
    assert entry is not None and entry.ok
    # An Ollama blob has no .gguf suffix; an HF cache entry is a symlink: llama.cpp
    # opens both from where they are.
    loaded = LlamaModel(LoadConfig(model_path=entry.path, n_ctx=256, n_parallel=1))
    try:
        info = loaded.info(entry.id)
        assert info.n_params == entry.metadata.parameter_count  # type: ignore[union-attr]
        assert info.chat_template == gf.CHATML_TEMPLATE and info.has_fim
    finally:
        loaded.close()
