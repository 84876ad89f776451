"""A machine with no OS keyring (a server over SSH, a container): keyring's ``fail``
backend, as a user's install without keyrings.alt gets there. ``hearth serve`` starts
when no key was ever made, ``--api-key`` is enforced, keys made in the file store are
required, and a store that then cannot be read stops the server (fail closed). Nothing
that reads the Hugging Face token breaks either. Real ``hearth`` subprocesses, real
HTTP, the official OpenAI client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from fake_hub import FakeHub
from server_process import start_serve

FAIL = "keyring.backends.fail.Keyring"


@pytest.fixture
def no_keyring(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This test's children see no keyring at all; the environment they get."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", FAIL)
    for name in ("HEARTH_SECRET_STORE", "HEARTH_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return dict(os.environ)


def hearth(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hearth", *args], capture_output=True,
                          text=True, timeout=60, env=env)  # fmt: skip


def models(base_url: str, key: str | None) -> list[str]:
    """``/v1/models`` through the OpenAI client (raises ``AuthenticationError`` on 401)."""
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=key or "none", max_retries=0)
    return [m.id for m in client.models.list()]


def test_serve_starts_with_no_key_made(
    no_keyring: dict[str, str], tiny_model_q8: Path, tmp_path: Path
) -> None:
    server = start_serve(tiny_model_q8, tmp_path, parallel=1)
    try:
        assert models(server.base_url, None)  # open on loopback: no key was made
    finally:
        server.stop()
    assert "Traceback" not in server.log_text()


def test_serve_enforces_a_given_key(
    no_keyring: dict[str, str], tiny_model_q8: Path, tmp_path: Path
) -> None:
    server = start_serve(tiny_model_q8, tmp_path, parallel=1, api_key="given-key-42")
    try:
        with pytest.raises(openai.AuthenticationError):
            models(server.base_url, None)
        with pytest.raises(openai.AuthenticationError):
            models(server.base_url, "wrong-key")
        assert models(server.base_url, "given-key-42")
    finally:
        server.stop()
    assert "No OS keyring here and no API key made" in server.log_text()  # said why


def test_keys_in_the_file_store_are_required_and_fail_closed(
    no_keyring: dict[str, str], tiny_model_q8: Path, tmp_path: Path
) -> None:
    created = hearth(no_keyring, "keys", "create", "laptop", "--store", "file")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    listed = hearth(no_keyring, "keys", "list")
    assert "laptop" in listed.stdout and key not in listed.stdout

    server = start_serve(tiny_model_q8, tmp_path, parallel=1)
    try:
        with pytest.raises(openai.AuthenticationError):
            models(server.base_url, None)
        assert models(server.base_url, key)
    finally:
        server.stop()

    secrets_file = Path(os.environ["HEARTH_CONFIG_DIR"]) / "secrets.json"
    secrets_file.write_text('{"schema_version": 1, "secrets": {"api-keys": 7}}')  # damaged
    for extra in ((), ("--api-key", "given-key-42")):
        refused = hearth(no_keyring, "serve", "--model", str(tiny_model_q8), "--port", "0",
                         "--ctx", "256", "--parallel", "1", *extra)  # fmt: skip
        assert refused.returncode == 2, refused.stderr
        assert "Cannot read the API keys made with 'hearth keys create'" in refused.stderr
        assert str(secrets_file) in refused.stderr and "Traceback" not in refused.stderr
    assert "laptop" in hearth(no_keyring, "keys", "list").stdout  # the index still lists it


def test_keys_made_in_the_keyring_store_fail_closed_without_it(
    no_keyring: dict[str, str], tmp_path: Path
) -> None:
    from hearth.config.key_index import KeyEntry, write_index
    from hearth.config.paths import default_paths

    # The index says a key is in the OS keyring (made in a desktop session); here
    # there is none, so the key cannot be checked: refuse, do not open up.
    entry = KeyEntry("desktop", 1.0, "hk-…abcd")
    write_index(default_paths().key_index_file, "keyring", (entry,))
    refused = hearth(no_keyring, "serve", "--port", "0", "--api-key", "given-key-42")
    assert refused.returncode == 2
    assert "No OS keyring is available" in refused.stderr
    assert "--no-stored-keys" in refused.stderr and "Traceback" not in refused.stderr


def test_the_hugging_face_token_is_optional_without_a_keyring(
    no_keyring: dict[str, str], tiny_model_q8: Path, tmp_path: Path
) -> None:
    with FakeHub() as hub:
        hub.add_repo("hearth/tiny-GGUF", {"tiny-Q8_0.gguf": tiny_model_q8.read_bytes()})
        env = dict(no_keyring, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"))
        found = hearth(env, "search", "tiny")
        listing = hearth(env, "pull", "hearth/tiny-GGUF", "--list")
    assert found.returncode == 0, found.stderr
    assert "hearth/tiny-GGUF" in found.stdout
    assert listing.returncode == 0, listing.stderr
    assert "Q8_0" in listing.stdout
    assert "Traceback" not in found.stderr + listing.stderr
