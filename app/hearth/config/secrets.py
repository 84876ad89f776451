"""Secrets (the Hugging Face token, the endpoint's API keys): where they live, and the
API the rest of Hearth uses to read and write them.

They never go to the settings file or to a log: log lines name the secret, never its
value. There are two stores (:mod:`hearth.config.secret_stores`):

- ``keyring`` (the default): the OS keyring through the ``keyring`` package;
- ``file``: ``secrets.json`` in Hearth's config folder, mode 0600, plain text. For a
  machine with no OS keyring (a headless GPU box). It is never chosen silently: only
  the ``--store file`` flag of ``hearth login`` / ``hearth keys create`` (which saves
  the choice as the ``secret_store`` setting), that setting, or the
  ``HEARTH_SECRET_STORE=file`` environment variable select it.

Reading looks only in the configured store. Writing to the keyring store when there
is no keyring (keyring's ``fail`` or ``null`` backend) fails with a message that names
``--store file``; a ``keyrings.alt`` plain-text backend is used but reported as the
plain-text file it is. Every write returns the :class:`SecretLocation` it went to.

API (stable; ``hearth.server.options`` and the GUI rely on it):

- :class:`SecretStoreError`: the store is missing, locked or unreadable. Callers that
  guard access (the server's stored keys) must fail closed on it. Its subclass
  :class:`KeyringUnavailableError` is the OS keyring's own failure (none, or locked).
- ``get_secret(name, store=None) -> str | None``; ``set_secret(name, value, store=None)
  -> SecretLocation``; ``delete_secret(name, store=None) -> bool``; and the same for
  the HF token (``get_hf_token``/``set_hf_token``/``delete_hf_token``) and the single
  API key (``get_api_key``/``set_api_key``/``delete_api_key``). ``store=None`` is the
  configured store; pass :func:`open_store` ``(StoreChoice.FILE)`` to pick one.
- ``open_store(choice=None)``, ``store_for_setting(setting)``, ``configured_choice()``,
  ``remember_choice(choice)``, ``secret_location(store=None)``, ``mask(value)``; a
  store's ``usable()`` says whether it can keep secrets at all (no OS keyring: not).
- The endpoint's named keys are in :mod:`hearth.config.api_keys` (``load_keys`` ...).
"""

from __future__ import annotations

import logging
import os
from enum import Enum

from hearth.config.paths import default_paths
from hearth.config.secret_stores import (
    API_KEY,
    HF_TOKEN,
    SERVICE,
    FileStore,
    KeyringKind,
    KeyringStore,
    KeyringUnavailableError,
    SecretLocation,
    SecretStore,
    SecretStoreError,
    keyring_kind,
    label,
)
from hearth.config.settings import load_settings, save_settings

log = logging.getLogger(__name__)

__all__ = [
    "API_KEY",
    "HF_TOKEN",
    "SERVICE",
    "STORE_ENV",
    "KeyringKind",
    "KeyringUnavailableError",
    "SecretLocation",
    "SecretStore",
    "SecretStoreError",
    "StoreChoice",
    "configured_choice",
    "delete_api_key",
    "delete_hf_token",
    "delete_secret",
    "get_api_key",
    "get_hf_token",
    "get_secret",
    "keyring_kind",
    "mask",
    "open_store",
    "remember_choice",
    "secret_location",
    "set_api_key",
    "set_hf_token",
    "set_secret",
    "store_for_setting",
]

STORE_ENV = "HEARTH_SECRET_STORE"
STORE_FLAG = "--store file"
_MAX_LEN = 4096


class StoreChoice(str, Enum):
    KEYRING = "keyring"
    FILE = "file"


def _choice(value: str | StoreChoice, source: str) -> StoreChoice:
    try:
        return StoreChoice(value)
    except ValueError:
        choices = ", ".join(c.value for c in StoreChoice)
        raise SecretStoreError(f"{source} says {value!r}; use one of {choices}.") from None


def configured_choice() -> StoreChoice:
    """``HEARTH_SECRET_STORE`` if set, else the ``secret_store`` setting (keyring)."""
    env = os.environ.get(STORE_ENV, "").strip()
    if env:
        return _choice(env, STORE_ENV)
    settings = load_settings(default_paths().settings_file)
    return _choice(settings.secret_store, "The secret_store setting")


def remember_choice(choice: StoreChoice) -> None:
    """Save ``choice`` as the ``secret_store`` setting, so later reads look there."""
    path = default_paths().settings_file
    settings = load_settings(path)
    if settings.secret_store != choice.value:
        settings.secret_store = choice.value
        save_settings(settings, path)
        log.info("secret store set to %s", choice.value)


def open_store(choice: StoreChoice | str | None = None) -> SecretStore:
    """The store for ``choice``; None: the configured one (:func:`configured_choice`)."""
    chosen = configured_choice() if choice is None else _choice(choice, "The store")
    file_store = FileStore(default_paths().secrets_file)
    if chosen is StoreChoice.FILE:
        return file_store
    return KeyringStore(
        f"To keep secrets in plain text at {file_store.path} (readable only by you) "
        f"instead, run the command again with {STORE_FLAG}, or set {STORE_ENV}=file."
    )


def store_for_setting(setting: str) -> SecretStore:
    """The store a ``secret_store`` setting names, unless ``HEARTH_SECRET_STORE`` says
    otherwise (as for the CLI): for the app, whose settings are an object of its own."""
    if os.environ.get(STORE_ENV, "").strip():
        return open_store()
    return open_store(setting)


def secret_location(store: SecretStore | None = None) -> SecretLocation:
    """Where ``store`` (default: the configured one) keeps secrets."""
    return (store or open_store()).location()


def _check_value(name: str, value: str) -> str:
    name = label(name)
    value = value.strip()
    if not value:
        raise ValueError(f"The {name} is empty.")
    if len(value) > _MAX_LEN:
        raise ValueError(f"The {name} is too long.")
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ValueError(f"The {name} contains spaces or control characters; paste it again.")
    return value


def get_secret(name: str, store: SecretStore | None = None) -> str | None:
    """The stored value for ``name``, or None if there is none."""
    return (store or open_store()).get(name)


def set_secret(name: str, value: str, store: SecretStore | None = None) -> SecretLocation:
    """Store ``value`` (stripped) under ``name``, replacing any previous value; returns
    where it went."""
    value = _check_value(name, value)
    store = store or open_store()
    store.set(name, value)
    where = store.location()
    log.info("stored the %s in %s", label(name), where.describe())
    return where


def delete_secret(name: str, store: SecretStore | None = None) -> bool:
    """Forget ``name``; returns False if nothing was stored."""
    deleted = (store or open_store()).delete(name)
    if deleted:
        log.info("deleted the %s", label(name))
    return deleted


def mask(value: str | None) -> str:
    """A display form that proves a secret is set without revealing it: ``hf_…x9Qz``."""
    if not value:
        return "(not set)"
    if len(value) <= 8:
        return "…" * 3
    return f"{value[:3]}…{value[-4:]}"


def get_hf_token(store: SecretStore | None = None) -> str | None:
    return get_secret(HF_TOKEN, store)


def set_hf_token(token: str, store: SecretStore | None = None) -> SecretLocation:
    return set_secret(HF_TOKEN, token, store)


def delete_hf_token(store: SecretStore | None = None) -> bool:
    return delete_secret(HF_TOKEN, store)


def get_api_key(store: SecretStore | None = None) -> str | None:
    return get_secret(API_KEY, store)


def set_api_key(key: str, store: SecretStore | None = None) -> SecretLocation:
    return set_secret(API_KEY, key, store)


def delete_api_key(store: SecretStore | None = None) -> bool:
    return delete_secret(API_KEY, store)
