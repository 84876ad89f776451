"""Writing ``mcp.json``: the one writer of the file (Settings → Tools' list, its JSON
view and the import all save through :class:`McpFile`).

The file is kept as the raw JSON it is, so that keys Hearth doesn't use (another app's
``"autoApprove"``, a top-level ``"inputs"``) survive an edit. Every save is validated
first (``parse_config``: a mistake is a ``McpConfigError`` that says where, and nothing
is written), then sealed (secrets into the store, :mod:`hearth.tools.mcp_secrets`),
then written atomically; secrets the file no longer refers to are deleted after.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from hearth.config.atomic import write_text_atomic
from hearth.tools.mcp_config import McpConfig, McpConfigError, parse_config
from hearth.tools.mcp_secrets import SecretSink, forget_unused, seal_servers

log = logging.getLogger(__name__)

SERVERS_KEY = "mcpServers"
_ALIASES = (SERVERS_KEY, "servers")  # VS Code writes "servers"; parse_config reads both


class McpFile:
    """``mcp.json`` at ``path``; ``store`` gives the secret store when a save needs it
    (the keyring is opened only then: it can block, and most saves have no secret)."""

    def __init__(self, path: Path, store: Callable[[], SecretSink]) -> None:
        self.path = path
        self._store = store

    # ------------------------------------------------------------------ reading
    def read(self) -> dict[str, Any]:
        """The file's JSON object (a missing file: no servers). Raises
        ``McpConfigError`` for a file that can't be read or isn't a JSON object."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {SERVERS_KEY: {}}
        except OSError as exc:
            raise McpConfigError(f"{self.path} can't be read: {exc.strerror or exc}.") from exc
        except UnicodeDecodeError as exc:  # binary junk: named, to be replaced
            raise McpConfigError(f"{self.path} is not UTF-8 text (byte {exc.start}).") from exc
        return decode(text, str(self.path))

    def text(self) -> str:
        """The file as the JSON view shows it (references, never secrets)."""
        return dump(self.read())

    def secret(self, name: str) -> str | None:
        """A secret the file refers to, from the same store saves write to (blocking:
        the keyring); the lookup a host resolves references with."""
        return self._store().get(name)

    def servers(self) -> dict[str, dict[str, Any]]:
        """The raw entries by name, in the file's order."""
        return dict(_servers(self.read()))

    # ------------------------------------------------------------------ writing
    def save(
        self, data: Mapping[str, Any], marked: Mapping[str, Collection[str]] | None = None
    ) -> McpConfig:
        """Validate, seal and write ``data`` (the whole file); returns what it holds."""
        parse_config(data, self.path.name)  # refuses before anything is stored
        before = self._current_servers()
        document = dict(data)
        key = _key(document)
        store = self._store()
        document[key] = seal_servers(_servers(document), store, marked)
        write_text_atomic(self.path, dump(document))
        log.info("saved %s (%d MCP servers)", self.path, len(document[key]))
        forget_unused(before, document[key], store)
        return _with_path(parse_config(document, self.path.name), self.path)

    def save_text(self, text: str) -> McpConfig:
        """Save what the JSON view holds (a mistake names its line and column)."""
        return self.save(decode(text, "The JSON"))

    def put(
        self,
        name: str,
        raw: Mapping[str, Any],
        *,
        replacing: str | None = None,
        marked: Collection[str] = (),
    ) -> McpConfig:
        """Add or replace the server ``name`` (``replacing``: its old name, when it was
        renamed; it keeps its place in the list)."""
        name = name.strip()
        document = self.read()
        servers = _servers(document)
        if name != replacing and name in servers:
            raise McpConfigError(f"There is already an MCP server named {name!r}.")
        if replacing is not None and replacing in servers:
            servers = {name if k == replacing else k: v for k, v in servers.items()}
        servers[name] = dict(raw)
        document[_key(document)] = servers
        return self.save(document, {name: marked})

    def add_all(self, entries: Mapping[str, Mapping[str, Any]]) -> McpConfig:
        """Add servers (an import); a name already present is an error, so callers
        skip those first (``hearth.tools.mcp_import``)."""
        document = self.read()
        servers = _servers(document)
        clash = sorted(set(entries) & set(servers))
        if clash:
            raise McpConfigError(f"Already configured: {', '.join(clash)}.")
        servers.update({name: dict(raw) for name, raw in entries.items()})
        document[_key(document)] = servers
        return self.save(document)

    def remove(self, name: str) -> McpConfig:
        """Remove a server (its secrets go from the store too)."""
        document = self.read()
        servers = _servers(document)
        servers.pop(name, None)
        document[_key(document)] = servers
        return self.save(document)

    def set_enabled(self, name: str, enabled: bool) -> McpConfig:
        """Turn a server on or off (``"disabled": true``, as Claude Desktop writes it)."""
        document = self.read()
        servers = _servers(document)
        if name not in servers:
            raise McpConfigError(f"No MCP server named {name!r} is configured.")
        entry = dict(servers[name])
        if enabled:
            entry.pop("disabled", None)
        else:
            entry["disabled"] = True
        servers[name] = entry
        document[_key(document)] = servers
        return self.save(document)

    def _current_servers(self) -> dict[str, dict[str, Any]]:
        try:
            return self.servers()
        except McpConfigError:
            return {}  # a broken file being replaced: nothing of it to forget


def decode(text: str, where: str) -> dict[str, Any]:
    """JSON text to the file's object; a mistake says its line and column."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}."
        ) from exc
    if not isinstance(data, dict):
        raise McpConfigError(f'{where} must hold a JSON object with "{SERVERS_KEY}".')
    return data


def dump(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _key(document: Mapping[str, Any]) -> str:
    return next((k for k in _ALIASES if k in document), SERVERS_KEY)


def _servers(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    servers = document.get(_key(document), {})
    if not isinstance(servers, dict):
        raise McpConfigError(f'"{SERVERS_KEY}" must be an object of servers by name.')
    return dict(servers)


def _with_path(config: McpConfig, path: Path) -> McpConfig:
    return McpConfig(config.servers, path)
