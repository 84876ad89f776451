"""Remote engines: other servers whose models Hearth serves behind its own endpoint.

A user who outgrows one machine points Hearth at a vLLM cluster, a GPU box running
Ollama or llama-server, or another Hearth. Each engine is a short name (the prefix of
its models' ids: ``gpu-box/qwen3-32b``), a base URL and the dialect Hearth speaks to it.

The list lives in ``engines.json`` in the config folder, replaced atomically. An
engine's API key never goes there: it is a secret (:mod:`hearth.config.secrets`, the
OS keyring or the chosen secrets file) named ``engine-key:NAME``; the file only says
that one exists. The worker re-reads the file when it changes, so ``hearth engines
add`` takes effect on a running server without a restart.

API: :class:`EngineRegistry` (``engines``, ``get``, ``add``, ``remove``, ``api_key``),
:class:`EngineSpec`, :class:`EngineKind`, :func:`normalize_url`, :func:`check_name`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from urllib.parse import urlsplit

from hearth.config.atomic import write_text_atomic
from hearth.config.paths import default_paths
from hearth.config.secrets import SecretStore, delete_secret, get_secret, set_secret

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
FILE_NAME = "engines.json"
KEY_PREFIX = "engine-key:"
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


class EngineKind(str, Enum):
    """The dialect Hearth speaks to the engine."""

    OPENAI = "openai"  # vLLM, llama-server, LM Studio, SGLang, another Hearth
    OLLAMA = "ollama"


class EngineConfigError(ValueError):
    """A name, URL or kind that cannot be used, or an unreadable engines file."""


@dataclass(frozen=True)
class EngineSpec:
    """One registered engine, as the engines file keeps it (no secret in it)."""

    name: str
    url: str  # base URL without a trailing slash (for OpenAI kinds, without /v1)
    kind: EngineKind = EngineKind.OPENAI
    has_key: bool = False
    added: float = 0.0

    @property
    def key_name(self) -> str:
        """The secret's name in the store."""
        return KEY_PREFIX + self.name


def check_name(name: str) -> str:
    """An engine name is the prefix of its models' ids, so it must be short and plain."""
    if not _NAME_RE.match(name):
        raise EngineConfigError(
            f"'{name}' cannot name an engine: use lower-case letters, digits, '.', '_' "
            "and '-' (up to 63), starting with a letter or digit."
        )
    return name


def normalize_url(url: str, kind: EngineKind) -> str:
    """``http(s)://host[:port][/prefix]`` with no trailing slash, query or credentials;
    an OpenAI kind's trailing ``/v1`` is dropped (Hearth adds the paths itself)."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EngineConfigError(f"'{url}' is not an http:// or https:// URL.")
    if parts.username or parts.password:
        raise EngineConfigError(
            "Put the engine's key in --api-key-stdin, not in the URL (URLs are shown and logged)."
        )
    if parts.query or parts.fragment:
        raise EngineConfigError(f"'{url}' has a query or fragment; give the base URL only.")
    path = parts.path.rstrip("/")
    if kind is EngineKind.OPENAI and path.endswith("/v1"):
        path = path[: -len("/v1")]
    elif kind is EngineKind.OLLAMA and path.endswith("/api"):
        path = path[: -len("/api")]
    return f"{parts.scheme}://{parts.netloc}{path}"


class EngineRegistry:
    """The engines file and the engines' keys; the one writer of both.

    Reads are cached by the file's modification time, so a server may call
    :meth:`engines` per request and still see changes made by the CLI.
    """

    def __init__(self, path: Path | None = None, store: SecretStore | None = None) -> None:
        self.path = path or default_paths().config_dir / FILE_NAME
        self._store = store
        self._cache: tuple[int, tuple[EngineSpec, ...]] | None = None

    def engines(self) -> tuple[EngineSpec, ...]:
        try:
            stamp = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            self._cache = None
            return ()
        if self._cache is None or self._cache[0] != stamp:
            self._cache = (stamp, self._read())
        return self._cache[1]

    def get(self, name: str) -> EngineSpec | None:
        return next((e for e in self.engines() if e.name == name), None)

    def add(
        self,
        name: str,
        url: str,
        kind: EngineKind = EngineKind.OPENAI,
        api_key: str | None = None,
        *,
        replace_existing: bool = False,
    ) -> EngineSpec:
        """Register an engine (its key goes to the secret store first, so a store that
        refuses it leaves the file unchanged)."""
        check_name(name)
        existing = self.get(name)
        if existing is not None and not replace_existing:
            raise EngineConfigError(
                f"An engine named '{name}' exists; remove it first ('hearth engines rm {name}')."
            )
        spec = EngineSpec(name, normalize_url(url, kind), kind, bool(api_key), time.time())
        if api_key:
            set_secret(spec.key_name, api_key, self._store)
        elif existing is not None and existing.has_key:
            delete_secret(existing.key_name, self._store)
        others = [e for e in self.engines() if e.name != name]
        self._write([*others, spec])
        log.info("engine %s added: %s (%s)", name, spec.url, kind.value)
        return spec

    def remove(self, name: str) -> bool:
        """Forget an engine and its key; False if there was none by that name."""
        existing = self.get(name)
        if existing is None:
            return False
        self._write([e for e in self.engines() if e.name != name])
        if existing.has_key:
            delete_secret(existing.key_name, self._store)
        log.info("engine %s removed", name)
        return True

    def api_key(self, spec: EngineSpec) -> str | None:
        """The engine's key from the secret store (raises ``SecretStoreError`` when the
        store cannot be read: callers must not send the request keyless then)."""
        return get_secret(spec.key_name, self._store) if spec.has_key else None

    def _read(self) -> tuple[EngineSpec, ...]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if raw.get("version") != SCHEMA_VERSION:
                raise EngineConfigError(f"unknown version {raw.get('version')!r}")
            return tuple(
                EngineSpec(
                    check_name(str(item["name"])),
                    str(item["url"]),
                    EngineKind(item.get("kind", "openai")),
                    bool(item.get("has_key", False)),
                    float(item.get("added", 0.0)),
                )
                for item in raw["engines"]
            )
        except FileNotFoundError:
            return ()
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EngineConfigError(
                f"The engines file {self.path} is unreadable ({exc}); fix or delete it."
            ) from None

    def _write(self, engines: list[EngineSpec]) -> None:
        items = [
            {"name": e.name, "url": e.url, "kind": e.kind.value, "has_key": e.has_key,
             "added": e.added}
            for e in sorted(engines, key=lambda e: e.name)
        ]  # fmt: skip
        text = json.dumps({"version": SCHEMA_VERSION, "engines": items}, indent=2) + "\n"
        write_text_atomic(self.path, text)
        self._cache = None
