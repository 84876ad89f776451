"""Standing permissions: "always allow tool T of server S", kept in the config folder.

The chat asks before every tool call; a user who chose "Always allow this tool of this
server" is not asked again for that one tool of that one server (never a whole server,
never every tool: the complaint about one global switch, jan#8449). Settings → Tools
lists them and revokes them.

The file (``tool-permissions.json``) is small and replaced atomically. It is read again
whenever it changed on disk, so a permission revoked in Settings holds at the chat's next
call even where each holds its own ``ToolPermissions``. A file that can't be read or
parsed allows nothing (and is logged): a damaged file must never widen what runs.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hearth.config.atomic import write_text_atomic
from hearth.config.paths import default_paths

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
FILE_NAME = "tool-permissions.json"


class ToolPermissionsError(OSError):
    """The permissions file could not be written; the message says where and why."""


@dataclass(frozen=True)
class Permission:
    """One standing permission: ``tool`` of ``server`` runs without asking."""

    server: str
    tool: str
    granted: float
    """When it was given, in seconds since the epoch (``time.time()``)."""


def default_permissions_path() -> Path:
    return default_paths().config_dir / FILE_NAME


class ToolPermissions:
    """The standing permissions in ``path`` (the file need not exist yet)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_permissions_path()
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._entries: tuple[Permission, ...] = ()

    def allows(self, server: str, tool: str) -> bool:
        return any(p.server == server and p.tool == tool for p in self.entries())

    def entries(self) -> list[Permission]:
        """Every standing permission, oldest first."""
        with self._lock:
            return list(self._current())

    def allow(self, server: str, tool: str) -> Permission:
        """Allow ``tool`` of ``server`` from now on (granting it again keeps its date)."""
        with self._lock:
            current = self._current()
            for permission in current:
                if permission.server == server and permission.tool == tool:
                    return permission
            permission = Permission(server, tool, time.time())
            self._write((*current, permission))
            return permission

    def revoke(self, server: str, tool: str) -> bool:
        """Ask again before ``tool`` of ``server`` runs; False if it wasn't allowed."""
        with self._lock:
            current = self._current()
            kept = tuple(p for p in current if (p.server, p.tool) != (server, tool))
            if len(kept) == len(current):
                return False
            self._write(kept)
            return True

    def _current(self) -> tuple[Permission, ...]:
        """The file's permissions, read again only when it changed (caller holds the lock)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self._stamp, self._entries = None, ()
            return ()
        except OSError as exc:
            log.warning("tool permissions %s can't be read (%s): none apply", self.path, exc)
            return ()
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            self._entries = _read(self.path)
            self._stamp = stamp
        return self._entries

    def _write(self, entries: tuple[Permission, ...]) -> None:
        payload = {
            "schema_version": SCHEMA_VERSION,
            "permissions": [
                {"server": p.server, "tool": p.tool, "granted": p.granted} for p in entries
            ],
        }
        try:
            write_text_atomic(self.path, json.dumps(payload, indent=2, ensure_ascii=False))
        except OSError as exc:
            raise ToolPermissionsError(
                f"Cannot save the tool permissions in {self.path}: {exc.strerror or exc}"
            ) from None
        self._stamp = None  # read back on the next look: the file is the one owner
        self._entries = entries


def _read(path: Path) -> tuple[Permission, ...]:
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
        if raw["schema_version"] != SCHEMA_VERSION:
            raise ValueError(f"schema version {raw['schema_version']!r}")
        return tuple(
            Permission(str(item["server"]), str(item["tool"]), float(item["granted"]))
            for item in raw["permissions"]
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring the tool permissions in %s (%r): none apply", path, exc)
        return ()
