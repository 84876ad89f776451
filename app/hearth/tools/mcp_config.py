"""``mcp.json``: which MCP servers the app may start, in the ``mcpServers`` format.

The format is the one Claude Desktop, Cursor and LM Studio write, so a user's existing
file can be used as it is::

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "..."}}
    }}

A value in ``env`` or ``headers`` may be a reference to the secret store,
``"hearth-secret:NAME"``, so that a key need not sit in the file; it is read when the
server starts, and a secret that can't be read keeps only that server from starting.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from hearth.config.paths import default_paths

log = logging.getLogger(__name__)

SECRET_PREFIX = "hearth-secret:"
"""A value that names a secret in the secret store instead of holding it."""

SecretLookup = Callable[[str], str | None]

_HTTP_TYPES = {"http", "streamable-http", "streamable_http", "streamableHttp"}


class McpConfigError(ValueError):
    """``mcp.json`` (or one of its servers) can't be used; the message says where."""


@dataclass(frozen=True)
class McpServerEntry:
    """One configured server: a command to run (stdio) or a URL (streamable HTTP)."""

    name: str
    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    disabled: bool = False

    def describe(self) -> str:
        """One line for a list: what runs, or where it is."""
        if self.transport == "http":
            return self.url
        return " ".join([self.command, *self.args])

    def with_secrets(self, lookup: SecretLookup) -> McpServerEntry:
        """The entry with every secret reference replaced by its value."""
        return replace(
            self,
            env=_resolved(self.env, lookup, self.name, "env"),
            headers=_resolved(self.headers, lookup, self.name, "headers"),
        )


@dataclass(frozen=True)
class McpConfig:
    servers: tuple[McpServerEntry, ...] = ()
    path: Path | None = None

    def server(self, name: str) -> McpServerEntry:
        for entry in self.servers:
            if entry.name == name:
                return entry
        known = ", ".join(e.name for e in self.servers) or "none"
        raise McpConfigError(f"No MCP server named {name!r} is configured (configured: {known}).")

    @property
    def enabled(self) -> tuple[McpServerEntry, ...]:
        return tuple(e for e in self.servers if not e.disabled)


def default_config_path() -> Path:
    return default_paths().config_dir / "mcp.json"


def load_config(path: Path | None = None) -> McpConfig:
    """Read ``mcp.json``; a missing file is an empty configuration."""
    path = path or default_config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return McpConfig(path=path)
    except OSError as exc:
        raise McpConfigError(f"{path} can't be read: {exc.strerror or exc}.") from exc
    except UnicodeDecodeError as exc:  # binary junk: named, never a crash in the chat
        raise McpConfigError(f"{path} is not UTF-8 text (byte {exc.start}).") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}."
        ) from exc
    return replace(parse_config(data, str(path)), path=path)


def parse_config(data: Any, where: str = "mcp.json") -> McpConfig:
    if not isinstance(data, dict):
        raise McpConfigError(f'{where} must hold a JSON object with "mcpServers".')
    servers = data.get("mcpServers", data.get("servers", {}))
    if not isinstance(servers, dict):
        raise McpConfigError(f'{where}: "mcpServers" must be an object of servers by name.')
    return McpConfig(tuple(_entry(name, raw, where) for name, raw in servers.items()))


def _entry(name: str, raw: Any, where: str) -> McpServerEntry:
    at = f"{where}: server {name!r}"
    if not name.strip():
        raise McpConfigError(f"{where}: a server has an empty name.")
    if not isinstance(raw, dict):
        raise McpConfigError(f"{at} must be an object.")
    kind = str(raw.get("type") or raw.get("transport") or "")
    disabled = bool(raw.get("disabled", False))
    if kind == "sse":
        raise McpConfigError(
            f"{at} uses the old SSE transport, which Hearth doesn't speak: use its "
            "streamable HTTP URL (often ending in /mcp)."
        )
    if "url" in raw or kind in _HTTP_TYPES:
        url = raw.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise McpConfigError(f'{at} needs an http:// or https:// "url".')
        headers = _strings(raw.get("headers", {}), f"{at}: headers")
        return McpServerEntry(name, "http", url=url, headers=headers, disabled=disabled)
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError(f'{at} needs a "command" to run (or a "url").')
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError(f'{at}: "args" must be a list of strings.')
    env = _strings(raw.get("env", {}), f"{at}: env")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise McpConfigError(f'{at}: "cwd" must be a string.')
    return McpServerEntry(
        name, "stdio", command=command, args=tuple(args), env=env, cwd=cwd, disabled=disabled
    )


def _strings(value: Any, at: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise McpConfigError(f"{at} must be an object of strings.")
    return dict(value)


def _resolved(
    values: Mapping[str, str], lookup: SecretLookup, server: str, what: str
) -> dict[str, str]:
    out = {}
    for key, value in values.items():
        if not value.startswith(SECRET_PREFIX):
            out[key] = value
            continue
        name = value[len(SECRET_PREFIX) :]
        secret = lookup(name)
        if secret is None:
            raise McpConfigError(
                f"MCP server {server!r}: the secret {name!r} for {what} {key} is not in "
                "the secret store."
            )
        out[key] = secret
    return out
