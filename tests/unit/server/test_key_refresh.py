"""The running server's key set follows the secret store, and fails closed."""

from __future__ import annotations

import asyncio

from hearth.server.key_refresh import KeyRefresher, KeySource
from hearth.server.options import KeyStoreUnreadableError
from hearth.server.security import AccessControl, AccessPolicy


class Store:
    """A key reader whose content and readability the test changes."""

    def __init__(self, *keys: str) -> None:
        self.keys = keys
        self.locked = False
        self.reads = 0

    def __call__(self) -> tuple[str, ...]:
        self.reads += 1
        if self.locked:
            raise KeyStoreUnreadableError("Cannot read the API keys.")
        return self.keys


def _refresh(control: AccessControl, store: Store, given: tuple[str, ...] = ()) -> None:
    asyncio.run(KeyRefresher(control, KeySource(given, store)).refresh())


def test_revoked_and_created_keys_apply_to_both_listeners() -> None:
    policy = AccessPolicy(user_keys=("old",), require_key=True)
    control = AccessControl(policy)
    control.set_endpoint(AccessPolicy(user_keys=("old",), require_key=True, loopback_only=False))
    store = Store("new")
    _refresh(control, store, given=("cli",))
    assert control.policy.accepts("new") and control.policy.accepts("cli")
    assert not control.policy.accepts("old")
    endpoint = control.endpoint_policy
    assert endpoint is not None and endpoint.accepts("new") and not endpoint.accepts("old")


def test_revoking_the_last_key_locks_rather_than_opens() -> None:
    control = AccessControl(AccessPolicy(user_keys=("only",), require_key=True))
    _refresh(control, Store())
    assert control.policy.key_required
    assert not control.policy.accepts(None)
    assert not control.policy.accepts("only")


def test_an_unreadable_store_refuses_stored_keys_but_not_given_ones() -> None:
    control = AccessControl(AccessPolicy(user_keys=("stored", "cli"), require_key=True))
    store = Store("stored")
    store.locked = True
    refresher = KeyRefresher(control, KeySource(("cli",), store))
    asyncio.run(refresher.refresh())
    assert not control.policy.accepts("stored")
    assert control.policy.accepts("cli")
    store.locked = False  # unlocked again: the stored key works again
    asyncio.run(refresher.refresh())
    assert control.policy.accepts("stored")


def test_no_read_while_no_listener_needs_a_key() -> None:
    control = AccessControl(AccessPolicy(require_key=False, loopback_only=True))
    store = Store("k")
    _refresh(control, store)
    assert store.reads == 0
    control.set_endpoint(AccessPolicy(require_key=False, loopback_only=False))
    _refresh(control, store)  # a network listener always needs a key
    assert store.reads == 1
