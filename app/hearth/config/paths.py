"""Per-user folders (platformdirs), overridable for tests and portable installs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "Hearth"
DATA_DIR_ENV = "HEARTH_DATA_DIR"
CONFIG_DIR_ENV = "HEARTH_CONFIG_DIR"
IMAGES_FOLDER = "images"


def chat_images_dir(chats_db: Path) -> Path:
    """The images kept with the chats: beside the chats database, wherever it is."""
    return chats_db.parent / IMAGES_FOLDER


@dataclass(frozen=True)
class AppPaths:
    data_dir: Path
    config_dir: Path

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def prompt_cache_dir(self) -> Path:
        """Saved KV states of long prompts (engine/prompt_store.py); safe to delete."""
        return self.data_dir / "prompt-cache"

    @property
    def chats_db(self) -> Path:
        return self.data_dir / "chats.db"

    @property
    def images_dir(self) -> Path:
        """Images attached in chats, one file per sha256 (chats/images.py)."""
        return chat_images_dir(self.chats_db)

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.json"

    @property
    def secrets_file(self) -> Path:
        """Plain-text secrets, only where chosen over the OS keyring (config/secrets)."""
        return self.config_dir / "secrets.json"

    @property
    def key_index_file(self) -> Path:
        """The API keys' names, dates and masked forms, never the keys (config/key_index)."""
        return self.config_dir / "api-keys.json"

    def ensure(self) -> AppPaths:
        for folder in (self.data_dir, self.config_dir, self.models_dir, self.logs_dir):
            folder.mkdir(parents=True, exist_ok=True)
        return self


def default_paths() -> AppPaths:
    data = os.environ.get(DATA_DIR_ENV) or platformdirs.user_data_dir(APP_NAME, appauthor=False)
    config = os.environ.get(CONFIG_DIR_ENV) or platformdirs.user_config_dir(
        APP_NAME, appauthor=False
    )
    return AppPaths(Path(data), Path(config))
