"""What Settings → Tools shows, read in one go on a worker thread: ``mcp.json``'s
servers, which of their secrets the store lacks (the keyring can block), the secrets the
file still holds in plain text, and the other apps' servers it could import."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hearth.tools import McpConfig, McpConfigError
from hearth.tools.mcp_config import parse_config
from hearth.tools.mcp_file import McpFile
from hearth.tools.mcp_import import ImportOffer, ImportSource, offers
from hearth.tools.mcp_secrets import plain_secrets
from hearth.ui.pages.settings.tools_runs import missing_secrets


@dataclass
class Listing:
    """What a refresh read from disk (on a thread)."""

    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    config: McpConfig = field(default_factory=McpConfig)
    offers: list[ImportOffer] = field(default_factory=list)
    missing: dict[str, list[str]] = field(default_factory=dict)  # name -> secrets absent
    plain: list[str] = field(default_factory=list)  # "server: KEY" of secrets in the file
    error: str = ""


def read_listing(
    mcp_file: McpFile, import_sources: Callable[[], list[ImportSource]] | None
) -> Listing:
    """The file, its servers and the import offers (blocking: on a thread)."""
    try:
        servers = mcp_file.servers()
        config = parse_config({"mcpServers": servers}, mcp_file.path.name)
    except McpConfigError as exc:
        return Listing(error=f"{exc} Fix it with Edit as JSON.")
    sources = import_sources() if import_sources is not None else None
    missing = missing_secrets(servers, mcp_file.secret)
    found = offers(servers.keys(), sources)
    return Listing(servers, config, found, missing, plain_secrets(servers))
