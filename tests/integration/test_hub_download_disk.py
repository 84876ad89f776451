"""Disk space: the pre-check before anything is written, and a disk that fills up while
writing (an injected short write + ENOSPC, and a real tiny tmpfs where available)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from fake_hub import FakeHub
from hearth.hub import DiskFullError, InsufficientDiskSpaceError
from hearth.hub.sidecar import part_path, read_sidecar
from hub_testing import (
    MID,
    REPO,
    RUNNER,
    blobs,
    dest_of,
    hub,
    isolated_hf,
    manager_for,
    models,
    pull_once,
    run,
    sha,
)

__all__ = ["blobs", "hub", "isolated_hf", "models"]  # fixtures: pytest finds them by name


def test_disk_precheck_refuses_and_leaves_nothing(hub: FakeHub, models: Path) -> None:
    probed: list[Path] = []

    def tiny_disk(path: Path) -> int:
        probed.append(path)
        return 2_000_000  # less than the 4 MB (3.8 MiB) file

    async def scenario() -> None:
        manager = manager_for(models, disk_free=tiny_disk)
        try:
            with pytest.raises(InsufficientDiskSpaceError) as err:
                await manager.pull(REPO, MID)
            assert "Not enough free disk space" in err.value.message
            assert "3.8 MiB" in err.value.message and "1.9 MiB" in err.value.message
        finally:
            await manager.aclose()

    run(scenario())
    assert probed and not models.exists()  # not even the folders were created
    assert hub.file_gets(REPO, MID) == []


class _DiskFillsAfter:
    """A file whose disk fills after ``budget`` bytes: a short write, then ENOSPC,
    exactly as ``write(2)`` behaves on a full file system."""

    def __init__(self, inner: BinaryIO, budget: list[int]) -> None:
        self._inner, self._budget = inner, budget

    def write(self, data: Any) -> int:
        if self._budget[0] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = self._inner.write(bytes(data[: self._budget[0]])) or 0
        self._budget[0] -= n
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_disk_full_while_writing_keeps_a_consistent_prefix(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    budget = [2_500_000]

    def opener(path: Path) -> BinaryIO:
        return _DiskFillsAfter(open(path, "r+b", buffering=0), budget)  # type: ignore[return-value]

    dest = dest_of(models, MID)

    async def scenario() -> None:
        manager = manager_for(models, opener=opener)
        try:
            with pytest.raises(DiskFullError) as err:
                await manager.pull(REPO, MID)
            assert "The disk is full" in err.value.message and "resume" in err.value.message
        finally:
            await manager.aclose()

    run(scenario())
    have = part_path(dest).stat().st_size
    assert not dest.exists() and read_sidecar(dest) is not None
    assert have == 2 * 1024 * 1024  # truncated back to the last whole, hashed write
    assert part_path(dest).read_bytes() == blobs[MID][:have]

    path = run(pull_once(models, REPO, MID))
    assert sha(path.read_bytes()) == sha(blobs[MID])
    assert hub.file_gets(REPO, MID)[-1].range_start == have


def _can_mount_private_tmpfs(probe_dir: Path) -> bool:
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return False
    probe_dir.mkdir()
    result = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         f"mount -t tmpfs -o size=1m none {probe_dir}"],
        capture_output=True,
        timeout=20,
    )  # fmt: skip
    return result.returncode == 0


def test_real_enospc_on_a_tiny_tmpfs(hub: FakeHub, tmp_path: Path, blobs: dict[str, bytes]) -> None:
    """A real full file system: a 6 MiB tmpfs in a private mount namespace (no root)."""
    if not _can_mount_private_tmpfs(tmp_path / "probe"):
        pytest.skip("unprivileged user+mount namespaces are not available here")
    hub.throttle_bps = 3_000_000
    disk = tmp_path / "tiny-disk"
    disk.mkdir()
    runner = (
        f"mount -t tmpfs -o size=6m none {disk} && exec {sys.executable} {RUNNER} "
        f"--endpoint {hub.url} --models {disk}/models --repo {REPO} --file {MID} "
        f"--fill-at 1500000 --fill-path {disk}/filler"
    )
    result = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", runner],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HF_ENDPOINT": hub.url},
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    first, after = report["first"], report["after_first"]
    assert not first["ok"] and first["code"] == "disk_full", first
    assert "The disk is full" in first["message"]
    assert not after["final_exists"] and after["sidecar_exists"]
    have = after["part_size"]
    assert have > 0 and after["part_sha256"] == sha(blobs[MID][:have])
    assert report["second"]["sha256"] == sha(blobs[MID])
    assert report["after_second"]["part_size"] is None
    assert not report["after_second"]["sidecar_exists"]
    assert hub.file_gets(REPO, MID)[-1].range_start == have
