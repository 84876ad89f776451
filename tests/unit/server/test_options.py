"""Resolving the worker's options: user keys, the app's token, and failing closed."""

from __future__ import annotations

import pytest

from hearth.config.launch import LAN_HOST, LaunchSettings
from hearth.server.options import (
    KeyStoreUnreadableError,
    ServeOptions,
    resolve_options,
    validate_options,
)
from hearth.server.security import Access


def _unreadable() -> tuple[str, ...]:
    raise KeyStoreUnreadableError("the key store is locked")


def _stored() -> tuple[str, ...]:
    return ("hk-stored",)


def _none() -> tuple[str, ...]:
    return ()


def _resolve(settings: LaunchSettings, read=_none, **env: str) -> ServeOptions:
    return resolve_options(settings, worker=False, environ=env, read_stored=read)


def test_the_worker_token_is_never_a_user_key() -> None:
    options = resolve_options(
        LaunchSettings(endpoint_open=False),
        worker=True,
        environ={"HEARTH_WORKER_TOKEN": "tok"},
        read_stored=_unreadable,  # the endpoint is off: the key store is not even read
    )
    assert options.worker_token == "tok" and options.api_keys == ()
    policy = options.access_policy()
    assert policy.decide("/v1/models", "tok") is Access.ALLOW
    assert policy.decide("/v1/models", None) is Access.ENDPOINT_OFF
    assert validate_options(options) == []


def test_unreadable_key_store_fails_closed_when_keys_may_be_needed() -> None:
    with pytest.raises(KeyStoreUnreadableError):
        _resolve(LaunchSettings(), read=_unreadable)  # serve: keys would be required
    with pytest.raises(KeyStoreUnreadableError):
        _resolve(LaunchSettings(api_keys=("given",)), read=_unreadable)
    with pytest.raises(KeyStoreUnreadableError):
        _resolve(LaunchSettings(host=LAN_HOST, require_key=False), read=_unreadable)


def test_key_store_not_read_when_no_key_can_be_needed() -> None:
    # Loopback with "no key required": stored keys would change nothing.
    options = _resolve(LaunchSettings(require_key=False), read=_unreadable)
    assert not options.require_key and options.access_policy().accepts(None)
    # --no-stored-keys: only the given keys count.
    options = _resolve(LaunchSettings(stored_keys=False, api_keys=("k",)), read=_unreadable)
    assert options.api_keys == ("k",) and options.require_key


def test_no_keys_exist_is_not_an_error() -> None:
    options = _resolve(LaunchSettings(), read=_none)
    assert options.api_keys == () and not options.require_key
    assert validate_options(options) == []


def test_serve_requires_keys_when_any_exist() -> None:
    options = _resolve(LaunchSettings(), read=_stored, HEARTH_API_KEY="env-key")
    assert options.api_keys == ("env-key", "hk-stored") and options.require_key
    policy = options.access_policy()
    assert policy.accepts("hk-stored") and policy.accepts("env-key")
    assert not policy.accepts(None)


def test_require_key_without_any_key_is_refused() -> None:
    options = _resolve(LaunchSettings(require_key=True), read=_none)
    assert any("--require-key needs a key" in p for p in validate_options(options))
    lan = _resolve(LaunchSettings(host=LAN_HOST), read=_none)
    assert any("--api-key" in p for p in validate_options(lan))


def test_live_access_change_rereads_keys_and_fails_closed() -> None:
    stored: list[str] = []

    def read() -> tuple[str, ...]:
        return tuple(stored)

    options = resolve_options(
        LaunchSettings(require_key=False),
        worker=True,
        environ={"HEARTH_WORKER_TOKEN": "tok"},
        read_stored=read,
    )
    stored.append("hk-new")
    policy = options.access_for(endpoint_open=True, require_key=True, loopback=True)
    assert policy.user_keys == ("hk-new",) and policy.admin_token == "tok"
    assert policy.decide("/v1/models", "hk-new") is Access.ALLOW
    assert policy.decide("/v1/models", None) is Access.NEED_KEY
    broken = resolve_options(
        LaunchSettings(require_key=False),
        worker=True,
        environ={"HEARTH_WORKER_TOKEN": "tok"},
        read_stored=_unreadable,
    )
    with pytest.raises(KeyStoreUnreadableError):
        broken.access_for(endpoint_open=True, require_key=True, loopback=True)
    assert not broken.access_for(endpoint_open=False, require_key=True, loopback=True).endpoint_open


def test_a_network_endpoint_always_needs_a_key():
    options = resolve_options(
        LaunchSettings(require_key=False),
        worker=True,
        environ={"HEARTH_WORKER_TOKEN": "tok"},
        read_stored=lambda: ("hk-lan",),
    )
    policy = options.access_for(endpoint_open=True, require_key=False, loopback=False)
    assert policy.decide("/v1/models", None) is Access.NEED_KEY
    assert policy.decide("/v1/models", "hk-lan") is Access.ALLOW
