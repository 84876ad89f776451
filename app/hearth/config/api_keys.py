"""The endpoint's API keys: named, created and revoked by the user, kept in the
configured secret store (the OS keyring, or secrets.json when chosen; see
:mod:`hearth.config.secrets`).

All keys live in one secret as JSON, so listing them needs no keyring search (which
most backends lack). Only the secret store ever holds the full key.

API: ``load_keys(store=None) -> list[ApiKey]`` (raises :class:`SecretStoreError` when
the keys may exist but cannot be read: the server must then refuse to serve),
``create_key(name, store=None)``, ``revoke_key(name, store=None) -> bool``,
``revoke_all(store=None) -> int``. ``store=None`` is the configured store.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import time
from dataclasses import asdict, dataclass

from hearth.config.secret_stores import API_KEYS
from hearth.config.secrets import SecretStore, SecretStoreError, get_secret, mask, set_secret

KEY_PREFIX = "hk-"


@dataclass(frozen=True)
class ApiKey:
    name: str
    key: str
    created: float

    @property
    def masked(self) -> str:
        return mask(self.key)


def load_keys(store: SecretStore | None = None) -> list[ApiKey]:
    raw = get_secret(API_KEYS, store)
    if not raw:
        return []
    try:
        items = json.loads(base64.urlsafe_b64decode(raw.encode()))
        return [ApiKey(str(i["name"]), str(i["key"]), float(i["created"])) for i in items]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise SecretStoreError(
            "The stored API keys are unreadable; revoke them with "
            "'hearth keys revoke --all' and create new ones."
        ) from exc


def _save(keys: list[ApiKey], store: SecretStore | None) -> None:
    # base64: secret values may not hold spaces, and key names may
    blob = json.dumps([asdict(k) for k in keys]).encode()
    set_secret(API_KEYS, base64.urlsafe_b64encode(blob).decode(), store)


def create_key(name: str, store: SecretStore | None = None) -> ApiKey:
    keys = load_keys(store)
    if any(k.name == name for k in keys):
        raise SecretStoreError(f"An API key named '{name}' already exists; pick another name.")
    key = ApiKey(name=name, key=KEY_PREFIX + secrets.token_urlsafe(32), created=time.time())
    _save([*keys, key], store)
    return key


def revoke_key(name: str, store: SecretStore | None = None) -> bool:
    keys = load_keys(store)
    kept = [k for k in keys if k.name != name]
    if len(kept) == len(keys):
        return False
    _save(kept, store)
    return True


def revoke_all(store: SecretStore | None = None) -> int:
    try:
        count = len(load_keys(store))
    except SecretStoreError:
        count = 0
    _save([], store)
    return count
