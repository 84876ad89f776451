"""The index of the endpoint's API keys: which keys exist, without the keys.

The keys live in the secret store (the OS keyring, or secrets.json), which a machine
with no OS keyring (a server over SSH, a container) cannot read at all. The index, in
the config folder beside the secrets, says whether there is anything to read: with no
key made, the store is never touched and ``hearth serve`` starts. It keeps each key's
name, creation time and masked form (``hk-…x9Qz``) and the store it describes, so keys
can be listed without the store. Written atomically (:mod:`hearth.config.atomic`).

It may list more keys than the store holds, never fewer: a new key is added here before
it goes to the store, and a revoked one leaves the store first. An index that is
missing, damaged or describes another store says nothing about the store in use: the
caller then reads the store as Hearth did before the index existed, so keys made by
older versions still count (:mod:`hearth.config.api_keys`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from hearth.config.atomic import write_text_atomic
from hearth.config.secret_stores import SecretStoreError

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class KeyEntry:
    """One key as the index keeps it: what a list of keys shows, nothing that opens."""

    name: str
    created: float
    masked: str


@dataclass(frozen=True)
class KeyIndex:
    """What the index file says: the keys of one store. ``store`` is None when the file
    is damaged: it then names no store and may have listed keys."""

    store: str | None
    keys: tuple[KeyEntry, ...] = ()

    def keys_of(self, store: str) -> tuple[KeyEntry, ...] | None:
        """The keys recorded for ``store`` ("keyring" or "file"); None when this index
        is about another store (or damaged): it says nothing about ``store``."""
        return self.keys if self.store == store else None

    @property
    def lists_keys(self) -> bool:
        """Whether a key may have been made: some are listed, or the file is damaged."""
        return self.store is None or bool(self.keys)


DAMAGED = KeyIndex(None)


def read_index(path: Path) -> KeyIndex | None:
    """The index at ``path``; None when there is none (never written)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring the API key index %s (%s); the key store is read", path, exc)
        return DAMAGED
    try:
        if raw["schema_version"] != SCHEMA_VERSION:
            return DAMAGED
        keys = tuple(
            KeyEntry(str(item["name"]), float(item["created"]), str(item["masked"]))
            for item in raw["keys"]
        )
        return KeyIndex(str(raw["store"]), keys)
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("ignoring the API key index %s (%r); the key store is read", path, exc)
        return DAMAGED


def write_index(path: Path, store: str, keys: tuple[KeyEntry, ...]) -> None:
    """Record ``keys`` as the keys of ``store``; raises ``SecretStoreError`` if the file
    cannot be written (a key must not be made that the index would not show)."""
    payload = {
        "schema_version": SCHEMA_VERSION,
        "store": store,
        "keys": [{"name": k.name, "created": k.created, "masked": k.masked} for k in keys],
    }
    try:
        write_text_atomic(path, json.dumps(payload, indent=2))
    except OSError as exc:
        raise SecretStoreError(f"Cannot write the API key index {path}: {exc}") from None


def forget_index(path: Path) -> None:
    """Remove the index (back to "unknown": the store is read next time)."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("could not remove the API key index %s: %s", path, exc)
