"""The fake Hub's data: repos, files, and the request log entries.

Kept apart from the server in ``fake_hub`` so each stays small; JSON shapes follow what
huggingface_hub 2.x parses (``ModelInfo``, ``RepoSibling``, ``RepoFile``).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def deterministic_blob(size: int, seed: int = 0) -> bytes:
    """``size`` pseudo-random bytes starting with a GGUF magic, the same every run."""
    body = random.Random(seed).randbytes(max(0, size - 4))
    return (b"GGUF" + body)[:size]


@dataclass
class FakeFile:
    data: bytes
    lfs: bool = True

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def pointer(self) -> bytes:
        return (
            f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\n"
            f"size {self.size}\n"
        ).encode()

    @property
    def blob_id(self) -> str:
        return git_blob_id(self.pointer if self.lfs else self.data)

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.blob_id


@dataclass
class FakeRepo:
    repo_id: str
    files: dict[str, FakeFile]
    gated: bool | str = False  # False, "auto" or "manual"
    private: bool = False
    downloads: int = 0
    likes: int = 0
    last_modified: datetime = EPOCH
    tags: list[str] = field(default_factory=lambda: ["gguf", "text-generation"])
    granted: set[str] = field(default_factory=set)  # tokens allowed past gating / privacy
    commits: list[str] = field(default_factory=list)

    @property
    def sha(self) -> str:
        return self.commits[-1]

    def info(self, blobs: bool, fields: list[str] | None = None) -> dict[str, Any]:
        full: dict[str, Any] = {
            "_id": hashlib.md5(self.repo_id.encode()).hexdigest()[:24],
            "id": self.repo_id,
            "modelId": self.repo_id,
            "author": self.repo_id.split("/")[0],
            "sha": self.sha,
            "lastModified": _iso(self.last_modified),
            "createdAt": _iso(EPOCH),
            "private": self.private,
            "gated": self.gated,
            "disabled": False,
            "downloads": self.downloads,
            "likes": self.likes,
            "tags": self.tags,
            "library_name": "gguf" if "gguf" in self.tags else None,
            "siblings": [self._sibling(p, f, blobs) for p, f in sorted(self.files.items())],
        }
        if fields is None:
            return full
        return {k: full[k] for k in ("_id", "id", *fields) if k in full}

    @staticmethod
    def _sibling(path: str, f: FakeFile, blobs: bool) -> dict[str, Any]:
        entry: dict[str, Any] = {"rfilename": path}
        if blobs:
            entry.update(size=f.size, blobId=f.blob_id)
            if f.lfs:
                entry["lfs"] = {"sha256": f.sha256, "size": f.size, "pointerSize": len(f.pointer)}
        return entry

    def tree_entry(self, path: str) -> dict[str, Any]:
        f = self.files.get(path)
        if f is None:  # a folder
            return {"type": "directory", "oid": git_blob_id(path.encode()), "size": 0, "path": path}
        entry: dict[str, Any] = {"type": "file", "oid": f.blob_id, "size": f.size, "path": path}
        if f.lfs:
            entry["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": len(f.pointer)}
        return entry

    def folders(self) -> set[str]:
        out = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return out


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names

    @property
    def range_start(self) -> int | None:
        value = self.headers.get("range", "")
        if not value.startswith("bytes="):
            return None
        return int(value[len("bytes=") :].split("-")[0])
