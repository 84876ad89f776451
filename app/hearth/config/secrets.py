"""Secrets (the Hugging Face token, later the endpoint API key) in the OS keyring.

They never go to the settings file or to a log: log lines name the secret, never its
value. A missing or locked keyring is a clear :class:`SecretStoreError`.
"""

from __future__ import annotations

import logging

import keyring
import keyring.errors

from hearth.core.errors import HearthError

log = logging.getLogger(__name__)

SERVICE = "hearth"
HF_TOKEN = "huggingface-token"
API_KEY = "api-key"
_MAX_LEN = 4096
_LABELS = {HF_TOKEN: "Hugging Face token", API_KEY: "API key"}


class SecretStoreError(HearthError):
    """The OS keyring is missing, locked, or refused the operation."""

    code = "secret_store_unavailable"


def _label(name: str) -> str:
    return _LABELS.get(name, name)


def _check_value(name: str, value: str) -> str:
    name = _label(name)
    value = value.strip()
    if not value:
        raise ValueError(f"The {name} is empty.")
    if len(value) > _MAX_LEN:
        raise ValueError(f"The {name} is too long.")
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ValueError(f"The {name} contains spaces or control characters; paste it again.")
    return value


def _store_error(action: str, name: str, exc: Exception) -> SecretStoreError:
    # The exception text comes from the backend and never contains the secret itself.
    return SecretStoreError(
        f"Could not {action} the {_label(name)} in the system keyring "
        f"({type(exc).__name__}: {exc}). "
        "Unlock or install a keyring (GNOME Keyring, KWallet, macOS Keychain, Windows "
        "Credential Manager) and try again."
    )


def get_secret(name: str) -> str | None:
    """The stored value for ``name``, or None if there is none."""
    try:
        return keyring.get_password(SERVICE, name)
    except keyring.errors.KeyringError as exc:
        raise _store_error("read", name, exc) from None


def set_secret(name: str, value: str) -> None:
    """Store ``value`` (stripped) under ``name``; replaces any previous value."""
    value = _check_value(name, value)
    try:
        keyring.set_password(SERVICE, name, value)
    except keyring.errors.KeyringError as exc:
        raise _store_error("save", name, exc) from None
    log.info("stored the %s in the keyring", _label(name))


def delete_secret(name: str) -> bool:
    """Forget ``name``; returns False if nothing was stored."""
    try:
        if keyring.get_password(SERVICE, name) is None:
            return False
        keyring.delete_password(SERVICE, name)
    except keyring.errors.PasswordDeleteError:
        return False
    except keyring.errors.KeyringError as exc:
        raise _store_error("delete", name, exc) from None
    log.info("deleted the %s from the keyring", _label(name))
    return True


def mask(value: str | None) -> str:
    """A display form that proves a secret is set without revealing it: ``hf_…x9Qz``."""
    if not value:
        return "(not set)"
    if len(value) <= 8:
        return "…" * 3
    return f"{value[:3]}…{value[-4:]}"


def get_hf_token() -> str | None:
    return get_secret(HF_TOKEN)


def set_hf_token(token: str) -> None:
    set_secret(HF_TOKEN, token)


def delete_hf_token() -> bool:
    return delete_secret(HF_TOKEN)


def get_api_key() -> str | None:
    return get_secret(API_KEY)


def set_api_key(key: str) -> None:
    set_secret(API_KEY, key)


def delete_api_key() -> bool:
    return delete_secret(API_KEY)
