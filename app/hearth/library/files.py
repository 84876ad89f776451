"""Finding GGUF files in folders and grouping split shards into one model."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

GGUF_SUFFIX = ".gguf"
GGUF_MAGIC = b"GGUF"
# llama.cpp's gguf-split names: model-00001-of-00003.gguf
SHARD_RE = re.compile(r"^(?P<base>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class ShardName:
    base: str  # name without the -0000i-of-0000N part, with .gguf
    index: int  # 1-based
    count: int


def parse_shard_name(name: str) -> ShardName | None:
    match = SHARD_RE.match(name)
    if match is None:
        return None
    index, count = int(match.group("index")), int(match.group("count"))
    if not 1 <= index <= count:
        return None
    return ShardName(match.group("base") + GGUF_SUFFIX, index, count)


@dataclass(frozen=True)
class ModelFiles:
    """One model on disk: a single file, or the shards of a split model in order."""

    name: str  # file name, or the shared base name of the shards
    files: tuple[Path, ...]
    expected_shards: int = 1

    @property
    def complete(self) -> bool:
        return len(self.files) == self.expected_shards

    @property
    def first(self) -> Path:
        return self.files[0]


def group_shards(paths: Iterable[Path]) -> list[ModelFiles]:
    """Group ``-0000i-of-0000N`` shards (per folder) into one model; others stay single."""
    singles: list[ModelFiles] = []
    groups: dict[tuple[Path, str, int], dict[int, Path]] = {}
    for path in paths:
        shard = parse_shard_name(path.name)
        if shard is None:
            singles.append(ModelFiles(path.name, (path,)))
            continue
        groups.setdefault((path.parent, shard.base, shard.count), {})[shard.index] = path
    for (_folder, base, count), members in groups.items():
        ordered = tuple(members[i] for i in sorted(members))
        singles.append(ModelFiles(base, ordered, count))
    return sorted(singles, key=lambda m: str(m.first))


def sibling_shards(path: Path) -> ModelFiles:
    """The whole split model that ``path`` (any shard) belongs to, as far as it exists."""
    shard = parse_shard_name(path.name)
    if shard is None:
        return ModelFiles(path.name, (path,))
    stem = path.name[: -len("-00001-of-00001.gguf")]
    suffix = path.name[-len(GGUF_SUFFIX) :]
    files = []
    for index in range(1, shard.count + 1):
        candidate = path.with_name(f"{stem}-{index:05d}-of-{shard.count:05d}{suffix}")
        if candidate.is_file():
            files.append(candidate)
    return ModelFiles(shard.base, tuple(files), shard.count)


def iter_gguf_files(root: Path, *, max_depth: int = 8) -> Iterator[Path]:
    """Every ``*.gguf`` file under ``root`` (symlinked files count, symlinked folders are
    not followed, hidden folders are skipped); unreadable folders are logged and skipped."""
    root_depth = len(root.parts)

    def on_error(exc: OSError) -> None:
        log.info("skipping unreadable folder %s: %s", exc.filename, exc.strerror)

    for folder, dirs, names in os.walk(root, onerror=on_error):
        here = Path(folder)
        if len(here.parts) - root_depth >= max_depth:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.lower().endswith(GGUF_SUFFIX) and not name.startswith("."):
                path = here / name
                if path.is_file():
                    yield path


def has_gguf_magic(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == GGUF_MAGIC
    except OSError:
        return False


def total_size(files: Iterable[Path]) -> int:
    size = 0
    for path in files:
        try:
            size += path.stat().st_size
        except OSError:
            continue
    return size
