"""hearth keys create/list/revoke, and hearth serve honouring the stored keys."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx

from keyring_backends.file_keyring import child_env
from server_process import start_serve


def keyring_env(tmp_path):
    return dict(os.environ, **child_env(tmp_path / "keyring.json"))


def hearth(env, *args):
    return subprocess.run([sys.executable, "-m", "hearth", *args], capture_output=True,
                          text=True, timeout=60, env=env)  # fmt: skip


def test_keys_lifecycle_and_serve(tiny_model_q8, tmp_path, monkeypatch):
    env = keyring_env(tmp_path)
    created = hearth(env, "keys", "create", "laptop")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("hk-") and len(key) > 30
    listed = hearth(env, "keys", "list").stdout
    assert "laptop" in listed and key not in listed  # masked
    assert hearth(env, "keys", "create", "laptop").returncode == 1  # names are unique

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

    assert hearth(env, "keys", "revoke", "laptop").returncode == 0
    assert "laptop" not in hearth(env, "keys", "list").stdout
    assert hearth(env, "keys", "revoke", "laptop").returncode == 1
