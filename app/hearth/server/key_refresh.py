"""Keys created or revoked while a server runs take effect without a restart.

``hearth keys revoke`` (or the app's Settings) changes the secret store, not the
running server, and no keyring tells anyone of a change. So the server re-reads the
store every few seconds, off the event loop (a keyring read may block on D-Bus or the
macOS keychain), and swaps the key set in :class:`~hearth.server.security.AccessControl`.

Failing closed: when the store becomes unreadable, nobody can tell whether a key was
revoked meanwhile, so the stored keys stop opening the endpoint until it can be read
again; keys given on the command line (``--api-key``) keep working.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from hearth.server.options import KeyReader, KeyStoreUnreadableError
from hearth.server.security import AccessControl

log = logging.getLogger(__name__)

REFRESH_S = 2.0


@dataclass(frozen=True)
class KeySource:
    """Where a running server's user keys come from: ``given`` on the command line (or
    ``$HEARTH_API_KEY``), which never change, and the secret store read by ``read``."""

    given: tuple[str, ...]
    read: KeyReader
    every_s: float = REFRESH_S


class KeyRefresher:
    """Re-reads the store and updates the access control when the key set changes."""

    def __init__(self, control: AccessControl, source: KeySource) -> None:
        self._control = control
        self._source = source
        self._unreadable = False

    async def refresh(self) -> tuple[str, ...]:
        """One read of the store; returns the key set now in force. No read while no
        open listener needs a key (an explicit "no key on loopback" ignores the store)."""
        control = self._control
        policies = (control.policy, control.endpoint_policy)
        if not any(p is not None and p.endpoint_open and p.key_required for p in policies):
            return control.policy.user_keys
        try:
            stored = await asyncio.to_thread(self._source.read)
        except KeyStoreUnreadableError as exc:
            if not self._unreadable:
                log.error("%s Stored API keys are refused until it can be read.", exc.message)
            self._unreadable = True
            stored = ()
        else:
            if self._unreadable:
                log.warning("The API key store can be read again; its keys work again.")
            self._unreadable = False
        keys = tuple(dict.fromkeys((*self._source.given, *stored)))
        if keys != control.policy.user_keys:
            log.info("API keys changed in the store: %d key(s) now open the endpoint", len(keys))
            control.set_user_keys(keys)
        return keys

    async def run(self) -> None:
        """Refresh until cancelled (the app's lifespan owns this task)."""
        while True:
            await asyncio.sleep(self._source.every_s)
            await self.refresh()
