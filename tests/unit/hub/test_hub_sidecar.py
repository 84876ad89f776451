"""Download state on disk: the .part sidecar."""

from __future__ import annotations

import json
from pathlib import Path

from hearth.hub.sidecar import (
    Sidecar,
    dest_from_sidecar,
    find_sidecars,
    part_path,
    read_sidecar,
    remove_partial,
    sidecar_path,
    write_sidecar,
)


def _sidecar(**kw: object) -> Sidecar:
    base: dict[str, object] = {
        "repo_id": "a/b",
        "filename": "m-Q4_K_M.gguf",
        "revision": "main",
        "url": "https://huggingface.co/a/b/resolve/abc/m-Q4_K_M.gguf",
        "etag": "e" * 64,
        "commit": "c" * 40,
        "size": 123,
        "sha256": "e" * 64,
    }
    base.update(kw)
    return Sidecar(**base)  # type: ignore[arg-type]


def test_round_trip_and_paths(tmp_path: Path) -> None:
    dest = tmp_path / "a" / "b" / "m-Q4_K_M.gguf"
    side = _sidecar()
    write_sidecar(dest, side)
    assert sidecar_path(dest).name == "m-Q4_K_M.gguf.part.json"
    assert part_path(dest).name == "m-Q4_K_M.gguf.part"
    assert read_sidecar(dest) == side
    raw = json.loads(sidecar_path(dest).read_text())
    assert {"url", "etag", "commit", "size", "sha256"} <= raw.keys()
    # Written atomically: no temp files left next to it.
    assert sorted(p.name for p in dest.parent.iterdir()) == ["m-Q4_K_M.gguf.part.json"]
    assert find_sidecars(tmp_path) == [sidecar_path(dest)]
    assert dest_from_sidecar(sidecar_path(dest)) == dest


def test_unreadable_sidecar_is_ignored(tmp_path: Path) -> None:
    dest = tmp_path / "m.gguf"
    sidecar_path(dest).write_text("{not json")
    assert read_sidecar(dest) is None
    sidecar_path(dest).write_text(json.dumps({"version": 1, "size": -1}))
    assert read_sidecar(dest) is None
    sidecar_path(dest).write_text(json.dumps({**_sidecar().to_json(), "version": 99}))
    assert read_sidecar(dest) is None
    assert read_sidecar(tmp_path / "missing.gguf") is None


def test_matches_compares_remote_identity_only() -> None:
    side = _sidecar()
    assert side.matches(_sidecar(commit="d" * 40, url="https://elsewhere/x"))
    assert not side.matches(_sidecar(etag="f" * 64))
    assert not side.matches(_sidecar(size=124))
    assert not side.matches(_sidecar(sha256="0" * 64))


def test_remove_partial(tmp_path: Path) -> None:
    dest = tmp_path / "dl" / "m.gguf"
    dest.parent.mkdir()
    part_path(dest).write_bytes(b"abc")
    write_sidecar(dest, _sidecar())
    remove_partial(dest)
    assert list(dest.parent.iterdir()) == []
    remove_partial(dest)  # idempotent
