"""A keyring backend that answers only when the test opens its gate, and notes the
thread each call came from: a slow keyring (a locked one waiting on its unlock prompt)
made observable. Used in this test process only (``keyring.set_keyring``).

A call on the GUI's thread would freeze the window until the gate opens, so a test can
show the UI stays live (its loading state is seen while a read waits) and check
``threads()`` afterwards. The wait has a limit, so a mistake fails instead of hanging.
"""

from __future__ import annotations

import threading

from keyring.backend import KeyringBackend
from keyring.errors import KeyringError, PasswordDeleteError

WAIT_LIMIT_S = 60.0


class GatedKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()  # open until a test closes it
        self.held: list[str] = []  # the names of the calls waiting at the closed gate
        self.calls: list[tuple[str, threading.Thread]] = []  # (name, the caller's thread)
        self._values: dict[tuple[str, str], str] = {}

    def threads(self, prefix: str = "") -> list[threading.Thread]:
        """The threads of the calls for names that start with ``prefix``."""
        return [thread for name, thread in self.calls if name.startswith(prefix)]

    def _pass(self, name: str) -> None:
        self.calls.append((name, threading.current_thread()))
        if not self.gate.is_set():
            self.held.append(name)
            try:
                if not self.gate.wait(WAIT_LIMIT_S):
                    raise KeyringError("the test never opened the keyring's gate")
            finally:
                self.held.remove(name)

    def holds(self, prefix: str) -> bool:
        """Whether a call for a name that starts with ``prefix`` waits at the gate."""
        return any(name.startswith(prefix) for name in list(self.held))

    def get_password(self, service: str, username: str) -> str | None:
        self._pass(username)
        return self._values.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self._pass(username)
        self._values[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self._pass(username)
        if self._values.pop((service, username), None) is None:
            raise PasswordDeleteError("no such password")
