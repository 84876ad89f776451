"""The remote engines registry: names, URLs, the engines file and the engines' keys
(in Hearth's real secrets file store, never in engines.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hearth.config.engines import (
    EngineConfigError,
    EngineKind,
    EngineRegistry,
    check_name,
    normalize_url,
)
from hearth.config.paths import default_paths
from hearth.config.secrets import SecretStoreError, StoreChoice, get_secret, open_store

KEY = "sk-remote-0123456789abcdef"


@pytest.fixture
def registry() -> EngineRegistry:
    return EngineRegistry(store=open_store(StoreChoice.FILE))


@pytest.mark.parametrize("name", ["gpu-box", "a", "vllm.lab_2", "x" * 63])
def test_good_names(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "GPU", "-x", "a/b", "a b", "x" * 64, "é"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(EngineConfigError):
        check_name(name)


@pytest.mark.parametrize(
    ("url", "kind", "expected"),
    [
        ("http://gpu:8000", EngineKind.OPENAI, "http://gpu:8000"),
        ("http://gpu:8000/", EngineKind.OPENAI, "http://gpu:8000"),
        ("http://gpu:1234/v1", EngineKind.OPENAI, "http://gpu:1234"),
        ("https://lab.example/llm/v1/", EngineKind.OPENAI, "https://lab.example/llm"),
        ("http://box:11434/api", EngineKind.OLLAMA, "http://box:11434"),
        (" http://box:11434 ", EngineKind.OLLAMA, "http://box:11434"),
    ],
)
def test_urls_are_normalized(url: str, kind: EngineKind, expected: str) -> None:
    assert normalize_url(url, kind) == expected


@pytest.mark.parametrize(
    "url", ["gpu:8000", "ftp://gpu", "http://", "http://user:pw@gpu:8000", "http://gpu/?k=1"]
)
def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(EngineConfigError):
        normalize_url(url, EngineKind.OPENAI)


def test_add_list_remove_round_trip(registry: EngineRegistry) -> None:
    assert registry.engines() == ()
    registry.add("gpu-box", "http://gpu:8000/v1")
    registry.add("ollama-box", "http://box:11434", EngineKind.OLLAMA)
    names = [e.name for e in registry.engines()]
    assert names == ["gpu-box", "ollama-box"]
    again = EngineRegistry(store=open_store(StoreChoice.FILE))  # a second process's view
    spec = again.get("ollama-box")
    assert spec is not None and spec.kind is EngineKind.OLLAMA and spec.url == "http://box:11434"
    assert registry.remove("gpu-box") is True
    assert registry.remove("gpu-box") is False
    assert [e.name for e in again.engines()] == ["ollama-box"]


def test_the_file_is_replaced_atomically_with_no_temp_left(registry: EngineRegistry) -> None:
    registry.add("a", "http://a:1")
    registry.add("b", "http://b:1")
    folder = default_paths().config_dir
    assert sorted(p.name for p in folder.iterdir() if "engines" in p.name) == ["engines.json"]
    raw = json.loads((folder / "engines.json").read_text())
    assert raw["version"] == 1 and [e["name"] for e in raw["engines"]] == ["a", "b"]


def test_a_duplicate_name_needs_replace(registry: EngineRegistry) -> None:
    registry.add("gpu-box", "http://gpu:8000")
    with pytest.raises(EngineConfigError, match="exists"):
        registry.add("gpu-box", "http://other:8000")
    registry.add("gpu-box", "http://other:8000", replace_existing=True)
    spec = registry.get("gpu-box")
    assert spec is not None and spec.url == "http://other:8000"


def test_the_key_goes_to_the_secret_store_never_to_the_file(registry: EngineRegistry) -> None:
    spec = registry.add("gpu-box", "http://gpu:8000", api_key=KEY)
    assert spec.has_key
    text = (default_paths().config_dir / "engines.json").read_text()
    assert KEY not in text and '"has_key": true' in text
    assert registry.api_key(spec) == KEY
    assert get_secret(spec.key_name, open_store(StoreChoice.FILE)) == KEY
    assert registry.remove("gpu-box")
    assert get_secret(spec.key_name, open_store(StoreChoice.FILE)) is None


def test_replacing_without_a_key_forgets_the_old_key(registry: EngineRegistry) -> None:
    old = registry.add("gpu-box", "http://gpu:8000", api_key=KEY)
    new = registry.add("gpu-box", "http://gpu:8000", replace_existing=True)
    assert not new.has_key and registry.api_key(new) is None
    assert get_secret(old.key_name, open_store(StoreChoice.FILE)) is None


def test_a_key_the_store_refuses_leaves_the_file_unchanged() -> None:
    import keyring
    from keyring.backends.null import Keyring as NullKeyring

    # keyring picks its backend once per process: set the refusing one for this test.
    previous = keyring.get_keyring()
    keyring.set_keyring(NullKeyring())
    try:
        registry = EngineRegistry()  # the configured store: the null keyring refuses
        with pytest.raises(SecretStoreError, match="--store file"):
            registry.add("gpu-box", "http://gpu:8000", api_key=KEY)
        assert registry.engines() == ()
    finally:
        keyring.set_keyring(previous)


def test_changes_by_another_writer_are_seen(registry: EngineRegistry) -> None:
    registry.add("a", "http://a:1")
    assert [e.name for e in registry.engines()] == ["a"]
    other = EngineRegistry(store=open_store(StoreChoice.FILE))
    other.add("b", "http://b:1")
    path = default_paths().config_dir / "engines.json"
    stamp = path.stat().st_mtime_ns
    os.utime(path, ns=(stamp + 1_000_000, stamp + 1_000_000))  # coarse-clock filesystems
    assert [e.name for e in registry.engines()] == ["a", "b"]


def test_an_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "engines.json"
    path.write_text("{not json")
    with pytest.raises(EngineConfigError, match="unreadable"):
        EngineRegistry(path).engines()
    path.write_text(json.dumps({"version": 1, "engines": [{"name": "Bad/Name", "url": "x"}]}))
    with pytest.raises(EngineConfigError, match="unreadable"):
        EngineRegistry(path).engines()
