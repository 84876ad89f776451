"""Find GGUF models other apps already downloaded, to import them in place.

One small function per app, each knowing that app's default folders on Linux, macOS
and Windows. Every function takes a :class:`HostEnv` (home folder, OS, environment
variables) so tests can point it at a fake home. Nothing here copies or changes files.
"""

from __future__ import annotations

import configparser
import json
import logging
import os
import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hearth.library.files import (
    group_shards,
    has_gguf_magic,
    iter_gguf_files,
    total_size,
)

log = logging.getLogger(__name__)

OLLAMA_MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model"
OLLAMA_DEFAULT_REGISTRY = "registry.ollama.ai"


@dataclass(frozen=True)
class HostEnv:
    home: Path
    system: str  # platform.system(): "Linux", "Darwin", "Windows"
    env: Mapping[str, str] = field(default_factory=dict)
    system_folders: bool = True  # also look outside home (e.g. /usr/share/ollama)

    @classmethod
    def current(cls) -> HostEnv:
        return cls(Path.home(), platform.system(), dict(os.environ))

    def var(self, name: str) -> Path | None:
        value = self.env.get(name)
        return Path(value).expanduser() if value else None


@dataclass(frozen=True)
class DiscoveredModel:
    app: str  # "lmstudio", "huggingface", "ollama", "gpt4all", "jan"
    name: str  # how that app names it: "publisher/repo/file.gguf", "library/llama3:8b"
    files: tuple[Path, ...]  # shards in order; files[0] is what llama.cpp opens
    size_bytes: int

    @property
    def path(self) -> Path:
        return self.files[0]


def _unique(paths: list[Path | None]) -> list[Path]:
    seen: set[str] = set()
    out = []
    for path in paths:
        if path is None:
            continue
        key = os.path.normcase(str(path))
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out


def _scan_roots(app: str, roots: list[Path]) -> list[DiscoveredModel]:
    """Models under each root, named by their path relative to it."""
    found: list[DiscoveredModel] = []
    seen: set[Path] = set()
    for root in roots:
        if not root.is_dir():
            continue
        for model in group_shards(iter_gguf_files(root)):
            real = model.first.resolve()
            if real in seen or not has_gguf_magic(model.first):
                continue
            seen.add(real)
            rel = model.first.parent.relative_to(root) / model.name
            found.append(DiscoveredModel(app, rel.as_posix(), model.files, total_size(model.files)))
    return found


def _data_home(host: HostEnv) -> Path:
    """Where desktop apps keep data: XDG on Linux, Application Support, AppData."""
    if host.system == "Darwin":
        return host.home / "Library" / "Application Support"
    if host.system == "Windows":
        return host.var("APPDATA") or host.home / "AppData" / "Roaming"
    return host.var("XDG_DATA_HOME") or host.home / ".local" / "share"


# --------------------------------------------------------------------------- LM Studio


def lmstudio_roots(host: HostEnv) -> list[Path]:
    """``~/.lmstudio/models`` (0.3+), ``~/.cache/lm-studio/models`` (older), and a
    custom downloads folder from LM Studio's settings, on every OS."""
    roots: list[Path | None] = [
        host.home / ".lmstudio" / "models",
        host.home / ".cache" / "lm-studio" / "models",
    ]
    for settings in (
        host.home / ".lmstudio" / "settings.json",
        host.home / ".cache" / "lm-studio" / "settings.json",
    ):
        try:
            folder = json.loads(settings.read_text(encoding="utf-8")).get("downloadsFolder")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(folder, str) and folder:
            roots.append(Path(folder).expanduser())
    return _unique(roots)


def find_lmstudio(host: HostEnv) -> list[DiscoveredModel]:
    return _scan_roots("lmstudio", lmstudio_roots(host))


# --------------------------------------------------------------------------- Hugging Face


def hf_cache_roots(host: HostEnv) -> list[Path]:
    """huggingface_hub's cache: ``$HF_HUB_CACHE``, ``$HF_HOME/hub``, else
    ``~/.cache/huggingface/hub`` (``$XDG_CACHE_HOME`` honoured), the same on every OS."""
    explicit = host.var("HF_HUB_CACHE") or host.var("HUGGINGFACE_HUB_CACHE")
    if explicit is not None:
        return [explicit]
    hf_home = host.var("HF_HOME")
    if hf_home is not None:
        return [hf_home / "hub"]
    cache = host.var("XDG_CACHE_HOME") or host.home / ".cache"
    return [cache / "huggingface" / "hub"]


def find_huggingface(host: HostEnv) -> list[DiscoveredModel]:
    """``models--owner--repo/snapshots/<commit>/*.gguf`` (symlinks to ``blobs/``)."""
    found: list[DiscoveredModel] = []
    for root in hf_cache_roots(host):
        if not root.is_dir():
            continue
        for repo_dir in sorted(root.glob("models--*")):
            parts = repo_dir.name.split("--")[1:]
            repo_id = "/".join(parts)
            seen: set[Path] = set()
            names: set[str] = set()
            # Newest snapshot first, so its files get the plain names.
            snapshots = sorted(
                (repo_dir / "snapshots").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True
            )
            for snapshot in snapshots:
                for model in group_shards(iter_gguf_files(snapshot)):
                    blob = model.first.resolve()  # dangling links (partial) fail is_file
                    if blob in seen or not has_gguf_magic(blob):
                        continue
                    seen.add(blob)
                    rel = (model.first.parent.relative_to(snapshot) / model.name).as_posix()
                    name = f"{repo_id}/{rel}"
                    if name in names:
                        name = f"{name}@{snapshot.name[:7]}"
                    names.add(name)
                    size = total_size(p.resolve() for p in model.files)
                    found.append(DiscoveredModel("huggingface", name, model.files, size))
    return found


# --------------------------------------------------------------------------- Ollama


def ollama_roots(host: HostEnv) -> list[Path]:
    """``$OLLAMA_MODELS``, ``~/.ollama/models``; on Linux also the system service's
    ``/usr/share/ollama/.ollama/models``."""
    roots: list[Path | None] = [host.var("OLLAMA_MODELS"), host.home / ".ollama" / "models"]
    if host.system == "Linux" and host.system_folders:
        roots.append(Path("/usr/share/ollama/.ollama/models"))
    return _unique(roots)


def _ollama_name(manifest: Path, manifests_root: Path) -> str:
    parts = manifest.relative_to(manifests_root).parts
    if len(parts) < 3:
        return "/".join(parts)
    *repo, model, tag = parts
    if repo and repo[0] == OLLAMA_DEFAULT_REGISTRY:
        repo = repo[1:]
    return "/".join([*repo, model]) + f":{tag}"


def _ollama_blob(manifest: Path, blobs: Path) -> Path | None:
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log.info("skipping unreadable Ollama manifest %s", manifest)
        return None
    layers = data.get("layers") if isinstance(data, dict) else None
    for layer in layers if isinstance(layers, list) else []:
        if not isinstance(layer, dict) or layer.get("mediaType") != OLLAMA_MODEL_MEDIA_TYPE:
            continue
        digest = str(layer.get("digest", ""))
        for candidate in (blobs / digest.replace(":", "-"), blobs / digest):
            if candidate.is_file():
                return candidate
    return None


def find_ollama(host: HostEnv) -> list[DiscoveredModel]:
    """Models behind Ollama's manifests: the model layer's blob is a plain GGUF file."""
    found: list[DiscoveredModel] = []
    seen: set[Path] = set()
    for root in ollama_roots(host):
        manifests, blobs = root / "manifests", root / "blobs"
        if not manifests.is_dir():
            continue
        for manifest in sorted(p for p in manifests.rglob("*") if p.is_file()):
            blob = _ollama_blob(manifest, blobs)
            if blob is None or blob in seen or not has_gguf_magic(blob):
                continue
            seen.add(blob)
            name = _ollama_name(manifest, manifests)
            found.append(DiscoveredModel("ollama", name, (blob,), total_size([blob])))
    return found


# --------------------------------------------------------------------------- GPT4All


def gpt4all_roots(host: HostEnv) -> list[Path]:
    """GPT4All's data folder (``~/.local/share/nomic.ai/GPT4All`` on Linux,
    ``~/Library/Application Support/nomic.ai/GPT4All`` on macOS,
    ``%LOCALAPPDATA%\\nomic.ai\\GPT4All`` on Windows), plus ``modelPath`` from its ini."""
    if host.system == "Windows":
        base = host.var("LOCALAPPDATA") or host.home / "AppData" / "Local"
    else:
        base = _data_home(host)
    roots: list[Path | None] = [base / "nomic.ai" / "GPT4All"]
    config = (host.var("XDG_CONFIG_HOME") or host.home / ".config") / "nomic.ai" / "GPT4All.ini"
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(config, encoding="utf-8")
        custom = parser.get("General", "modelPath", fallback="").strip()
    except (configparser.Error, OSError, UnicodeDecodeError):
        custom = ""
    if custom:
        roots.append(Path(custom).expanduser())
    return _unique(roots)


def find_gpt4all(host: HostEnv) -> list[DiscoveredModel]:
    return _scan_roots("gpt4all", gpt4all_roots(host))


# --------------------------------------------------------------------------- Jan


def jan_roots(host: HostEnv) -> list[Path]:
    """Jan's models: ``~/jan/models`` (before 0.5), and under its data folder
    (``~/.config/Jan/data`` or ``~/.local/share/Jan/data`` on Linux, Application
    Support on macOS, ``%APPDATA%\\Jan\\data`` on Windows) ``models`` and
    ``llamacpp/models`` (0.6+)."""
    data_folders = [_data_home(host) / "Jan" / "data"]
    if host.system == "Linux":
        data_folders.append((host.var("XDG_CONFIG_HOME") or host.home / ".config") / "Jan" / "data")
    roots: list[Path | None] = [host.home / "jan" / "models"]
    for data in data_folders:
        roots += [data / "models", data / "llamacpp" / "models"]
    return _unique(roots)


def find_jan(host: HostEnv) -> list[DiscoveredModel]:
    return _scan_roots("jan", jan_roots(host))


# --------------------------------------------------------------------------- all

FINDERS: dict[str, Callable[[HostEnv], list[DiscoveredModel]]] = {
    "lmstudio": find_lmstudio,
    "huggingface": find_huggingface,
    "ollama": find_ollama,
    "gpt4all": find_gpt4all,
    "jan": find_jan,
}


def discover_all(host: HostEnv | None = None) -> list[DiscoveredModel]:
    """Every model every known app has on disk; one app failing does not stop the rest."""
    host = host or HostEnv.current()
    found: list[DiscoveredModel] = []
    for app, finder in FINDERS.items():
        try:
            found.extend(finder(host))
        except OSError as exc:
            log.warning("could not look for %s models: %s", app, exc)
    return found
