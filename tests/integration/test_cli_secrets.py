"""hearth login / keys create say where a secret really went, and on a machine with no
keyring they fail naming --store file; with it, secrets.json (mode 600) is used by the
later commands and by hearth serve. Real keyring backends, real subprocesses."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from keyring_backends.file_keyring import child_env
from server_process import start_serve

NULL = "keyring.backends.null.Keyring"
FAIL = "keyring.backends.fail.Keyring"
PLAINTEXT = "file_keyring.AltPlaintextKeyring"  # tests/keyring_backends


def env_with(backend: str, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, **child_env(tmp_path / "ring" / "keyring.json", backend))
    env.pop("HEARTH_SECRET_STORE", None)
    return env


def hearth(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hearth", *args], capture_output=True,
                          text=True, timeout=60, env=env)  # fmt: skip


def secrets_file() -> Path:
    return Path(os.environ["HEARTH_CONFIG_DIR"]) / "secrets.json"


@pytest.mark.parametrize("backend", [NULL, FAIL])
def test_no_keyring_fails_and_names_the_flag(backend: str, tmp_path: Path) -> None:
    env = env_with(backend, tmp_path)
    for args in (("login", "--token", "hf_SecretValue123"), ("keys", "create", "laptop")):
        result = hearth(env, *args)
        assert result.returncode == 1, result.stderr
        assert "No OS keyring is available" in result.stderr
        assert "--store file" in result.stderr and str(secrets_file()) in result.stderr
        assert "saved" not in result.stdout + result.stderr
        assert "Traceback" not in result.stderr
    assert not secrets_file().exists()


def test_plaintext_keyring_is_named_as_a_file(tmp_path: Path) -> None:
    env = env_with(PLAINTEXT, tmp_path)
    result = hearth(env, "login", "--token", "hf_SecretValue123")
    assert result.returncode == 0, result.stderr
    ring_file = tmp_path / "ring" / "keyring.json"
    assert result.stdout.strip().startswith(f"Token saved in plain text at {ring_file} (mode ")
    assert "no OS keyring available" in result.stdout and "in the OS keyring" not in result.stdout
    assert ring_file.exists()
    assert "Token removed from plain text at" in hearth(env, "logout").stdout


def test_file_store_on_a_headless_box_serves_the_key(
    tiny_model_q8: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = env_with(FAIL, tmp_path)  # no keyring backend at all
    created = hearth(env, "keys", "create", "laptop", "--store", "file")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("hk-")
    path = secrets_file()
    assert f"API key 'laptop' saved in plain text at {path} (mode 600); no OS keyring" in (
        created.stderr
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # The choice is remembered: later commands read and write the file, no flag needed.
    assert "laptop" in hearth(env, "keys", "list").stdout
    login = hearth(env, "login", "--token", "hf_SecretValue123")
    assert login.returncode == 0, login.stderr
    assert f"plain text at {path}" in login.stdout

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    server = start_serve(tiny_model_q8, tmp_path, parallel=1)
    try:
        url = f"{server.base_url}/v1/models"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"Authorization": f"Bearer {key}"}).status_code == 200
        assert key not in server.log_text()
    finally:
        server.stop()
