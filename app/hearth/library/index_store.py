"""The library's small persistent index: extra folders, in-place imports, hidden files.

Stored as JSON in the config folder and replaced atomically (write a temporary file in
the same folder, fsync, rename), so a crash leaves either the old or the new index. A
damaged index is set aside (``library.json.broken``) and the library starts empty
rather than refusing to open; the reason is kept in ``LibraryIndex.load_error``.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hearth.config.atomic import write_text_atomic

log = logging.getLogger(__name__)

INDEX_FILE_NAME = "library.json"
INDEX_VERSION = 1


@dataclass
class ImportEntry:
    path: str  # absolute path of the file (first shard) as the user chose it
    name: str | None = None
    origin: str | None = None  # "ollama", "lmstudio", ... or None for a manual import

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "origin": self.origin}

    @classmethod
    def from_json(cls, data: object) -> ImportEntry | None:
        if not isinstance(data, dict) or not isinstance(data.get("path"), str):
            return None
        name, origin = data.get("name"), data.get("origin")
        return cls(
            path=data["path"],
            name=name if isinstance(name, str) else None,
            origin=origin if isinstance(origin, str) else None,
        )


@dataclass
class LibraryIndex:
    folders: list[str] = field(default_factory=list)
    imports: list[ImportEntry] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    load_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": INDEX_VERSION,
            "folders": list(self.folders),
            "imports": [entry.to_json() for entry in self.imports],
            "hidden": list(self.hidden),
        }

    @classmethod
    def from_json(cls, data: object) -> LibraryIndex:
        if not isinstance(data, dict):
            raise ValueError("the index is not a JSON object")
        version = data.get("version")
        if not isinstance(version, int) or version > INDEX_VERSION:
            raise ValueError(f"unsupported index version {version!r}")

        def strings(key: str) -> list[str]:
            items = data.get(key, [])
            return [s for s in items if isinstance(s, str)] if isinstance(items, list) else []

        raw_imports = data.get("imports", [])
        imports = (
            [
                entry
                for entry in (ImportEntry.from_json(item) for item in (raw_imports or []))
                if entry is not None
            ]
            if isinstance(raw_imports, list)
            else []
        )
        return cls(folders=strings("folders"), imports=imports, hidden=strings("hidden"))


def load_index(path: Path) -> LibraryIndex:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LibraryIndex()
    except OSError as exc:
        log.warning("could not read the library index %s: %s", path, exc)
        return LibraryIndex(load_error=f"Could not read {path}: {exc.strerror or exc}")
    try:
        return LibraryIndex.from_json(json.loads(text))
    except ValueError as exc:
        broken = path.with_name(path.name + ".broken")
        try:
            os.replace(path, broken)
        except OSError:
            broken = path
        log.warning("library index %s is damaged (%s); set aside as %s", path, exc, broken)
        return LibraryIndex(
            load_error=(
                f"The library index was damaged ({exc}) and was set aside as {broken}; "
                "re-add extra folders and imported models."
            )
        )


def save_index(path: Path, index: LibraryIndex) -> None:
    """Atomically replace ``path`` with ``index``."""
    write_text_atomic(path, json.dumps(index.to_json(), indent=2, ensure_ascii=False) + "\n")
