"""What the persistent prompt cache is told at launch: where, how big, from which length.

A plain value shared by the launch settings (``config/launch.py``), which parse and
write it, and the engine (``engine/prompt_cache.py``), which obeys it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GIB = 1 << 30
DEFAULT_MIN_TOKENS = 1024  # shorter prompts prefill in well under a second
DEFAULT_MAX_BYTES = 20 * GIB  # the budget's ceiling when none is given
DEFAULT_FREE_SHARE = 0.10  # else the budget is this share of the free space


@dataclass(frozen=True)
class PromptCacheSettings:
    """``folder`` None turns the cache off. ``max_bytes`` None: 10% of the free space
    on the folder's disk when the server starts, at most 20 GiB. A prompt is saved once
    at least ``min_tokens`` of it are not already on disk."""

    folder: Path | None
    max_bytes: int | None = None
    min_tokens: int = DEFAULT_MIN_TOKENS

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    def budget(self, free_bytes: int) -> int:
        """The size budget, given the free space on the folder's disk."""
        if self.max_bytes is not None:
            return self.max_bytes
        return min(int(free_bytes * DEFAULT_FREE_SHARE), DEFAULT_MAX_BYTES)


OFF = PromptCacheSettings(folder=None)
