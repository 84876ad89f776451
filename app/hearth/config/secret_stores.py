"""The two places a secret can live: the OS keyring, or Hearth's own plain-text file.

:mod:`hearth.config.secrets` is the API the rest of Hearth uses; this module holds the
stores behind it and the one question that decides between them: is there a real OS
keyring here? ``keyring`` answers every call even when there is none: its ``fail``
backend raises, its ``null`` backend silently drops what it is given, and
``keyrings.alt``'s ``PlaintextKeyring`` (which ``keyring`` picks by itself on a
headless Linux box) writes the secret unencrypted to a file. Only the first is visible
as an error, so :func:`keyring_kind` looks at the backend itself, and every store
says where a secret really went (:class:`SecretLocation`).
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Protocol

import keyring
import keyring.backend
import keyring.errors

from hearth.config.atomic import write_text_atomic
from hearth.core.errors import HearthError

log = logging.getLogger(__name__)

SERVICE = "hearth"
FILE_SCHEMA_VERSION = 1

HF_TOKEN = "huggingface-token"
API_KEY = "api-key"
API_KEYS = "api-keys"  # every named endpoint key, as one entry (hearth.config.api_keys)
_LABELS = {HF_TOKEN: "Hugging Face token", API_KEY: "API key", API_KEYS: "API keys"}


def label(name: str) -> str:
    """A secret's name as people say it, for messages and logs (never its value)."""
    return _LABELS.get(name, name)


class SecretStoreError(HearthError):
    """The secret store is missing, locked, unreadable, or refused the operation."""

    code = "secret_store_unavailable"


class KeyringUnavailableError(SecretStoreError):
    """The OS keyring is missing, locked or refused: the keyring's fault, not the data's
    (the app then offers the file store instead of repeating this message)."""


class KeyringKind(Enum):
    """What ``keyring``'s active backend really is."""

    OS = "os"  # Secret Service, KWallet, macOS Keychain, Windows Credential Manager, ...
    PLAINTEXT_FILE = "plaintext file"  # keyrings.alt's file backends: a file, not a keyring
    DISABLED = "disabled"  # keyring's null backend: reads find nothing, writes vanish
    MISSING = "missing"  # keyring's fail backend: no backend could be loaded at all


@dataclass(frozen=True)
class SecretLocation:
    """Where a store keeps secrets, said the way a person needs to hear it."""

    plaintext: bool
    backend: str  # "SecretService Keyring", "file PlaintextKeyring", "Hearth secrets file"
    path: Path | None = None  # the file, for plain-text stores
    os_keyring: bool = True  # whether this machine has a real OS keyring at all

    def describe(self) -> str:
        """``the OS keyring (SecretService Keyring)`` or ``plain text at PATH (mode 600)``."""
        if not self.plaintext:
            return f"the OS keyring ({self.backend})"
        return f"plain text at {self.path} ({_mode_text(self.path)})"

    def saved_message(self, what: str) -> str:
        """What a command prints after storing ``what`` ("Token", "API key 'laptop'")."""
        note = "" if self.os_keyring else "; no OS keyring available"
        return f"{what} saved in {self.describe()}{note}."


class SecretStore(Protocol):
    """A place for named secrets (see :mod:`hearth.config.secrets` for the names)."""

    name: str  # "keyring" or "file", as the ``secret_store`` setting spells it

    def location(self) -> SecretLocation: ...

    def usable(self) -> bool:
        """Whether secrets can be kept here at all; False where there is no OS keyring
        (keyring's fail or null backend), so nothing stored from here can be in it."""
        ...

    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> bool: ...


def _mode_text(path: Path | None) -> str:
    if path is None or sys.platform == "win32":
        return "readable only by you" if path is not None else "no file"
    try:
        return f"mode {stat.S_IMODE(path.stat().st_mode):o}"
    except OSError:
        return "not written yet"


# --------------------------------------------------------------------------- keyring


def keyring_kind(backend: keyring.backend.KeyringBackend | None = None) -> KeyringKind:
    """Classify ``keyring``'s active backend (or ``backend``)."""
    ring = backend if backend is not None else keyring.get_keyring()
    chained = getattr(ring, "backends", None)
    if isinstance(chained, list):  # keyring's ChainerBackend: what its best member is
        return keyring_kind(chained[0]) if chained else KeyringKind.MISSING
    module = type(ring).__module__
    if module == "keyring.backends.fail":
        return KeyringKind.MISSING
    if module == "keyring.backends.null":
        return KeyringKind.DISABLED
    if module.startswith("keyrings.alt") and "Plaintext" in type(ring).__name__:
        return KeyringKind.PLAINTEXT_FILE
    return KeyringKind.OS


def _backend_name(ring: keyring.backend.KeyringBackend) -> str:
    return str(getattr(ring, "name", type(ring).__name__))


class KeyringStore:
    """Secrets in ``keyring``'s active backend, under the ``hearth`` service."""

    name = "keyring"

    def __init__(self, no_keyring_hint: str) -> None:
        self._hint = no_keyring_hint  # what to do when there is no keyring (names the flag)

    def usable(self) -> bool:
        return keyring_kind() not in (KeyringKind.MISSING, KeyringKind.DISABLED)

    def location(self) -> SecretLocation:
        ring = keyring.get_keyring()
        kind = keyring_kind(ring)
        if kind is KeyringKind.PLAINTEXT_FILE:
            path = getattr(ring, "file_path", None)
            return SecretLocation(
                True, _backend_name(ring), Path(path) if path else None, os_keyring=False
            )
        return SecretLocation(False, _backend_name(ring), os_keyring=kind is KeyringKind.OS)

    def get(self, name: str) -> str | None:
        # A missing backend may hide keys made in another session (a desktop keyring
        # over SSH): that is an error, not "nothing stored".
        ring = keyring.get_keyring()
        if keyring_kind(ring) is KeyringKind.MISSING:
            raise KeyringUnavailableError(
                f"No OS keyring is available here (keyring backend: {_backend_name(ring)}), "
                f"so the {label(name)} cannot be read. {self._hint}"
            )
        try:
            return keyring.get_password(SERVICE, name)
        except keyring.errors.KeyringError as exc:
            raise self._error("read", name, exc) from None

    def set(self, name: str, value: str) -> None:
        ring = keyring.get_keyring()
        if keyring_kind(ring) in (KeyringKind.MISSING, KeyringKind.DISABLED):
            raise KeyringUnavailableError(
                f"No OS keyring is available here (keyring backend: {_backend_name(ring)}), "
                f"so the {label(name)} cannot be stored securely. {self._hint}"
            )
        try:
            keyring.set_password(SERVICE, name, value)
        except keyring.errors.KeyringError as exc:
            raise self._error("save", name, exc) from None

    def delete(self, name: str) -> bool:
        if keyring_kind() is KeyringKind.DISABLED:
            return False
        try:
            if keyring.get_password(SERVICE, name) is None:
                return False
            keyring.delete_password(SERVICE, name)
        except keyring.errors.PasswordDeleteError:
            return False
        except keyring.errors.KeyringError as exc:
            raise self._error("delete", name, exc) from None
        return True

    def _error(self, action: str, name: str, exc: Exception) -> SecretStoreError:
        # The exception text comes from the backend and never holds the secret itself.
        return KeyringUnavailableError(
            f"Could not {action} the {label(name)} in the system keyring "
            f"({type(exc).__name__}: {exc}). Unlock or install a keyring (GNOME Keyring, "
            "KWallet, macOS Keychain, Windows Credential Manager) and try again. "
            f"{self._hint}"
        )


# --------------------------------------------------------------------------- file


class FileStore:
    """Secrets in one JSON file, mode 0600, in Hearth's config folder.

    For machines with no OS keyring (a headless GPU box), and only when chosen: the
    secrets are in plain text, protected by the file's permissions alone, as ``gh``
    does with ``--insecure-storage``.
    """

    name = "file"

    def __init__(self, path: Path) -> None:
        self.path = path

    def usable(self) -> bool:
        return True

    def location(self) -> SecretLocation:
        os_keyring = keyring_kind() is KeyringKind.OS
        return SecretLocation(True, "Hearth secrets file", self.path, os_keyring=os_keyring)

    def get(self, name: str) -> str | None:
        return self._read().get(name)

    def set(self, name: str, value: str) -> None:
        secrets = self._read()
        secrets[name] = value
        self._write(secrets)

    def delete(self, name: str) -> bool:
        secrets = self._read()
        if secrets.pop(name, None) is None:
            return False
        self._write(secrets)
        return True

    def _read(self) -> dict[str, str]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise SecretStoreError(f"Cannot read the secrets file {self.path}: {exc}") from None
        self._warn_if_shared()
        try:
            raw = json.loads(text)
            secrets = raw["secrets"]
            if not isinstance(secrets, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in secrets.items()
            ):
                raise ValueError("'secrets' is not an object of strings")
        except (ValueError, KeyError, TypeError) as exc:
            raise SecretStoreError(
                f"The secrets file {self.path} is unreadable ({exc}); fix it or delete it "
                "and store the secrets again."
            ) from None
        return dict(secrets)

    def _write(self, secrets: dict[str, str]) -> None:
        payload = {"schema_version": FILE_SCHEMA_VERSION, "secrets": secrets}
        try:
            # mkstemp creates the temp file 0600 and the rename keeps it; chmod is for
            # a file someone loosened by hand before.
            write_text_atomic(self.path, json.dumps(payload, indent=2, sort_keys=True))
            os.chmod(self.path, 0o600)
        except OSError as exc:
            raise SecretStoreError(f"Cannot write the secrets file {self.path}: {exc}") from None

    def _warn_if_shared(self) -> None:
        if sys.platform == "win32":
            return
        try:
            mode = stat.S_IMODE(self.path.stat().st_mode)
        except OSError:
            return
        if mode & 0o077:
            log.warning("%s is readable by other users (mode %o); run chmod 600", self.path, mode)
