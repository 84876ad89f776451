"""The state of an unfinished download: ``<dest>.part`` plus ``<dest>.part.json``.

The sidecar is written once, atomically, before the first byte, and describes what the
``.part`` file is a prefix of (url, etag, commit, size, expected checksum). The number of
bytes already downloaded is the ``.part`` file's size; it is never stored, so a
``kill -9`` at any moment leaves a consistent pair.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hearth.config.atomic import write_text_atomic

log = logging.getLogger(__name__)

SIDECAR_VERSION = 1
PART_SUFFIX = ".part"
SIDECAR_SUFFIX = ".part.json"


def part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + PART_SUFFIX)


def sidecar_path(dest: Path) -> Path:
    return dest.with_name(dest.name + SIDECAR_SUFFIX)


def dest_from_sidecar(path: Path) -> Path:
    if not path.name.endswith(SIDECAR_SUFFIX):
        raise ValueError(f"{path} is not a download sidecar")
    return path.with_name(path.name[: -len(SIDECAR_SUFFIX)])


@dataclass(frozen=True)
class Sidecar:
    """What a ``.part`` file is a prefix of."""

    repo_id: str
    filename: str
    revision: str
    url: str
    etag: str
    commit: str | None
    size: int
    sha256: str | None  # LFS sha256 of the whole file
    git_oid: str | None = None  # git blob id, used only when there is no LFS sha256
    version: int = SIDECAR_VERSION

    def matches(self, other: Sidecar) -> bool:
        """Same remote content: the .part of one is a valid prefix for the other."""
        return (
            self.etag == other.etag
            and self.size == other.size
            and self.sha256 == other.sha256
            and self.git_oid == other.git_oid
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: object) -> Sidecar:
        if not isinstance(raw, dict):
            raise ValueError("sidecar is not a JSON object")
        if raw.get("version") != SIDECAR_VERSION:
            raise ValueError(f"unsupported sidecar version {raw.get('version')!r}")
        strs = ("repo_id", "filename", "revision", "url", "etag")
        if not all(isinstance(raw.get(k), str) and raw.get(k) for k in strs):
            raise ValueError("sidecar lacks one of " + ", ".join(strs))
        size = raw.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError("sidecar size is not a non-negative integer")
        for key in ("commit", "sha256", "git_oid"):
            if raw.get(key) is not None and not isinstance(raw.get(key), str):
                raise ValueError(f"sidecar {key} is not a string")
        return cls(
            repo_id=raw["repo_id"],
            filename=raw["filename"],
            revision=raw["revision"],
            url=raw["url"],
            etag=raw["etag"],
            commit=raw.get("commit"),
            size=size,
            sha256=raw.get("sha256"),
            git_oid=raw.get("git_oid"),
        )


def write_sidecar(dest: Path, sidecar: Sidecar) -> None:
    """Write ``<dest>.part.json`` atomically (temp file, fsync, rename)."""
    write_text_atomic(sidecar_path(dest), json.dumps(sidecar.to_json(), indent=2, sort_keys=True))


def read_sidecar(dest: Path) -> Sidecar | None:
    """The sidecar for ``dest``, or None if missing or unreadable (then it is stale)."""
    path = sidecar_path(dest)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return Sidecar.from_json(json.loads(text))
    except (ValueError, TypeError) as exc:
        log.warning("ignoring unreadable download state %s: %s", path, exc)
        return None


def remove_partial(dest: Path) -> None:
    """Delete ``<dest>.part`` and its sidecar (the .part first: a sidecar alone is harmless)."""
    part_path(dest).unlink(missing_ok=True)
    sidecar_path(dest).unlink(missing_ok=True)


def find_sidecars(root: Path) -> list[Path]:
    """Every download sidecar under ``root`` (for resuming after a restart)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*" + SIDECAR_SUFFIX) if p.is_file())
