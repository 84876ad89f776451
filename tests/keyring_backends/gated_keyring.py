"""A keyring backend that answers only when the test opens its gate, and notes the
thread each call came from: a slow keyring (a locked one waiting on its unlock prompt)
made observable. Used in this test process only (``keyring.set_keyring``).

A call on the GUI's thread would freeze the window until the gate opens, so a test can
show the UI stays live (its loading state is seen while a read waits) and check
``threads`` afterwards. The wait has a limit, so a mistake fails instead of hanging.
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
        self.waiting = threading.Event()  # set when a call is held at the closed gate
        self.threads: list[threading.Thread] = []
        self._values: dict[tuple[str, str], str] = {}

    def _pass(self) -> None:
        self.threads.append(threading.current_thread())
        if not self.gate.is_set():
            self.waiting.set()
            if not self.gate.wait(WAIT_LIMIT_S):
                raise KeyringError("the test never opened the keyring's gate")

    def get_password(self, service: str, username: str) -> str | None:
        self._pass()
        return self._values.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self._pass()
        self._values[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self._pass()
        if self._values.pop((service, username), None) is None:
            raise PasswordDeleteError("no such password")
