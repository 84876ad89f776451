"""Keeping secrets out of ``mcp.json``: values in an entry's ``env`` and ``headers`` that
are secrets go to the secret store, and the file holds ``hearth-secret:NAME`` instead.

Which values are secrets: every header (an ``Authorization`` or ``X-Api-Key`` is the
usual reason a header is there at all), an ``env`` variable whose name says so (a
``_KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``...), and any variable the user marked.
This runs on every write of the file (:mod:`hearth.tools.mcp_file`): the list's editor,
the JSON view and an import all go through it, so none of them can leave a key behind
in plain text. ``McpServerEntry.with_secrets`` reads them back when a server starts.

Entries are raw JSON objects here (as the file holds them), so that keys Hearth doesn't
know (another app's ``"type"`` or ``"autoApprove"``) survive an edit.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol

from hearth.tools.mcp_config import SECRET_PREFIX

log = logging.getLogger(__name__)

NAME_PREFIX = "mcp/"
"""Every MCP secret's name in the store starts with this: ``mcp/SERVER/env/NAME``."""

_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIAL", "PRIVATE")
_SECRET_PARTS = frozenset({"KEY", "PAT", "AUTH", "PASS", "PW", "COOKIE", "BEARER"})
_MAX_LEN = 16384


class SecretSink(Protocol):
    """The part of a secret store this module uses (``hearth.config`` stores fit)."""

    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> bool: ...


def looks_secret(variable: str) -> bool:
    """Whether an environment variable's name says it holds a secret:
    ``GITHUB_PERSONAL_ACCESS_TOKEN``, ``BRAVE_API_KEY``, ``DB_PASSWORD`` are; ``TZ``,
    ``KEYBOARD_LAYOUT`` and ``PWD`` (the working folder) are not."""
    upper = variable.upper()
    parts = set(re.split(r"[^A-Z0-9]+", upper))
    return bool(parts & _SECRET_PARTS) or any(word in upper for word in _SECRET_WORDS)


def is_reference(value: str) -> bool:
    return value.startswith(SECRET_PREFIX)


def reference(name: str) -> str:
    return f"{SECRET_PREFIX}{name}"


def referenced(value: str) -> str | None:
    """The secret's name if ``value`` is a reference, else None."""
    return value[len(SECRET_PREFIX) :] if is_reference(value) else None


def secret_name(server: str, where: str, key: str) -> str:
    """The store's name for ``key`` of ``where`` (``env`` or ``headers``) of a server."""
    return f"{NAME_PREFIX}{server}/{where}/{key}"


def seal_entry(
    server: str,
    raw: Mapping[str, Any],
    store: SecretSink,
    marked: Collection[str] = (),
) -> dict[str, Any]:
    """``raw`` with its secrets moved into ``store`` and replaced by references.

    ``marked`` names ``env`` variables the user called secret whatever their name. A
    value that is already a reference is left as it is. Raises ``ValueError`` for a
    secret that can't be kept (empty of text, too long, control characters) and the
    store's own error when it can't be written, before anything is changed."""
    sealed = dict(raw)
    for where in ("env", "headers"):
        values = raw.get(where)
        if not isinstance(values, dict):
            continue  # parse_config names the mistake; nothing to seal
        out: dict[str, Any] = {}
        for key, value in values.items():
            if not _sealable(where, key, value, marked):
                out[key] = value
                continue
            name = secret_name(server, where, str(key))
            store.set(name, _checked(name, value))
            log.info("moved %s of MCP server %s into the secret store as %s", key, server, name)
            out[key] = reference(name)
        sealed[where] = out
    return sealed


def seal_servers(
    servers: Mapping[str, Mapping[str, Any]],
    store: SecretSink,
    marked: Mapping[str, Collection[str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every entry of an ``mcpServers`` object, sealed (:func:`seal_entry`)."""
    marked = marked or {}
    return {
        name: seal_entry(name, raw, store, marked.get(name, ())) if isinstance(raw, Mapping)
        else raw  # parse_config refuses it with a message; sealing leaves it be
        for name, raw in servers.items()
    }  # fmt: skip


def plain_secrets(servers: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """``"server: KEY"`` for each value a save would move into the store: what a file
    written by hand (or by another app) still holds in plain text."""
    found: list[str] = []
    for name, raw in servers.items():
        for where in ("env", "headers"):
            values = raw.get(where) if isinstance(raw, Mapping) else None
            if isinstance(values, dict):
                found += [f"{name}: {k}" for k, v in values.items() if _sealable(where, k, v)]
    return found


def _sealable(where: str, key: Any, value: Any, marked: Collection[str] = ()) -> bool:
    """Whether a value is a secret still in plain text (the one rule for both)."""
    secret = where == "headers" or key in marked or looks_secret(str(key))
    return secret and isinstance(value, str) and bool(value) and not is_reference(value)


def references(raw: Mapping[str, Any]) -> set[str]:
    """The names of the secrets an entry refers to."""
    names: set[str] = set()
    for where in ("env", "headers"):
        values = raw.get(where)
        if isinstance(values, dict):
            names.update(n for v in values.values() if isinstance(v, str) and (n := referenced(v)))
    return names


def forget_unused(
    before: Mapping[str, Mapping[str, Any]],
    after: Mapping[str, Mapping[str, Any]],
    store: SecretSink,
) -> list[str]:
    """Delete the MCP secrets ``before`` referred to that ``after`` no longer does (a
    server removed, a header dropped); only names Hearth made (``mcp/...``). Returns
    the names deleted."""
    kept = _all_references(after.values())
    gone = sorted(
        name for name in _all_references(before.values()) - kept if name.startswith(NAME_PREFIX)
    )
    for name in gone:
        store.delete(name)
        log.info("deleted the unused MCP secret %s", name)
    return gone


def missing(raw: Mapping[str, Any], store: SecretSink) -> list[str]:
    """The secrets an entry refers to that the store doesn't hold (sorted)."""
    return sorted(name for name in references(raw) if store.get(name) is None)


def _all_references(entries: Iterable[Mapping[str, Any]]) -> set[str]:
    names: set[str] = set()
    for raw in entries:
        if isinstance(raw, Mapping):
            names |= references(raw)
    return names


def _checked(name: str, value: str) -> str:
    """A header's value has spaces (``Bearer abc``), so the HF token's stricter check
    (no spaces) is not the one for these; control characters and size still are."""
    if len(value) > _MAX_LEN:
        raise ValueError(f"The value for {name} is too long to keep as a secret.")
    if any(not ch.isprintable() for ch in value):
        raise ValueError(f"The value for {name} contains control characters; type it again.")
    return value
