"""Importing the MCP servers other apps already have: Claude Desktop, Cursor, LM Studio.

All three write the ``mcpServers`` format Hearth reads, so an import copies entries as
they are; what differs is where the files are, per OS (:func:`find_sources`, with the
home and application-data folders injectable for tests). An offer
(:func:`offer_from`) lists the servers a file would add, the names already configured
(skipped, and said so) and the entries Hearth can't use (with the reason); accepting it
writes through :class:`~hearth.tools.mcp_file.McpFile`, which moves their secrets into
the secret store.
"""

from __future__ import annotations

import json
import logging
import os
import platform
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hearth.tools.mcp_config import McpConfigError, parse_config

log = logging.getLogger(__name__)

CLAUDE_DESKTOP = "Claude Desktop"
CURSOR = "Cursor"
LM_STUDIO = "LM Studio"
_MAX_BYTES = 1 << 20  # an mcp.json is a few kB; a bigger file is not one


@dataclass(frozen=True)
class ImportSource:
    app: str
    path: Path


@dataclass(frozen=True)
class ImportOffer:
    """What importing ``source`` would do."""

    source: ImportSource
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()  # already configured here
    unusable: dict[str, str] = field(default_factory=dict)  # name -> why

    def summary(self) -> str:
        """One sentence for the offer: what would come, what wouldn't and why."""
        parts = []
        if self.servers:
            parts.append(f"{len(self.servers)} to import ({', '.join(self.servers)})")
        if self.skipped:
            parts.append(f"skipped, already here: {', '.join(self.skipped)}")
        if self.unusable:
            parts.append("can't use: " + "; ".join(f"{n} ({w})" for n, w in self.unusable.items()))
        return f"{self.source.app} ({self.source.path}): " + ("; ".join(parts) or "no servers")


def candidate_paths(
    system: str | None = None,
    home: Path | None = None,
    appdata: Path | None = None,
) -> list[ImportSource]:
    """Where each app keeps its file on ``system`` (``platform.system()``'s names).

    Claude Desktop: ``~/Library/Application Support/Claude`` on macOS,
    ``%APPDATA%\\Claude`` on Windows, ``~/.config/Claude`` on Linux (its unofficial
    builds). Cursor and LM Studio: ``~/.cursor/mcp.json`` and ``~/.lmstudio/mcp.json``
    everywhere."""
    system = system or platform.system()
    home = home or Path.home()
    claude_name = "claude_desktop_config.json"
    if system == "Darwin":
        claude = home / "Library" / "Application Support" / "Claude" / claude_name
    elif system == "Windows":
        roaming = appdata or Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
        claude = roaming / "Claude" / claude_name
    else:
        claude = home / ".config" / "Claude" / claude_name
    return [
        ImportSource(CLAUDE_DESKTOP, claude),
        ImportSource(CURSOR, home / ".cursor" / "mcp.json"),
        ImportSource(LM_STUDIO, home / ".lmstudio" / "mcp.json"),
    ]


def find_sources(
    system: str | None = None,
    home: Path | None = None,
    appdata: Path | None = None,
) -> list[ImportSource]:
    """The apps' files that exist here (:func:`candidate_paths`)."""
    return [s for s in candidate_paths(system, home, appdata) if s.path.is_file()]


def offer_from(source: ImportSource, configured: Collection[str]) -> ImportOffer:
    """Read ``source`` and sort its servers: new, already configured, unusable.
    Raises ``McpConfigError`` when the file can't be read as an ``mcpServers`` file."""
    servers = _read_servers(source)
    new: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    unusable: dict[str, str] = {}
    for name, raw in servers.items():
        if name in configured:
            skipped.append(name)
            continue
        try:
            parse_config({"mcpServers": {name: raw}}, source.app)
        except McpConfigError as exc:
            unusable[name] = _why(str(exc), source.app, name)
            continue
        new[name] = dict(raw)
    return ImportOffer(source, new, tuple(skipped), unusable)


def offers(
    configured: Collection[str], sources: list[ImportSource] | None = None
) -> list[ImportOffer]:
    """An offer for each found file that has something to import; a file that can't
    be read is logged and left out (it is another app's, not ours to fix)."""
    found: list[ImportOffer] = []
    for source in find_sources() if sources is None else sources:
        try:
            offer = offer_from(source, configured)
        except McpConfigError as exc:
            log.warning("not offering to import from %s: %s", source.app, exc)
            continue
        if offer.servers:
            found.append(offer)
    return found


def _read_servers(source: ImportSource) -> Mapping[str, Any]:
    try:
        if source.path.stat().st_size > _MAX_BYTES:
            raise McpConfigError(f"{source.path} is too big to be an MCP configuration.")
        data = json.loads(source.path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise McpConfigError(f"{source.path} can't be read: {exc.strerror or exc}.") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"{source.path} is not valid JSON: {exc}.") from exc
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{source.path} has no "mcpServers" object.')
    return servers


def _why(message: str, app: str, name: str) -> str:
    """parse_config's sentence without its "where: server 'x'" lead, for a list."""
    lead = f"{app}: server {name!r} "
    return message[len(lead) :].rstrip(".") if message.startswith(lead) else message
