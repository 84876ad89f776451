"""A working keyring backend kept in one JSON file, for tests that need a keyring.

The test extra installs no keyring backend (a user's install has none either), so a
test that needs a keyring that works selects this one: in a child process with
``PYTHON_KEYRING_BACKEND=file_keyring.FileKeyring``, ``HEARTH_TEST_KEYRING_FILE`` set
to the file and this folder on ``PYTHONPATH`` (the ``file_keyring`` fixture does all
three, and ``keyring.set_keyring`` for the test's own process).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import KeyringError, PasswordDeleteError

FOLDER = str(Path(__file__).resolve().parent)
FILE_ENV = "HEARTH_TEST_KEYRING_FILE"


def child_env(path: Path, backend: str = "file_keyring.FileKeyring") -> dict[str, str]:
    """The variables that give a child process ``backend`` (this module's) at ``path``."""
    parts = [FOLDER, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {
        "PYTHONPATH": os.pathsep.join(parts),
        "PYTHON_KEYRING_BACKEND": backend,
        FILE_ENV: str(path),
    }


class FileKeyring(KeyringBackend):
    """Passwords in ``{service: {username: password}}`` JSON at ``file_path``."""

    priority = 1  # type: ignore[assignment]

    def __init__(self, path: Path | str | None = None) -> None:
        super().__init__()
        # keyring's chainer makes one of every backend class it knows, without arguments
        self.file_path = str(path if path is not None else os.environ.get(FILE_ENV, ""))

    def _load(self) -> dict[str, dict[str, str]]:
        if not self.file_path:
            raise KeyringError(f"{FILE_ENV} names no file for the test keyring")
        try:
            data: dict[str, dict[str, str]] = json.loads(Path(self.file_path).read_text())
        except FileNotFoundError:
            return {}
        return data

    def _dump(self, data: dict[str, dict[str, str]]) -> None:
        path = Path(self.file_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(data))
        os.replace(temp, path)

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(service, {}).get(username)

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data.setdefault(service, {})[username] = password
        self._dump(data)

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.get(service, {}).pop(username, None) is None:
            raise PasswordDeleteError(f"no password for {username!r}")
        self._dump(data)


class AltPlaintextKeyring(FileKeyring):
    """Stands in for keyrings.alt's ``PlaintextKeyring`` (which ``keyring`` picks by
    itself on a headless Linux box where keyrings.alt is installed): Hearth tells that
    backend by its module and class name, which this one carries, and reports it as the
    plain-text file it is."""

    __module__ = "keyrings.alt.file"
