"""The HF token in the OS keyring (a real file-backed keyring backend under tmp_path)."""

from __future__ import annotations

import logging

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail

from hearth.config import secrets


def test_token_round_trip(file_keyring: KeyringBackend, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    assert secrets.get_hf_token() is None
    secrets.set_hf_token("  hf_SecretValue123  \n")
    assert secrets.get_hf_token() == "hf_SecretValue123"
    # Stored under the "hearth" service of the real backend.
    assert keyring.get_password("hearth", secrets.HF_TOKEN) == "hf_SecretValue123"
    secrets.set_api_key("sk-local-key-42")
    assert secrets.get_api_key() == "sk-local-key-42"
    assert secrets.delete_hf_token() is True
    assert secrets.get_hf_token() is None
    assert secrets.delete_hf_token() is False
    assert secrets.get_api_key() == "sk-local-key-42"
    assert "SecretValue" not in caplog.text and "sk-local" not in caplog.text
    assert "Hugging Face token" in caplog.text


@pytest.mark.parametrize("bad", ["", "   ", "hf_with space", "hf_\x07bell"])
def test_token_validation(file_keyring: KeyringBackend, bad: str) -> None:
    with pytest.raises(ValueError):
        secrets.set_hf_token(bad)
    assert secrets.get_hf_token() is None


def test_missing_keyring_is_a_clear_error() -> None:
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        with pytest.raises(secrets.SecretStoreError) as err:
            secrets.get_hf_token()
        assert "keyring" in err.value.message
    finally:
        keyring.set_keyring(previous)


def test_mask() -> None:
    assert secrets.mask(None) == "(not set)"
    assert secrets.mask("hf_abcdefghijkl") == "hf_…ijkl"
    assert "abc" not in secrets.mask("abc")
