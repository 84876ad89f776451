"""``hearth pull --draft-model``: the fit check before a download counts the draft model
the pulled one will be used with, and a draft that names nothing stops it first."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_hub import FakeHub

REPO = "hearth/target-GGUF"


@pytest.fixture
def hub_env(
    spec_models: dict[str, Path], tmp_path: Path
) -> Iterator[tuple[FakeHub, dict[str, str]]]:
    with FakeHub() as hub:
        hub.add_repo(REPO, {"target-Q8_0.gguf": spec_models["target"].read_bytes()})
        env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"),
                   XDG_DATA_HOME=str(tmp_path / "xdg"))  # fmt: skip
        env.pop("HF_TOKEN", None)
        yield hub, env


def hearth(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hearth", *args], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip


def test_the_fit_check_counts_the_draft(
    hub_env: tuple[FakeHub, dict[str, str]], spec_models: dict[str, Path]
) -> None:
    _, env = hub_env
    draft = str(spec_models["draft"])
    pulled = hearth(env, "pull", f"{REPO}:Q8_0", "--ctx", "512", "--draft-model", draft)
    assert pulled.returncode == 0, pulled.stderr
    fit_line = next(line for line in pulled.stdout.splitlines() if line.startswith("Fit at 512"))
    assert "This includes the draft model draft-Q8_0 (" in fit_line
    assert "Downloaded and verified" in pulled.stdout


def test_an_unknown_draft_stops_before_anything_is_downloaded(
    hub_env: tuple[FakeHub, dict[str, str]],
) -> None:
    hub, env = hub_env
    refused = hearth(env, "pull", f"{REPO}:Q8_0", "--draft-model", "nope-1b")
    assert refused.returncode == 1
    assert "--draft-model nope-1b" in refused.stderr and "hearth ls" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert hub.file_gets(REPO, "target-Q8_0.gguf") == []
