"""``hearth paths`` in a real process: platformdirs by default, the overrides when set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hearth.ui.app import default_log_dir


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hearth", "paths", *args],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEARTH_", "XDG_"))}
    env["HOME"] = str(tmp_path / "home")
    return env


@pytest.mark.skipif(sys.platform != "linux", reason="XDG folders are the Linux rule")
def test_platform_folders_follow_xdg(tmp_path):
    env = _clean_env(tmp_path)
    env.update(XDG_DATA_HOME=str(tmp_path / "xd"), XDG_CONFIG_HOME=str(tmp_path / "xc"),
               XDG_STATE_HOME=str(tmp_path / "xs"))  # fmt: skip
    done = _run(env, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "data": str(tmp_path / "xd" / "Hearth"),
        "config": str(tmp_path / "xc" / "Hearth"),
        "logs": str(tmp_path / "xs" / "Hearth" / "log"),
        "models": str(tmp_path / "xd" / "Hearth" / "models"),
    }
    assert not (tmp_path / "xd").exists()  # asking creates nothing


def test_overrides_and_plain_output(tmp_path, monkeypatch):
    env = _clean_env(tmp_path)
    env.update(HEARTH_DATA_DIR=str(tmp_path / "d"), HEARTH_CONFIG_DIR=str(tmp_path / "c"))
    done = _run(env)
    assert done.returncode == 0, done.stderr
    rows = dict(line.split(None, 1) for line in done.stdout.splitlines())
    assert rows == {
        "data": str(tmp_path / "d"),
        "config": str(tmp_path / "c"),
        "logs": str(tmp_path / "d" / "logs"),
        "models": str(tmp_path / "d" / "models"),
    }
    # The log folder is the one the GUI gives the worker (worker.log lives there).
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "d"))
    assert rows["logs"] == str(default_log_dir())
    monkeypatch.delenv("HEARTH_DATA_DIR")
    from hearth.config.folders import log_dir

    assert log_dir() == default_log_dir()
