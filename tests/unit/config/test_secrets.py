"""Where secrets go, with keyring's real backends (null, fail), the test backends in
tests/keyring_backends (a locked one, and one that carries keyrings.alt's plain-text
file's name), and Hearth's own secrets.json."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest

from hearth.config import secrets
from hearth.config.api_keys import create_key, load_keys
from hearth.config.paths import default_paths
from hearth.config.secret_stores import KeyringKind, keyring_kind
from keyring_backends.file_keyring import AltPlaintextKeyring
from keyring_backends.locked_keyring import LockedKeyring

NULL = "keyring.backends.null.Keyring"
FAIL = "keyring.backends.fail.Keyring"


def plaintext_ring(tmp_path: Path) -> AltPlaintextKeyring:
    return AltPlaintextKeyring(tmp_path / "alt" / "keyring.json")


def secrets_file() -> Path:
    return default_paths().secrets_file


def test_backends_are_classified(use_backend, tmp_path: Path) -> None:
    assert keyring_kind(use_backend(NULL)) is KeyringKind.DISABLED
    assert keyring_kind(use_backend(FAIL)) is KeyringKind.MISSING
    assert keyring_kind(use_backend(plaintext_ring(tmp_path))) is KeyringKind.PLAINTEXT_FILE
    assert keyring_kind(use_backend(LockedKeyring())) is KeyringKind.OS
    from keyring.backends.chainer import ChainerBackend

    chain = ChainerBackend()  # a chain writes to its first member: it is what that one is
    assert keyring_kind(chain) is keyring_kind(chain.backends[0])


def test_null_backend_refuses_to_pretend(use_backend) -> None:
    use_backend(NULL)
    assert secrets.get_hf_token() is None  # disabled: nothing is stored there
    with pytest.raises(secrets.SecretStoreError) as info:
        secrets.set_hf_token("hf_SecretValue123")  # the null backend would drop it
    assert "--store file" in info.value.message and str(secrets_file()) in info.value.message
    assert "null" in info.value.message
    assert not secrets_file().exists()  # never chosen silently


def test_fail_backend_cannot_say_nothing_is_stored(use_backend) -> None:
    use_backend(FAIL)
    with pytest.raises(secrets.SecretStoreError, match="No OS keyring") as info:
        secrets.get_hf_token()
    assert "--store file" in info.value.message
    # No keyring at all: no key made here can be in it, so there are none (the server
    # starts); keys listed in the index still fail closed (test_api_key_index.py).
    assert load_keys() == []
    assert not default_paths().key_index_file.exists()  # a later keyring session still looks


def test_locked_keyring_is_an_error_not_an_empty_store(use_backend) -> None:
    use_backend(LockedKeyring())
    with pytest.raises(secrets.SecretStoreError, match="KeyringLocked"):
        load_keys()


def test_plaintext_keyring_is_reported_as_the_file_it_is(use_backend, tmp_path: Path) -> None:
    ring = use_backend(plaintext_ring(tmp_path))
    where = secrets.set_hf_token("hf_SecretValue123")
    assert where.plaintext and where.path == Path(ring.file_path)
    message = where.saved_message("Token")
    assert "OS keyring (" not in message
    assert f"plain text at {ring.file_path}" in message and "no OS keyring available" in message
    assert "hf_SecretValue123" in Path(ring.file_path).read_text()  # a file, not a lock
    assert secrets.get_hf_token() == "hf_SecretValue123"


def test_os_keyring_is_named(use_backend) -> None:
    use_backend(LockedKeyring())
    where = secrets.secret_location()
    assert not where.plaintext and where.os_keyring
    assert where.describe() == f"the OS keyring ({LockedKeyring.name})"


def test_file_store_mode_600_round_trip(use_backend, caplog: pytest.LogCaptureFixture) -> None:
    use_backend(NULL)
    caplog.set_level(logging.DEBUG)
    store = secrets.open_store(secrets.StoreChoice.FILE)
    where = secrets.set_hf_token("  hf_SecretValue123\n", store)
    path = secrets_file()
    assert where.path == path and where.plaintext and not where.os_keyring
    assert where.saved_message("Token") == (
        f"Token saved in plain text at {path} (mode 600); no OS keyring available."
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["secrets"] == {secrets.HF_TOKEN: "hf_SecretValue123"}
    assert secrets.get_hf_token(store) == "hf_SecretValue123"
    assert "SecretValue" not in caplog.text
    assert secrets.delete_hf_token(store) and not secrets.delete_hf_token(store)
    assert secrets.get_hf_token(store) is None


def test_reads_look_in_the_configured_store(use_backend, monkeypatch) -> None:
    use_backend(NULL)
    file_store = secrets.open_store("file")
    key = create_key("laptop", file_store)
    # Configured: the (disabled) keyring, not the file; it keeps nothing, and a key was
    # made, so the keys cannot be checked: fail closed rather than find none.
    with pytest.raises(secrets.SecretStoreError, match="null backend"):
        load_keys()
    secrets.remember_choice(secrets.StoreChoice.FILE)
    assert secrets.configured_choice() is secrets.StoreChoice.FILE
    assert load_keys() == [key]
    monkeypatch.setenv(secrets.STORE_ENV, "keyring")  # the environment wins
    with pytest.raises(secrets.SecretStoreError, match="null backend"):
        load_keys()
    monkeypatch.setenv(secrets.STORE_ENV, "vault")
    with pytest.raises(secrets.SecretStoreError, match="keyring, file"):
        load_keys()


def test_unreadable_secrets_file_fails_closed(use_backend) -> None:
    use_backend(NULL)
    secrets.remember_choice(secrets.StoreChoice.FILE)
    secrets_file().write_text("{not json")
    with pytest.raises(secrets.SecretStoreError, match="unreadable"):
        load_keys()


def test_loosened_file_is_warned_about_and_tightened(use_backend, caplog) -> None:
    use_backend(NULL)
    store = secrets.open_store("file")
    secrets.set_api_key("sk-local-key-42", store)
    secrets_file().chmod(0o644)
    with caplog.at_level(logging.WARNING):
        assert secrets.get_api_key(store) == "sk-local-key-42"
    assert "chmod 600" in caplog.text
    secrets.set_api_key("sk-local-key-43", store)
    assert stat.S_IMODE(secrets_file().stat().st_mode) == 0o600
