"""The local model library: Hearth's models folder, extra folders, in-place imports.

Nothing is copied: extra folders are scanned where they are, and imported files stay
where they are (an Ollama blob, a file in LM Studio's folder). Each listing rescans the
folders and reads GGUF headers (cached by path, size and mtime). A file that is not a
usable GGUF still appears, with ``error`` set, and never stops the rest from listing.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from hearth.config.paths import AppPaths, default_paths
from hearth.library.errors import InvalidModelFileError, LibraryError
from hearth.library.files import ModelFiles, group_shards, iter_gguf_files, sibling_shards
from hearth.library.gguf_metadata import GgufMetadata, merge_shards, read_metadata
from hearth.library.index_store import (
    INDEX_FILE_NAME,
    ImportEntry,
    LibraryIndex,
    load_index,
    save_index,
)
from hearth.library.projectors import projector_beside

log = logging.getLogger(__name__)


class ModelSource(str, Enum):
    HEARTH = "hearth"  # in Hearth's own models folder: Hearth may delete it
    FOLDER = "folder"  # in a folder the user added
    IMPORTED = "imported"  # a single file imported in place


@dataclass(frozen=True)
class LocalModel:
    id: str  # stable reference: "owner/repo/file.gguf", "folder/file.gguf", import name
    name: str  # display name
    files: tuple[Path, ...]  # shards in order; files[0] is what llama.cpp opens
    source: ModelSource
    size_bytes: int
    metadata: GgufMetadata | None
    error: str | None = None  # why the file is unusable, when it is
    origin: str | None = None  # app it was imported from: "ollama", "lmstudio", ...
    projector: Path | None = None  # the vision projector beside it (core.projector_pairing)

    @property
    def path(self) -> Path:
        return self.files[0]

    @property
    def ok(self) -> bool:
        return self.error is None and self.metadata is not None

    @property
    def kind(self) -> str:
        """``general.type``: "model", "adapter", "mmproj" (vision projector)..."""
        value = self.metadata.kv.get("general.type") if self.metadata else None
        return value if isinstance(value, str) else "model"


def _paired(model: LocalModel) -> LocalModel:
    """``model`` with the projector in its folder that pairs with it, if there is one."""
    if not model.ok or model.kind != "model":
        return model
    found = projector_beside(model.path)
    return replace(model, projector=found) if found is not None else model


def _key(path: Path) -> str:
    try:
        return os.path.normcase(str(path.resolve()))
    except OSError:
        return os.path.normcase(str(path.absolute()))


def _is_within(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


class Library:
    """Lists, imports and deletes local models. Safe to share between threads."""

    def __init__(self, paths: AppPaths | None = None) -> None:
        self.paths = paths or default_paths()
        self.index_file = self.paths.config_dir / INDEX_FILE_NAME
        self._lock = threading.RLock()
        self._meta_cache: dict[tuple[str, int, int], GgufMetadata | InvalidModelFileError] = {}
        self._index_problem: str | None = None

    def _load(self) -> LibraryIndex:
        index = load_index(self.index_file)
        if index.load_error is not None:
            self._index_problem = index.load_error
        return index

    @property
    def models_dir(self) -> Path:
        return self.paths.models_dir

    # ------------------------------------------------------------------ folders
    def folders(self) -> list[Path]:
        """Extra folders the user added (Hearth's own models folder is always scanned)."""
        return [Path(f) for f in self._load().folders]

    def add_folder(self, folder: Path) -> Path:
        folder = Path(folder).expanduser()
        if not folder.is_dir():
            raise LibraryError(f"{folder} is not a folder; pick a folder that holds .gguf files.")
        folder = folder.resolve()
        with self._lock:
            index = self._load()
            keys = {_key(Path(f)) for f in index.folders}
            if _key(folder) not in keys and not _is_within(folder, self.models_dir):
                index.folders.append(str(folder))
                save_index(self.index_file, index)
        return folder

    def remove_folder(self, folder: Path) -> None:
        with self._lock:
            index = self._load()
            index.folders = [f for f in index.folders if _key(Path(f)) != _key(Path(folder))]
            save_index(self.index_file, index)

    # ------------------------------------------------------------------ listing
    def index_problem(self) -> str | None:
        """Why the saved index could not be used, if it could not (else None)."""
        self._load()
        return self._index_problem

    def models(self) -> list[LocalModel]:
        """Every model in the library, each once; broken files included with ``error``."""
        with self._lock:
            index = self._load()
        hidden = {_key(Path(p)) for p in index.hidden}
        found: list[LocalModel] = []
        seen: set[str] = set()

        def add(model: LocalModel) -> None:
            key = _key(model.path)
            if key in seen or key in hidden:
                return
            seen.add(key)
            taken = {m.id for m in found}
            if model.id in taken:
                n = 2
                while f"{model.id}#{n}" in taken:
                    n += 1
                model = replace(model, id=f"{model.id}#{n}")
            found.append(model)

        for group in self._scan(self.models_dir):
            rel = (group.first.parent.relative_to(self.models_dir) / group.name).as_posix()
            add(self._describe(rel, group, ModelSource.HEARTH))
        for entry in index.imports:
            add(self._describe_import(entry))
        for folder in index.folders:
            root = Path(folder)
            for group in self._scan(root):
                rel = (group.first.parent.relative_to(root) / group.name).as_posix()
                add(self._describe(f"{root.name}/{rel}", group, ModelSource.FOLDER))
        return [_paired(m) for m in found]

    def get(self, ref: str) -> LocalModel | None:
        """Find a model by id (with or without .gguf), display name, file name or path."""
        models = self.models()
        for match in (
            lambda m: m.id == ref,
            lambda m: m.name == ref,
            lambda m: m.path.name == ref,
            lambda m: m.id.removesuffix(".gguf") == ref,  # what the worker calls it
            lambda m: _key(m.path) == _key(Path(ref).expanduser()),
        ):
            hits = [m for m in models if match(m)]
            if len(hits) == 1:
                return hits[0]
        return None

    def _scan(self, root: Path) -> list[ModelFiles]:
        if not root.is_dir():
            return []
        return group_shards(iter_gguf_files(root))

    def _describe(
        self,
        model_id: str,
        group: ModelFiles,
        source: ModelSource,
        *,
        name: str | None = None,
        origin: str | None = None,
    ) -> LocalModel:
        metadata: GgufMetadata | None = None
        error: str | None = None
        size = 0
        try:
            size = sum(p.stat().st_size for p in group.files)
            if not group.complete:
                raise InvalidModelFileError(
                    f"{group.name} is split into {group.expected_shards} files but only "
                    f"{len(group.files)} are here; download the missing parts."
                )
            metadata = self._metadata(group.files)
        except InvalidModelFileError as exc:
            error = exc.message
        except OSError as exc:
            error = f"Could not read {group.first}: {exc.strerror or exc}"
        return LocalModel(
            model_id, name or model_id, group.files, source, size, metadata, error, origin
        )

    def _describe_import(self, entry: ImportEntry) -> LocalModel:
        path = Path(entry.path)
        group = sibling_shards(path) if path.exists() else ModelFiles(path.name, (path,))
        name = entry.name or group.name
        if not path.exists():
            return LocalModel(
                name,
                name,
                (path,),
                ModelSource.IMPORTED,
                0,
                None,
                f"The imported file {path} is gone (moved or deleted).",
                entry.origin,
            )
        return self._describe(name, group, ModelSource.IMPORTED, name=name, origin=entry.origin)

    def _metadata(self, files: Iterable[Path]) -> GgufMetadata:
        parts = []
        for path in files:
            stat = path.stat()
            cache_key = (str(path), stat.st_size, stat.st_mtime_ns)
            cached = self._meta_cache.get(cache_key)
            if cached is None:
                try:
                    cached = read_metadata(path)
                except InvalidModelFileError as exc:
                    cached = exc
                self._meta_cache[cache_key] = cached
            if isinstance(cached, InvalidModelFileError):
                raise cached
            parts.append(cached)
        return parts[0] if len(parts) == 1 else merge_shards(parts)

    # ------------------------------------------------------------------ import
    def import_in_place(
        self, path: Path, *, name: str | None = None, origin: str | None = None
    ) -> LocalModel:
        """Add a file that stays where it is. A file already in the library is returned
        as is; a file that is not a usable GGUF raises :class:`InvalidModelFileError`."""
        path = Path(path).expanduser().absolute()
        if not path.is_file():
            raise InvalidModelFileError(f"Model file not found: {path}", param=str(path))
        group = sibling_shards(path)
        if not group.complete:
            raise InvalidModelFileError(
                f"{group.name} is split into {group.expected_shards} files but only "
                f"{len(group.files)} are next to {path.name}; download the missing parts.",
                param=str(path),
            )
        path = group.first  # a split model is entered by its first shard
        self._metadata(group.files)
        with self._lock:
            index = self._load()
            key = _key(path)
            if key in {_key(Path(h)) for h in index.hidden}:
                index.hidden = [h for h in index.hidden if _key(Path(h)) != key]
                save_index(self.index_file, index)
            existing = next((m for m in self.models() if _key(m.path) == key), None)
            if existing is not None:
                return existing
            taken = {m.id for m in self.models()}
            base = name or group.name
            unique, n = base, 2
            while unique in taken:
                unique, n = f"{base}#{n}", n + 1
            index = self._load()
            index.imports.append(ImportEntry(str(path), unique, origin))
            save_index(self.index_file, index)
        log.info("imported %s in place as %s", path, unique)
        model = next((m for m in self.models() if _key(m.path) == key), None)
        if model is None:
            raise LibraryError(f"Could not add {path} to the library.")
        return model

    def forget(self, model: LocalModel) -> None:
        """Drop an in-place import from the library; the file stays."""
        with self._lock:
            index = self._load()
            key = _key(model.path)
            index.imports = [e for e in index.imports if _key(Path(e.path)) != key]
            save_index(self.index_file, index)

    # ------------------------------------------------------------------ delete
    def delete(self, model: LocalModel, *, delete_files: bool = False) -> list[Path]:
        """Remove a model from the library; returns the files deleted.

        Files in Hearth's models folder are deleted. An in-place import is only
        forgotten unless ``delete_files``; a model in an added folder is hidden unless
        ``delete_files``. Ollama's blobs are never deleted here (Ollama still uses them).
        """
        if model.source is ModelSource.HEARTH:
            return self._unlink_owned(model)
        if delete_files and model.origin == "ollama":
            raise LibraryError(
                f"{model.name} belongs to Ollama; remove it with `ollama rm` so Ollama's "
                "index stays consistent. Hearth only forgot its entry."
            )
        deleted = self._unlink(model.files) if delete_files else []
        if model.source is ModelSource.IMPORTED:
            self.forget(model)
        elif not delete_files:
            with self._lock:
                index = self._load()
                index.hidden.append(str(model.path.absolute()))
                save_index(self.index_file, index)
        return deleted

    def _unlink_owned(self, model: LocalModel) -> list[Path]:
        root = self.models_dir.resolve()
        for path in model.files:
            if not _is_within(path.parent, root):
                raise LibraryError(f"Refusing to delete {path}: it is outside {root}.")
        deleted = self._unlink(model.files)
        for path in model.files:  # drop owner/repo folders left empty
            folder = path.parent
            while folder.resolve() != root and _is_within(folder, root):
                try:
                    folder.rmdir()
                except OSError:
                    break
                folder = folder.parent
        return deleted

    @staticmethod
    def _unlink(files: Iterable[Path]) -> list[Path]:
        deleted = []
        for path in files:
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise LibraryError(f"Could not delete {path}: {exc.strerror or exc}") from exc
            deleted.append(path)
        return deleted
