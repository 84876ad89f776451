"""``hearth mcp ls``: the configured MCP servers, started, with their tools.

Each enabled server in ``mcp.json`` (or ``--config FILE``) is started and asked for its
tools; a server that can't start is named with the reason, and the others still list.
The exit status is 1 when any server failed, so a script can check a configuration.
Values kept in the secret store (``hearth-secret:NAME`` in the file) are resolved to
start the servers, and listed as stored or missing: their values are never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hearth.cli.console import err, out

if TYPE_CHECKING:
    from hearth.tools import McpConfig, McpServerEntry


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = verbs.add_parser("mcp", help="MCP servers: the tools the app's chat can call")
    actions = mcp.add_subparsers(dest="mcp_action", metavar="ACTION", required=True)
    ls = actions.add_parser("ls", help="start each configured MCP server and list its tools")
    ls.add_argument(
        "--config", type=Path, help="an mcp.json (default: the one in the config folder)"
    )
    ls.add_argument(
        "--timeout", type=float, default=30.0, help="seconds a server may take to start"
    )
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(handler=run_ls)


def run_ls(args: argparse.Namespace) -> int:
    from hearth.tools import McpConfigError, load_config

    try:
        config = load_config(args.config)
    except McpConfigError as exc:
        err(str(exc))
        return 2
    if not config.servers:
        out(f"No MCP servers are configured. Add them to {config.path} in the \"mcpServers\" "
            "format (as Claude Desktop, Cursor or LM Studio write it).")  # fmt: skip
        return 0
    return asyncio.run(_list(config, args))


async def _list(config: McpConfig, args: argparse.Namespace) -> int:
    from hearth.config.paths import default_paths
    from hearth.config.secrets import get_secret
    from hearth.tools import McpHost, ToolCallError

    host = McpHost(
        config, secrets=get_secret, log_dir=default_paths().logs_dir, start_timeout=args.timeout
    )
    rows: list[dict[str, object]] = []
    failed = False
    try:
        for entry in config.servers:
            secrets = _secret_states(entry, get_secret)
            if entry.disabled:
                rows.append({"server": entry.name, "disabled": True, "tools": [],
                             "secrets": secrets})  # fmt: skip
                continue
            try:
                tools = await host.tools(entry.name)
            except ToolCallError as exc:
                failed = True
                rows.append({"server": entry.name, "error": str(exc), "tools": [],
                             "secrets": secrets})  # fmt: skip
                continue
            listed = [{"name": t.name, "summary": t.summary} for t in tools]
            rows.append({"server": entry.name, "tools": listed, "secrets": secrets})
    finally:
        await host.close()
    if args.json:
        out(json.dumps(rows, indent=2))
    else:
        _print(config, rows)
    return 1 if failed else 0


def _secret_states(
    entry: McpServerEntry, lookup: Callable[[str], str | None]
) -> list[dict[str, str]]:
    """Each value the entry keeps in the secret store: where, which, and whether the
    store has it ("stored", "missing" or "unreadable"); never the value."""
    from hearth.config.secrets import SecretStoreError
    from hearth.tools.mcp_secrets import referenced

    states: list[dict[str, str]] = []
    for where, values in (("env", entry.env), ("headers", entry.headers)):
        for key, value in values.items():
            name = referenced(value)
            if name is None:
                continue
            try:
                state = "stored" if lookup(name) is not None else "missing"
            except SecretStoreError:
                state = "unreadable"
            states.append({"in": where, "key": key, "secret": name, "state": state})
    return states


_SAID = {"stored": "in the secret store", "missing": "NOT in the secret store",
         "unreadable": "the secret store can't be read"}  # fmt: skip


def _print(config: McpConfig, rows: list[dict[str, object]]) -> None:
    for row in rows:
        entry = config.server(str(row["server"]))
        _print_row(entry, row)
        secrets = row.get("secrets")
        for secret in secrets if isinstance(secrets, list) else []:
            out(f"  {secret['in']} {secret['key']}: {_SAID[secret['state']]} "
                f"({secret['secret']})")  # fmt: skip


def _print_row(entry: McpServerEntry, row: dict[str, object]) -> None:
    if row.get("disabled"):
        out(f"{entry.name}  (turned off)  {entry.describe()}")
        return
    if "error" in row:
        out(f"{entry.name}  FAILED  {entry.describe()}")
        out(f"  {row['error']}")
        return
    tools = row["tools"]
    assert isinstance(tools, list)
    out(f"{entry.name}  {len(tools)} tool{'s' if len(tools) != 1 else ''}  {entry.describe()}")
    width = max((len(str(t["name"])) for t in tools), default=0)
    for tool in tools:
        out(f"  {tool['name']:<{width}}  {tool['summary']}")
