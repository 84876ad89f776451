"""Other apps' model folders are found in each app's own layout, on each OS."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from hearth.library.discovery import (
    HostEnv,
    discover_all,
    find_gpt4all,
    find_huggingface,
    find_jan,
    find_lmstudio,
    find_ollama,
    gpt4all_roots,
    hf_cache_roots,
    jan_roots,
    lmstudio_roots,
    ollama_roots,
)


def put(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


def linux(home: Path, **env: str) -> HostEnv:
    return HostEnv(home, "Linux", env, system_folders=False)


def names(found: list) -> list[str]:  # type: ignore[type-arg]
    return sorted(m.name for m in found)


# --------------------------------------------------------------------------- roots per OS


def test_default_roots_per_os(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mac = HostEnv(home, "Darwin", {})
    win = HostEnv(
        home,
        "Windows",
        {"APPDATA": r"C:\Users\me\AppData\Roaming", "LOCALAPPDATA": r"C:\Users\me\AppData\Local"},
    )
    lin = HostEnv(home, "Linux", {})

    assert lmstudio_roots(mac)[:2] == [home / ".lmstudio/models", home / ".cache/lm-studio/models"]
    assert hf_cache_roots(win) == [home / ".cache/huggingface/hub"]
    assert hf_cache_roots(linux(home, HF_HOME=str(tmp_path / "hf"))) == [tmp_path / "hf/hub"]
    assert hf_cache_roots(linux(home, HF_HUB_CACHE=str(tmp_path / "c"))) == [tmp_path / "c"]
    assert ollama_roots(mac) == [home / ".ollama/models"]
    assert Path("/usr/share/ollama/.ollama/models") in ollama_roots(lin)
    assert ollama_roots(linux(home, OLLAMA_MODELS=str(tmp_path / "o")))[0] == tmp_path / "o"
    assert gpt4all_roots(lin)[0] == home / ".local/share/nomic.ai/GPT4All"
    assert gpt4all_roots(mac)[0] == home / "Library/Application Support/nomic.ai/GPT4All"
    assert gpt4all_roots(win)[0] == Path(r"C:\Users\me\AppData\Local") / "nomic.ai" / "GPT4All"
    assert jan_roots(lin)[0] == home / "jan/models"
    assert home / "Library/Application Support/Jan/data/llamacpp/models" in jan_roots(mac)
    assert Path(r"C:\Users\me\AppData\Roaming") / "Jan" / "data" / "models" in jan_roots(win)


# --------------------------------------------------------------------------- each app


def test_lmstudio(tmp_path: Path, tiny_model_f16: Path) -> None:
    home = tmp_path / "home"
    put(tiny_model_f16, home / ".lmstudio/models/lmstudio-community/Tiny-GGUF/tiny-Q8_0.gguf")
    put(tiny_model_f16, home / ".cache/lm-studio/models/old/Repo-GGUF/old.gguf")
    custom = tmp_path / "big-disk" / "lms"
    put(tiny_model_f16, custom / "pub/Repo/custom.gguf")
    (home / ".lmstudio/settings.json").write_text(json.dumps({"downloadsFolder": str(custom)}))
    (home / ".lmstudio/models/pub/notes.txt").parent.mkdir(parents=True)
    (home / ".lmstudio/models/pub/notes.txt").write_text("not a model")

    found = find_lmstudio(linux(home))
    assert names(found) == [
        "lmstudio-community/Tiny-GGUF/tiny-Q8_0.gguf",
        "old/Repo-GGUF/old.gguf",
        "pub/Repo/custom.gguf",
    ]
    assert all(m.app == "lmstudio" and m.size_bytes == tiny_model_f16.stat().st_size for m in found)


def _hf_file(cache: Path, repo: str, commit: str, name: str, data: bytes) -> Path:
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    blob = repo_dir / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    link = repo_dir / "snapshots" / commit / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(blob, link.parent))
    return link


def test_huggingface_cache_follows_snapshot_links(tmp_path: Path, tiny_model_f16: Path) -> None:
    home = tmp_path / "home"
    cache = home / ".cache/huggingface/hub"
    data = tiny_model_f16.read_bytes()
    link = _hf_file(cache, "owner/Tiny-GGUF", "abc123", "tiny-F16.gguf", data)
    _hf_file(cache, "owner/Tiny-GGUF", "abc123", "README.md", b"# card")
    dangling = cache / "models--owner--Tiny-GGUF/snapshots/abc123/partial.gguf"
    dangling.symlink_to("../../blobs/never-finished")

    [model] = find_huggingface(linux(home))
    assert model.name == "owner/Tiny-GGUF/tiny-F16.gguf"
    assert model.path == link and model.path.resolve().parent.name == "blobs"
    assert model.size_bytes == len(data)

    moved = tmp_path / "elsewhere"
    shutil.move(str(cache), str(moved))
    assert find_huggingface(linux(home)) == []
    assert len(find_huggingface(linux(home, HF_HUB_CACHE=str(moved)))) == 1


def _ollama_model(root: Path, name_parts: list[str], data: bytes, digest: str) -> Path:
    blob = root / "blobs" / f"sha256-{digest}"
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    manifest = root / "manifests" / Path(*name_parts)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {
                    "mediaType": "application/vnd.docker.container.image.v1+json",
                    "digest": "sha256:cfg",
                    "size": 2,
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.ollama.image.template",
                        "digest": "sha256:t",
                        "size": 1,
                    },
                    {
                        "mediaType": "application/vnd.ollama.image.model",
                        "digest": f"sha256:{digest}",
                        "size": len(data),
                    },
                ],
            }
        )
    )
    return blob


def test_ollama_manifests_point_at_gguf_blobs(tmp_path: Path, tiny_model_f16: Path) -> None:
    home = tmp_path / "home"
    root = home / ".ollama/models"
    data = tiny_model_f16.read_bytes()
    blob = _ollama_model(root, ["registry.ollama.ai", "library", "llama3", "8b"], data, "a1" * 32)
    _ollama_model(root, ["hf.co", "owner", "Tiny-GGUF", "Q8_0"], data, "b2" * 32)
    _ollama_model(root, ["registry.ollama.ai", "library", "old", "ggml"], b"lmgg" * 9, "c3" * 32)
    broken = root / "manifests/registry.ollama.ai/library/broken/latest"
    broken.parent.mkdir(parents=True)
    broken.write_text("{")

    found = find_ollama(linux(home))
    assert names(found) == ["hf.co/owner/Tiny-GGUF:Q8_0", "library/llama3:8b"]
    llama3 = next(m for m in found if m.name == "library/llama3:8b")
    assert llama3.files == (blob,) and llama3.size_bytes == len(data)

    assert find_ollama(linux(tmp_path / "nobody", OLLAMA_MODELS=str(root)))[0].app == "ollama"


def test_gpt4all_default_folder_and_ini_model_path(tmp_path: Path, tiny_model_f16: Path) -> None:
    home = tmp_path / "home"
    put(tiny_model_f16, home / ".local/share/nomic.ai/GPT4All/tiny.Q4_0.gguf")
    custom = tmp_path / "g4a"
    put(tiny_model_f16, custom / "other.gguf")
    ini = home / ".config/nomic.ai/GPT4All.ini"
    ini.parent.mkdir(parents=True)
    ini.write_text(f"[General]\nmodelPath={custom}\n")
    assert names(find_gpt4all(linux(home))) == ["other.gguf", "tiny.Q4_0.gguf"]
    mac_home = tmp_path / "mac"
    put(tiny_model_f16, mac_home / "Library/Application Support/nomic.ai/GPT4All/m.gguf")
    assert names(find_gpt4all(HostEnv(mac_home, "Darwin", {}))) == ["m.gguf"]


def test_jan_legacy_and_data_folder(tmp_path: Path, tiny_model_f16: Path) -> None:
    home = tmp_path / "home"
    put(tiny_model_f16, home / "jan/models/tinyllama-1.1b/tinyllama.gguf")
    (home / "jan/models/tinyllama-1.1b/model.json").write_text("{}")
    put(tiny_model_f16, home / ".config/Jan/data/llamacpp/models/qwen3-4b/model.gguf")
    assert names(find_jan(linux(home))) == ["qwen3-4b/model.gguf", "tinyllama-1.1b/tinyllama.gguf"]


def test_discover_all_skips_non_gguf_and_missing_apps(tmp_path: Path, tiny_model_f16: Path) -> None:
    home = tmp_path / "home"
    put(tiny_model_f16, home / ".lmstudio/models/a/b/good.gguf")
    (home / ".lmstudio/models/a/b/fake.gguf").write_bytes(b"not a gguf at all")
    found = discover_all(linux(home))
    assert [(m.app, m.name) for m in found] == [("lmstudio", "a/b/good.gguf")]


@pytest.mark.parametrize("app", ["lmstudio", "jan"])
def test_split_models_are_one_discovery(tmp_path: Path, split_tiny: list[Path], app: str) -> None:
    home = tmp_path / "home"
    folder = home / (".lmstudio/models/o/r" if app == "lmstudio" else "jan/models/r")
    for shard in split_tiny:
        put(shard, folder / shard.name)
    [model] = discover_all(linux(home))
    assert model.name.endswith("r/tiny.gguf") and len(model.files) == 3
