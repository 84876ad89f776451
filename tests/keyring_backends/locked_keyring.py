"""A keyring backend that is always locked, for fail-closed tests.

Select it in a child process with ``PYTHON_KEYRING_BACKEND=locked_keyring.LockedKeyring``
and this folder on ``PYTHONPATH`` (not ``tests/`` itself: ``tests/hearth.py`` would
shadow the package).
"""

from __future__ import annotations

from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked

FOLDER = str(Path(__file__).resolve().parent)


class LockedKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        raise KeyringLocked("the test keyring is locked")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise KeyringLocked("the test keyring is locked")

    def delete_password(self, service: str, username: str) -> None:
        raise KeyringLocked("the test keyring is locked")
