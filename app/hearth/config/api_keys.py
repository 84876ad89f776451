"""The endpoint's API keys: named, created and revoked by the user, kept in the keyring.

All keys live in one keyring entry as JSON, so listing them needs no keyring search
(which most backends lack). Only the keyring ever holds the full key.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import time
from dataclasses import asdict, dataclass

from hearth.config.secrets import SecretStoreError, get_secret, mask, set_secret

API_KEYS = "api-keys"
KEY_PREFIX = "hk-"


@dataclass(frozen=True)
class ApiKey:
    name: str
    key: str
    created: float

    @property
    def masked(self) -> str:
        return mask(self.key)


def load_keys() -> list[ApiKey]:
    raw = get_secret(API_KEYS)
    if not raw:
        return []
    try:
        items = json.loads(base64.urlsafe_b64decode(raw.encode()))
        return [ApiKey(str(i["name"]), str(i["key"]), float(i["created"])) for i in items]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise SecretStoreError(
            "The API keys stored in the keyring are unreadable; revoke them with "
            "'hearth keys revoke --all' and create new ones."
        ) from exc


def _save(keys: list[ApiKey]) -> None:
    # base64: secret values may not hold spaces, and key names may
    blob = json.dumps([asdict(k) for k in keys]).encode()
    set_secret(API_KEYS, base64.urlsafe_b64encode(blob).decode())


def create_key(name: str) -> ApiKey:
    keys = load_keys()
    if any(k.name == name for k in keys):
        raise SecretStoreError(f"An API key named '{name}' already exists; pick another name.")
    key = ApiKey(name=name, key=KEY_PREFIX + secrets.token_urlsafe(32), created=time.time())
    _save([*keys, key])
    return key


def revoke_key(name: str) -> bool:
    keys = load_keys()
    kept = [k for k in keys if k.name != name]
    if len(kept) == len(keys):
        return False
    _save(kept)
    return True


def revoke_all() -> int:
    try:
        count = len(load_keys())
    except SecretStoreError:
        count = 0
    _save([])
    return count
