"""The prompt cache's folder as the app sees it: what it holds, and clearing it.

The app shows the folder's size and entries in Settings → Models and clears it on
request, also while a worker is using it. Clearing is the store's own eviction with a
budget of nothing (``PromptStore.evict``): the same lock file that keeps two workers'
evictions apart, the same deletions, so a worker reading a state that vanishes just
misses, as it does when another worker evicts it. A state a worker is writing at that
moment lands after the clear; ``clear`` reports what is left.

Blocking (it lists and deletes files): call it off the Qt thread.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from hearth.engine.prompt_index import SUFFIX
from hearth.engine.prompt_store import PromptStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheUsage:
    """The saved states in a folder: their total size and how many there are."""

    size_bytes: int
    entries: int


def usage(folder: Path) -> CacheUsage:
    """What ``folder`` holds now (nothing when it doesn't exist yet)."""
    size = entries = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return CacheUsage(0, 0)
    for name in names:
        if not name.endswith(SUFFIX):
            continue
        try:
            size += (folder / name).stat().st_size
        except OSError:
            continue  # evicted by a worker meanwhile
        entries += 1
    return CacheUsage(size, entries)


def clear(folder: Path) -> CacheUsage:
    """Delete every saved state in ``folder`` under the folder's eviction lock; returns
    what is left (a state written meanwhile, or all of it while a worker is evicting)."""
    if not folder.is_dir():
        return CacheUsage(0, 0)
    PromptStore(folder, budget=0).evict()
    left = usage(folder)
    log.info("prompt cache %s cleared; %d entries left", folder, left.entries)
    return left
