"""The endpoint's API keys: named, created and revoked by the user, kept in the
configured secret store (the OS keyring, or secrets.json when chosen; see
:mod:`hearth.config.secrets`), and listed in a non-secret index beside it
(:mod:`hearth.config.key_index`).

All keys live in one secret as JSON, so listing them needs no keyring search (which
most backends lack). Only the secret store ever holds the full key.

The index decides whether the store must be read at all: with no key made, it is not,
so a machine without an OS keyring serves (and lists its keys) without one. Without an
index for the store in use (keys made by a Hearth from before it, or in another store)
the store is read and the index recorded from it; a store that then cannot be read
fails closed. One exception: no OS keyring at all (keyring's fail or null backend)
while the index lists no key anywhere. Nothing stored from this session can be in that
keyring, so there are no keys; that is logged, and no index is recorded from a store
without a keyring, so a later session that has one still reads it. Where the index does
list keys, such a keyring fails closed (the null backend would find none).

API: ``load_keys(store=None) -> list[ApiKey]`` (raises :class:`SecretStoreError` when
the keys may exist but cannot be read: the server must then refuse to serve),
``list_keys(store=None) -> list[KeyEntry]`` (masked, from the index when it has one),
``create_key(name, store=None)``, ``revoke_key(name, store=None) -> bool``,
``revoke_all(store=None) -> int``. ``store=None`` is the configured store.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from hearth.config.key_index import KeyEntry, forget_index, read_index, write_index
from hearth.config.paths import default_paths
from hearth.config.secret_stores import API_KEYS
from hearth.config.secrets import (
    STORE_ENV,
    KeyringUnavailableError,
    SecretStore,
    SecretStoreError,
    get_secret,
    mask,
    open_store,
    set_secret,
)

log = logging.getLogger(__name__)

KEY_PREFIX = "hk-"


@dataclass(frozen=True)
class ApiKey:
    name: str
    key: str
    created: float

    @property
    def masked(self) -> str:
        return mask(self.key)

    def entry(self) -> KeyEntry:
        """This key as the index lists it."""
        return KeyEntry(self.name, self.created, self.masked)


def _index_path() -> Path:
    return default_paths().key_index_file


def _entries(keys: list[ApiKey]) -> tuple[KeyEntry, ...]:
    return tuple(k.entry() for k in keys)


def _read_store(store: SecretStore) -> list[ApiKey]:
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


_told_no_keyring: set[Path] = set()  # a running server re-reads every few seconds


def _say_no_keyring(index: Path) -> None:
    """Once per index file and process: why no stored key is asked for."""
    if index in _told_no_keyring:
        return
    _told_no_keyring.add(index)
    # info: shown by `hearth serve`, not by one-shot verbs (`hearth ps`, `keys list`)
    log.info(
        "No OS keyring here and no API key made ('hearth keys create'): none is "
        "required. Keys made in a session with a keyring count again there."
    )


def load_keys(store: SecretStore | None = None) -> list[ApiKey]:
    """The keys with their secrets. The store is read only when the index lists a key
    or there is no index yet; raises ``SecretStoreError`` when keys may exist but
    cannot be read."""
    store = store or open_store()
    path = _index_path()
    index = read_index(path)
    recorded = index.keys_of(store.name) if index is not None else None
    if recorded == ():
        return []  # no key was made: nothing to read, and no keyring needed
    try:
        keys = _read_store(store)
    except SecretStoreError:
        if not store.usable() and (index is None or not index.lists_keys):
            _say_no_keyring(path)
            return []
        raise
    if not keys and not store.usable() and index is not None and index.lists_keys:
        # keyring's null backend finds nothing, though keys were made: unchecked keys
        # must not open the endpoint
        raise KeyringUnavailableError(
            "API keys were made (see 'hearth keys list'), but keyring's null backend "
            "keeps nothing, so they cannot be checked: use a real keyring, or the file "
            f"store ({STORE_ENV}=file)."
        )
    if recorded != _entries(keys) and store.usable():
        try:  # first read since an older Hearth, or the store changed behind the index
            write_index(path, store.name, _entries(keys))
        except SecretStoreError as exc:
            log.warning("%s", exc.message)
    return keys


def list_keys(store: SecretStore | None = None) -> list[KeyEntry]:
    """The keys as a list shows them (masked); from the index, so no keyring is needed
    once it exists."""
    store = store or open_store()
    index = read_index(_index_path())
    recorded = index.keys_of(store.name) if index is not None else None
    if recorded is not None:
        return list(recorded)
    return list(_entries(load_keys(store)))


def _save(keys: list[ApiKey], store: SecretStore) -> None:
    # base64: secret values may not hold spaces, and key names may
    blob = json.dumps([asdict(k) for k in keys]).encode()
    set_secret(API_KEYS, base64.urlsafe_b64encode(blob).decode(), store)


def create_key(name: str, store: SecretStore | None = None) -> ApiKey:
    store = store or open_store()
    keys = load_keys(store)
    if any(k.name == name for k in keys):
        raise SecretStoreError(f"An API key named '{name}' already exists; pick another name.")
    key = ApiKey(name=name, key=KEY_PREFIX + secrets.token_urlsafe(32), created=time.time())
    path = _index_path()
    before = read_index(path)
    # The index first: should the store write fail, it lists one key too many (the
    # store is read, and the next read corrects it), never one too few (unread keys).
    write_index(path, store.name, _entries([*keys, key]))
    try:
        _save([*keys, key], store)
    except SecretStoreError:
        if before is None:
            forget_index(path)
        elif before.store is not None:
            write_index(path, before.store, before.keys)
        raise
    return key


def _record_after_store_write(keys: list[ApiKey], store: SecretStore) -> None:
    """After the store lost keys: a failed write leaves an index that lists too many,
    which the next read corrects."""
    try:
        write_index(_index_path(), store.name, _entries(keys))
    except SecretStoreError as exc:
        log.warning("%s", exc.message)


def revoke_key(name: str, store: SecretStore | None = None) -> bool:
    store = store or open_store()
    keys = load_keys(store)
    kept = [k for k in keys if k.name != name]
    if len(kept) == len(keys):
        return False
    _save(kept, store)
    _record_after_store_write(kept, store)
    return True


def revoke_all(store: SecretStore | None = None) -> int:
    store = store or open_store()
    try:
        count = len(load_keys(store))
    except SecretStoreError:
        count = 0
    _save([], store)
    _record_after_store_write([], store)
    return count
