"""The worker's resolved options: launch settings plus the secrets read at start.

``config.launch.LaunchSettings`` is what was asked for (argv); ``ServeOptions`` adds
what only the worker may read: its per-launch token (environment) and the user's keys
(``--api-key``, ``$HEARTH_API_KEY`` and the key store). Access fails closed: when the
user's keys may be needed but the key store cannot be read, resolving raises
``KeyStoreUnreadableError`` and the server does not start.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from hearth.config.launch import (
    API_KEY_ENV,
    DEFAULT_PORT,
    WORKER_TOKEN_ENV,
    LaunchSettings,
)
from hearth.core.errors import HearthError
from hearth.core.model_info import LoadConfig
from hearth.core.prompt_cache import OFF, PromptCacheSettings
from hearth.core.residency import ResidencySettings
from hearth.server.security import AccessPolicy

log = logging.getLogger(__name__)

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_PORT",
    "WORKER_TOKEN_ENV",
    "KeyStoreUnreadableError",
    "ServeOptions",
    "is_loopback",
    "resolve_options",
    "stored_keys",
    "validate_options",
]


class KeyStoreUnreadableError(HearthError):
    """Keys may exist but cannot be read: serving would let clients in without them."""

    code = "secret_store_unavailable"


KeyReader = Callable[[], tuple[str, ...]]


def stored_keys() -> tuple[str, ...]:
    """Keys made with 'hearth keys create': () when none exist; raises when unreadable."""
    from hearth.config.api_keys import load_keys
    from hearth.config.secrets import SecretStoreError

    try:
        return tuple(k.key for k in load_keys())
    except SecretStoreError as exc:
        raise KeyStoreUnreadableError(
            f"Cannot read the API keys made with 'hearth keys create': {exc.message} "
            "Hearth will not serve without them. Unlock the key store, or start with "
            "--no-stored-keys to use only the keys given with --api-key."
        ) from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeOptions:
    load: LoadConfig
    host: str
    port: int
    api_keys: tuple[str, ...]  # the user's keys; never the worker token
    cors_origins: tuple[str, ...]
    parent_pid: int | None
    announce: bool  # print the listening line on stdout for the supervisor
    initial_model: bool = True  # load.model_path at start (else wait for JIT or /load)
    jit: bool = True  # requests naming a library model load it
    ttl_s: float | None = None  # unload after this long idle
    worker_token: str | None = None  # the supervisor's per-launch token (admin routes)
    endpoint_open: bool = True  # False: only worker_token gets in
    require_key: bool = False  # on loopback; off loopback a key is always required
    given_keys: tuple[str, ...] = ()  # --api-key and $HEARTH_API_KEY (re-read: never)
    use_stored_keys: bool = True
    read_stored: KeyReader = field(default=stored_keys, compare=False, repr=False)
    prompt_cache: PromptCacheSettings = OFF
    residency: ResidencySettings = field(default_factory=ResidencySettings)

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def access_policy(self) -> AccessPolicy:
        return AccessPolicy(
            admin_token=self.worker_token,
            user_keys=self.api_keys,
            endpoint_open=self.endpoint_open,
            require_key=self.require_key,
            loopback_only=self.loopback,
            allowed_origins=self.cors_origins,
        )

    def access_for(
        self, endpoint_open: bool, require_key: bool | None, loopback: bool
    ) -> AccessPolicy:
        """A fresh policy for the app's endpoint listener on a loopback or a network
        address (keys re-read from the store when one may be needed)."""
        keys, required = _user_keys(
            self.given_keys,
            read=self.read_stored if self.use_stored_keys and endpoint_open else None,
            require_key=require_key,
            loopback=loopback,
        )
        return AccessPolicy(
            admin_token=self.worker_token,
            user_keys=keys,
            endpoint_open=endpoint_open,
            require_key=required,
            loopback_only=loopback,
            allowed_origins=self.cors_origins,
        )


def _user_keys(
    given: tuple[str, ...], *, read: KeyReader | None, require_key: bool | None, loopback: bool
) -> tuple[tuple[str, ...], bool]:
    """The user keys and whether one is required. The store is read only if a key may be
    needed: explicitly not required on loopback means its keys change nothing."""
    needed = require_key is not False or not loopback
    stored = read() if read is not None and needed else ()
    keys = tuple(dict.fromkeys((*given, *stored)))
    required = bool(keys) if require_key is None else require_key
    return keys, required


def resolve_options(
    settings: LaunchSettings,
    *,
    worker: bool,
    environ: Mapping[str, str] | None = None,
    read_stored: KeyReader = stored_keys,
) -> ServeOptions:
    """The options to serve with; raises ``KeyStoreUnreadableError`` (fail closed)."""
    env = os.environ if environ is None else environ
    given = settings.api_keys + ((env[API_KEY_ENV],) if env.get(API_KEY_ENV) else ())
    loopback = is_loopback(settings.host)
    use_stored = settings.stored_keys
    keys, required = _user_keys(
        given,
        read=read_stored if use_stored and settings.endpoint_open else None,
        require_key=settings.require_key,
        loopback=loopback,
    )
    return ServeOptions(
        load=settings.load,
        host=settings.host,
        port=settings.port,
        api_keys=keys,
        cors_origins=settings.cors_origins,
        parent_pid=settings.parent_pid,
        announce=worker,
        initial_model=settings.has_model,
        jit=settings.jit,
        ttl_s=settings.ttl_s,
        worker_token=env.get(WORKER_TOKEN_ENV) or None,
        endpoint_open=settings.endpoint_open,
        require_key=required,
        given_keys=given,
        use_stored_keys=use_stored,
        read_stored=read_stored,
        prompt_cache=settings.prompt_cache,
        residency=settings.residency,
    )


_FLAGS = (  # LoadConfig's field names as `hearth serve` spells them
    ("n_threads_batch", "--threads-batch"), ("n_threads", "--threads"),
    ("n_parallel", "--parallel"), ("n_ubatch", "--ubatch"), ("n_batch", "--batch"),
    ("n_ctx", "--ctx"), ("draft_model_path", "--draft-model"), ("spec_mode", "--spec"),
    ("draft_min", "--draft-min"), ("draft_max", "--draft-max"), ("mmproj_path", "--mmproj"),
)  # fmt: skip


def _as_flags(problem: str) -> str:
    for name, flag in _FLAGS:
        problem = problem.replace(name, flag)
    return problem


def validate_options(options: ServeOptions) -> list[str]:
    """Problems that must stop the server before it binds anything."""
    problems = []
    if options.endpoint_open and not options.loopback and not options.api_keys:
        problems.append(
            f"Refusing to listen on {options.host} without an API key: anyone on the network "
            f"could use the model. Pass --api-key KEY (or set {API_KEY_ENV})."
        )
    elif options.endpoint_open and options.require_key and not options.api_keys:
        problems.append(
            "--require-key needs a key: create one with 'hearth keys create' or pass "
            "--api-key KEY."
        )
    if not options.endpoint_open and not options.worker_token:
        problems.append(f"--private needs the app's token in ${WORKER_TOKEN_ENV}.")
    problems.extend(_as_flags(problem) for problem in options.load.problems())
    if not 0 <= options.port <= 65535:
        problems.append("--port must be between 0 and 65535.")
    return problems
