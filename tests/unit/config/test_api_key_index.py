"""The API keys' index (config/key_index.py): the store is read only when a key may be
in it, keys made but unreadable still fail closed, and keys made before the index
existed are found. Real keyring backends: a file-backed one and a locked one
(tests/keyring_backends), keyring's fail backend, and Hearth's secrets.json."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from keyring.backend import KeyringBackend

from hearth.config import secrets
from hearth.config.api_keys import create_key, list_keys, load_keys, revoke_all, revoke_key
from hearth.config.key_index import KeyEntry, read_index
from hearth.config.paths import default_paths
from keyring_backends.file_keyring import FileKeyring
from keyring_backends.locked_keyring import LockedKeyring

FAIL = "keyring.backends.fail.Keyring"
Switch = Callable[[str | KeyringBackend], KeyringBackend]


def index_file() -> Path:
    return default_paths().key_index_file


def recorded(store: str) -> tuple[KeyEntry, ...] | None:
    index = read_index(index_file())
    return index.keys_of(store) if index is not None else None


def test_no_key_made_means_the_store_is_never_read(use_backend: Switch, tmp_path: Path) -> None:
    use_backend(FileKeyring(tmp_path / "ring.json"))
    assert load_keys() == []  # the first read records that there are none
    assert recorded("keyring") == ()
    use_backend(LockedKeyring())  # any read of it now would raise
    assert load_keys() == [] and list_keys() == []
    use_backend(FAIL)  # no keyring at all: same
    assert load_keys() == []


def test_keys_made_but_unreadable_fail_closed(use_backend: Switch, tmp_path: Path) -> None:
    use_backend(FileKeyring(tmp_path / "ring.json"))
    key = create_key("laptop")
    entries = recorded("keyring")
    assert entries is not None and [e.name for e in entries] == ["laptop"]
    assert key.key not in index_file().read_text()  # names and masks only
    assert entries[0].masked == key.masked and entries[0].created == key.created
    for unreadable in (LockedKeyring(), FAIL):
        use_backend(unreadable)
        with pytest.raises(secrets.SecretStoreError):
            load_keys()
        assert [e.name for e in list_keys()] == ["laptop"]  # listing needs no keyring


def test_keys_from_before_the_index_still_count(use_backend: Switch, tmp_path: Path) -> None:
    ring = FileKeyring(tmp_path / "ring.json")
    use_backend(ring)
    key = create_key("old")
    index_file().unlink()  # as an older Hearth left it: keys, no index
    use_backend(LockedKeyring())
    with pytest.raises(secrets.SecretStoreError, match="KeyringLocked"):
        load_keys()  # may hold keys: fail closed, as before
    assert not index_file().exists()
    use_backend(ring)
    assert load_keys() == [key]  # the first read that works records the index
    assert [e.name for e in recorded("keyring") or ()] == ["old"]


def test_no_keyring_and_no_index_has_no_keys_and_records_nothing(
    use_backend: Switch, caplog: pytest.LogCaptureFixture
) -> None:
    use_backend(FAIL)
    with caplog.at_level(logging.INFO):
        assert load_keys() == [] and load_keys() == []  # a server re-reads every 2 s
    assert caplog.text.count("No OS keyring here") == 1  # said once, not every read
    assert not index_file().exists()  # a later session with a keyring reads it again
    with pytest.raises(secrets.SecretStoreError, match="No OS keyring"):
        create_key("laptop")
    assert not index_file().exists()  # the failed create left nothing behind


def test_a_failed_store_write_leaves_the_index_as_it_was(use_backend: Switch) -> None:
    use_backend(FileKeyring(index_file().parent / "ring.json"))
    assert load_keys() == []
    use_backend(LockedKeyring())  # read is skipped (no keys); the write is refused
    with pytest.raises(secrets.SecretStoreError):
        create_key("laptop")
    assert recorded("keyring") == ()


def test_revoking_updates_the_index(use_backend: Switch, tmp_path: Path) -> None:
    use_backend(FileKeyring(tmp_path / "ring.json"))
    create_key("a")
    create_key("b")
    assert revoke_key("a")
    assert [e.name for e in list_keys()] == ["b"]
    assert revoke_all() == 1
    assert recorded("keyring") == ()


def test_the_index_belongs_to_one_store(use_backend: Switch, tmp_path: Path) -> None:
    use_backend(FileKeyring(tmp_path / "ring.json"))
    create_key("in-keyring")
    file_store = secrets.open_store(secrets.StoreChoice.FILE)
    assert load_keys(file_store) == []  # another store: its own read, its own index
    assert recorded("file") == ()
    assert recorded("keyring") is None
    key = create_key("in-file", file_store)
    use_backend(FAIL)  # the file store needs no keyring
    assert load_keys(file_store) == [key]


def test_keys_in_another_store_are_not_waved_through_without_a_keyring(
    use_backend: Switch,
) -> None:
    file_store = secrets.open_store(secrets.StoreChoice.FILE)
    create_key("in-file", file_store)
    use_backend(FAIL)  # the setting points at the keyring again, and there is none
    with pytest.raises(secrets.SecretStoreError, match="No OS keyring"):
        load_keys()  # keys were made: the store in use must be read, and cannot be
    index_file().write_text("{not json")  # a damaged index may have listed keys
    with pytest.raises(secrets.SecretStoreError, match="No OS keyring"):
        load_keys()


def test_a_damaged_index_is_ignored_and_the_store_read(use_backend: Switch, tmp_path: Path) -> None:
    use_backend(FileKeyring(tmp_path / "ring.json"))
    key = create_key("laptop")
    index_file().write_text("{not json")
    assert load_keys() == [key]
    assert json.loads(index_file().read_text())["keys"][0]["name"] == "laptop"
    index_file().write_text('{"schema_version": 1, "store": "keyring", "keys": []}')
    use_backend(LockedKeyring())
    assert load_keys() == []  # a valid index is believed: the store is not read
