"""The shared servers of session and module fixtures never see the user's own folders.

Those fixtures are made before each test's ``isolated_dirs``: without the session's
own folders, a key made in the user's real config turned every shared server's answer
into a 401 on one machine and not on another."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from server_process import ServeProcess, start_serve


@pytest.fixture(scope="module")
def module_server(tiny_model_q8: Path, tmp_path_factory: pytest.TempPathFactory):
    served = start_serve(tiny_model_q8, tmp_path_factory.mktemp("isolation"), parallel=1)
    yield served
    served.stop()


def test_a_module_server_uses_the_sessions_folders(
    module_server: ServeProcess, isolated_session: Path
) -> None:
    log = module_server.log_text()
    cache_line = next(line for line in log.splitlines() if "prompt cache:" in line)
    assert str(isolated_session / "data" / "prompt-cache") in cache_line, cache_line
    assert str(Path.home()) not in cache_line


def test_each_test_still_gets_its_own_folders(tmp_path: Path, isolated_session: Path) -> None:
    assert Path(os.environ["HEARTH_CONFIG_DIR"]).parent == tmp_path
    assert os.environ["PYTHON_KEYRING_BACKEND"] == "keyring.backends.null.Keyring"
