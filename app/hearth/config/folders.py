"""The four per-user folders Hearth uses, named once for Settings and ``hearth paths``.

People ask "where are my models / logs?" and support needs the exact answer, so the
GUI and the CLI show the same list, computed by the same rules the app uses to write
there: data, settings and models from ``AppPaths`` (platformdirs, or the
``HEARTH_DATA_DIR``/``HEARTH_CONFIG_DIR`` overrides) and the log folder the GUI's
worker writes ``worker.log`` to.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from hearth.config.paths import APP_NAME, DATA_DIR_ENV, AppPaths, default_paths

log = logging.getLogger(__name__)

FOLDER_KEYS = ("data", "config", "logs", "models")


@dataclass(frozen=True)
class UserFolder:
    key: str  # one of FOLDER_KEYS: stable, for scripts and tests
    label: str  # what a person reads
    path: Path


def log_dir() -> Path:
    """The worker's log folder: under ``HEARTH_DATA_DIR`` when set, else the platform's.

    The GUI hands this folder to the worker supervisor; it lives here so the CLI can
    answer without importing Qt.
    """
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        return Path(data_dir) / "logs"
    return platformdirs.user_log_path(APP_NAME, appauthor=False)


def user_folders(
    paths: AppPaths | None = None,
    *,
    config_dir: Path | None = None,
    logs_dir: Path | None = None,
) -> list[UserFolder]:
    """Data, settings, logs and models folders, in that order (nothing is created).

    ``config_dir`` and ``logs_dir`` let a caller that was given other locations (a
    settings store opened on another file, a window with its own log folder) show
    the folders it really uses.
    """
    paths = paths or default_paths()
    return [
        UserFolder("data", "Data", paths.data_dir),
        UserFolder("config", "Settings", config_dir or paths.config_dir),
        UserFolder("logs", "Logs", logs_dir or log_dir()),
        UserFolder("models", "Models", paths.models_dir),
    ]
