"""User settings: a small versioned JSON file, written atomically.

Secrets never live here (they go to the OS keyring, or to secrets.json when chosen).
Unknown keys from newer versions are kept, and a corrupt file is set aside rather than
silently lost.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from hearth.config.atomic import write_text_atomic
from hearth.config.launch import DEFAULT_PORT

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1


@dataclass
class Settings:
    schema_version: int = SCHEMA_VERSION
    last_model_path: str | None = None
    recent_models: list[str] = field(default_factory=list)
    context_size: int = 4096
    parallel_slots: int = 4
    gpu_layers: int = -1
    threads: int = 0
    temperature: float = 0.7
    max_tokens: int = 1024
    # Downloads (read by the Downloads page): files at once, and bytes/s (0: no limit).
    download_concurrency: int = 2
    bandwidth_limit_bps: int = 0
    theme: str = "system"  # "light", "dark" or "system"
    first_run_done: bool = False
    # Where secrets live: "keyring" (the OS keyring) or "file" (config/secrets).
    secret_store: str = "keyring"
    # Window state: QMainWindow.saveGeometry() as base64, splitter sizes by name.
    window_geometry: str | None = None
    splitter_sizes: dict[str, list[int]] = field(default_factory=dict)
    # Load dialog choices per model, keyed by the model's absolute path.
    model_load_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The public endpoint (server panel).
    endpoint_enabled: bool = False
    endpoint_port: int = DEFAULT_PORT
    endpoint_lan: bool = False
    endpoint_require_key: bool = False  # loopback clients need an API key too
    # Settings → Models: what the worker is started with (None: the worker's default).
    max_models: int | None = None  # models loaded at once (--max-models)
    memory_budget_gib: float | None = None  # their memory (--memory-budget); None: auto
    jit_ttl_minutes: float | None = None  # idle time before a just-in-time model unloads
    prompt_cache_enabled: bool = True
    prompt_cache_folder: str | None = None  # None: the data folder's prompt-cache
    prompt_cache_max_gib: float | None = None  # its size budget (--prompt-cache-max); auto
    extra: dict[str, Any] = field(default_factory=dict)

    def remember_model(self, path: Path, keep: int = 10) -> None:
        text = str(path)
        self.last_model_path = text
        self.recent_models = [text, *[p for p in self.recent_models if p != text][: keep - 1]]


def load_settings(path: Path) -> Settings:
    if not path.exists():
        return Settings()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("settings file is not a JSON object")
    except (OSError, ValueError) as exc:
        backup = path.with_suffix(".corrupt.json")
        log.warning("settings file %s is unreadable (%s); moved to %s", path, exc, backup)
        os.replace(path, backup)
        return Settings()
    known = {f.name for f in fields(Settings)}
    settings = Settings(**{k: v for k, v in raw.items() if k in known and k != "extra"})
    settings.extra = {k: v for k, v in raw.items() if k not in known}
    settings.schema_version = SCHEMA_VERSION
    return settings


def save_settings(settings: Settings, path: Path) -> None:
    data = asdict(settings)
    extra = data.pop("extra", {})
    payload = {**extra, **data}
    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True))
