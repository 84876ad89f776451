"""Fixtures for the hub unit tests: a file-backed keyring under tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from keyring_backends.file_keyring import FileKeyring


@pytest.fixture
def file_keyring(tmp_path: Path) -> Iterator[KeyringBackend]:
    """A real keyring backend whose file lives in this test's tmp_path."""
    ring = FileKeyring(tmp_path / "keyring" / "keyring.json")
    previous = keyring.get_keyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)
