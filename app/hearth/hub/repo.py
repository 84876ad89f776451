"""A repo's GGUF files: sizes, checksums, quantization types, split shards grouped.

Blocking (huggingface_hub is synchronous): call it from a worker thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath

from huggingface_hub.hf_api import RepoSibling

from hearth.core.projector_pairing import is_projector, pair_projector
from hearth.hub.client import hub_endpoint, keyring_token, make_api, sends_token, translate_hf_error
from hearth.hub.errors import UnsafePathError
from hearth.hub.names import (
    ShardName,
    is_gguf,
    parse_quant,
    parse_shard,
    safe_relative_path,
    validate_repo_id,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GgufFile:
    """One ``.gguf`` file of a repo (a whole model, or one shard of a split model)."""

    path: str  # repo-relative, already validated by safe_relative_path
    size: int | None
    sha256: str | None  # LFS sha256 of the content; None for a non-LFS file
    blob_id: str | None  # git blob id
    quant: str | None
    shard: ShardName | None


@dataclass(frozen=True)
class GgufModel:
    """A downloadable model: one file, or every shard of a split file in order."""

    name: str  # repo-relative path without the shard suffix and extension
    quant: str | None
    files: tuple[GgufFile, ...]
    shard_count: int

    @property
    def is_split(self) -> bool:
        return self.shard_count > 1

    @property
    def complete(self) -> bool:
        """Every shard 1..N is present in the repo."""
        return len(self.files) == self.shard_count

    @property
    def total_size(self) -> int | None:
        sizes = [f.size for f in self.files]
        if any(s is None for s in sizes):
            return None
        return sum(s for s in sizes if s is not None)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files)


@dataclass(frozen=True)
class RepoListing:
    repo_id: str
    commit: str | None
    gated: bool
    gated_mode: str | None
    private: bool
    last_modified: datetime | None
    models: tuple[GgufModel, ...]  # projectors are not among them
    rejected: tuple[str, ...]  # file names refused as unsafe (shown, never downloaded)
    projectors: tuple[GgufFile, ...] = ()  # ``mmproj-*.gguf``: the repo's models see images

    @property
    def vision(self) -> bool:
        """The repo has a vision projector (Discover's "Vision" chip)."""
        return bool(self.projectors)

    def projector_for(self, model: GgufModel) -> GgufFile | None:
        """The projector to download with ``model``: the one the Library will pair with
        it once both are on disk (``core.projector_pairing``: its folder, a name sharing
        its stem, F16 unless only a quantized one exists)."""
        by_path = {PurePosixPath(f.path): f for f in self.projectors}
        chosen = pair_projector(PurePosixPath(model.files[0].path), list(by_path))
        return by_path[chosen] if chosen is not None else None

    def find(self, quant: str) -> list[GgufModel]:
        """Models whose quantization type is ``quant`` (case-insensitive)."""
        wanted = quant.upper()
        return [m for m in self.models if m.quant == wanted]

    @property
    def quants(self) -> list[str]:
        return sorted({m.quant for m in self.models if m.quant})


def group_gguf_files(files: list[GgufFile]) -> tuple[GgufModel, ...]:
    """Group split shards (``-00001-of-0000N``) into one model each; keep others single."""
    singles: list[GgufModel] = []
    groups: dict[tuple[str, int], list[GgufFile]] = {}
    for f in files:
        if f.shard is None:
            name = f.path[: -len(".gguf")] if is_gguf(f.path) else f.path
            singles.append(GgufModel(name=name, quant=f.quant, files=(f,), shard_count=1))
            continue
        folder = f.path.rsplit("/", 1)[0] + "/" if "/" in f.path else ""
        groups.setdefault((folder + f.shard.base, f.shard.count), []).append(f)
    split: list[GgufModel] = []
    for (name, count), members in groups.items():
        by_index: dict[int, GgufFile] = {}
        for m in members:
            assert m.shard is not None
            by_index.setdefault(m.shard.index, m)
        ordered = tuple(by_index[i] for i in sorted(by_index))
        split.append(GgufModel(name=name, quant=ordered[0].quant, files=ordered, shard_count=count))
        if len(ordered) != count:
            missing = sorted(set(range(1, count + 1)) - set(by_index))
            log.warning("split model %s is missing shards %s", name, missing)
    return tuple(sorted(singles + split, key=lambda m: m.name.lower()))


def gguf_files_from_siblings(siblings: list[RepoSibling]) -> tuple[list[GgufFile], list[str]]:
    """Typed GGUF entries from ``model_info(files_metadata=True).siblings``, plus the
    names refused as unsafe."""
    files: list[GgufFile] = []
    rejected: list[str] = []
    for sib in siblings:
        name = sib.rfilename
        if not is_gguf(name):
            continue
        try:
            safe = safe_relative_path(name).as_posix()
        except UnsafePathError as exc:
            log.warning("skipping a file with an unsafe name: %s", exc)
            rejected.append(name)
            continue
        lfs = sib.lfs
        files.append(
            GgufFile(
                path=safe,
                size=lfs.size if lfs is not None else sib.size,
                sha256=lfs.sha256 if lfs is not None else None,
                blob_id=sib.blob_id,
                quant=parse_quant(safe),
                shard=parse_shard(safe.rsplit("/", 1)[-1]),
            )
        )
    return files, rejected


def list_repo_gguf(
    repo_id: str,
    *,
    revision: str | None = None,
    endpoint: str | None = None,
    token: str | None = None,
) -> RepoListing:
    """Every GGUF model in ``repo_id`` with sizes, sha256, quant types and grouped shards."""
    validate_repo_id(repo_id)
    base = hub_endpoint(endpoint)
    token = token if token is not None else keyring_token()
    api = make_api(base, token)
    try:
        info = api.model_info(repo_id, revision=revision, files_metadata=True)
    except Exception as exc:
        raise translate_hf_error(exc, repo_id, has_token=sends_token(token), endpoint=base) from exc
    files, rejected = gguf_files_from_siblings(list(info.siblings or []))
    projectors = tuple(f for f in files if is_projector(f.path))
    files = [f for f in files if not is_projector(f.path)]
    gated = info.gated
    return RepoListing(
        repo_id=info.id,
        commit=info.sha,
        gated=bool(gated),
        gated_mode=gated if isinstance(gated, str) else None,
        private=bool(info.private),
        last_modified=info.last_modified,
        models=group_gguf_files(files),
        rejected=tuple(rejected),
        projectors=projectors,
    )
