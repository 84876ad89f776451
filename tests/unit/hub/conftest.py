"""Fixtures for the hub unit tests: a file-backed keyring under tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyrings.alt.file import PlaintextKeyring


@pytest.fixture
def file_keyring(tmp_path: Path) -> Iterator[KeyringBackend]:
    """A real keyring backend whose file lives in this test's tmp_path."""
    ring = PlaintextKeyring()
    ring.file_path = str(tmp_path / "keyring" / "keyring_pass.cfg")
    previous = keyring.get_keyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)
