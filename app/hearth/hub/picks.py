"""Discover's opening list: curated picks from a data file, plus the Hub's trending GGUFs.

The picks file (``ui/resources/picks.json``) names current models by category (chat,
coding, reasoning, small) with the approximate size of a default quant, so a fit chip
and a speed estimate can be shown before a repo is opened. :func:`trending` adds the
Hub's trending GGUF repos when online; their size is guessed from the parameter count
in the name ("Qwen3-14B" → 14B at ~4.8 bits per weight, Q4_K_M's average), and a
mixture of experts named "30B-A3B" reads only its active 3B per token.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from hearth.core.units import MIB
from hearth.hub.client import auth_headers, hub_endpoint, keyring_token
from hearth.hub.search import GGUF_FILTER

log = logging.getLogger(__name__)

TRENDING = "trending"
TRENDING_TIMEOUT_S = 10.0  # one try: offline, the picks file stands alone at once
BYTES_PER_PARAM_Q4 = 0.6  # Q4_K_M: ~4.85 bits per weight, plus the odd 6-bit tensor
KV_GUESS_PER_B = 64 * MIB  # f16 KV cache for 4K tokens per billion parameters, roughly
_PARAMS_RE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)([BbMm])(?![A-Za-z])")
_ACTIVE_RE = re.compile(r"(?<![A-Za-z0-9])A(\d+(?:\.\d+)?)B(?![A-Za-z])")


@dataclass(frozen=True)
class Pick:
    """One model on Discover's opening page."""

    name: str
    category: str  # a key of the file's "categories", or TRENDING
    repo: str
    quant: str
    size_bytes: int  # approximate; 0 when unknown
    kv_bytes: int  # f16 KV cache for 4K tokens
    active: float = 1.0  # share of the weights read per token
    description: str = ""
    downloads: int = 0


@dataclass(frozen=True)
class PicksFile:
    categories: dict[str, str]  # key -> title, in display order
    picks: tuple[Pick, ...]


def load_picks(path: Path) -> PicksFile:
    """Read the curated picks (blocking; a small file)."""
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    categories = {str(k): str(v) for k, v in data["categories"].items()}
    picks = tuple(
        Pick(
            name=str(m["name"]),
            category=str(m["category"]),
            repo=str(m["repo"]),
            quant=str(m.get("quant", "")),
            size_bytes=int(m.get("size_bytes", 0)),
            kv_bytes=int(m.get("kv_mib_4k", 512)) * MIB,
            active=float(m.get("active", 1.0)),
            description=str(m.get("description", "")),
        )
        for m in data["models"]
        if str(m["category"]) in categories
    )
    return PicksFile(categories, picks)


def guess_from_name(repo_id: str) -> tuple[int, float]:
    """(approximate Q4_K_M size in bytes, active share) from a repo name; (0, 1.0)
    when the name gives no parameter count."""
    name = repo_id.split("/", 1)[-1]
    active_match = _ACTIVE_RE.search(name)
    cleaned = _ACTIVE_RE.sub("", name) if active_match else name
    match = _PARAMS_RE.search(cleaned)
    if match is None:
        return 0, 1.0
    params = float(match.group(1)) / (1000 if match.group(2) in "Mm" else 1)
    if params <= 0:
        return 0, 1.0
    active = 1.0
    if active_match is not None:
        active = min(1.0, float(active_match.group(1)) / params)
    return int(params * 1e9 * BYTES_PER_PARAM_Q4), active


def trending(limit: int = 12, *, endpoint: str | None = None) -> list[Pick]:
    """The Hub's trending GGUF repos (blocking; raises when the Hub is unreachable).

    One GET of ``/api/models?filter=gguf&sort=trendingScore`` (what ``HfApi.list_models
    (sort="trending_score")`` sends), without huggingface_hub's retries: this list is
    a bonus, and offline it must give up at once rather than after a minute of backoff.
    """
    url = f"{hub_endpoint(endpoint)}/api/models"
    params: list[tuple[str, str | int | float | bool | None]] = [
        ("filter", GGUF_FILTER),
        ("sort", "trendingScore"),
        ("direction", -1),
        ("limit", limit),
        ("expand[]", "downloads"),
        ("expand[]", "likes"),
        ("expand[]", "gated"),
    ]
    headers = auth_headers(keyring_token())
    response = httpx.get(url, params=params, headers=headers, timeout=TRENDING_TIMEOUT_S)
    response.raise_for_status()
    picks = []
    for info in response.json():
        repo = str(info.get("id") or info.get("modelId") or "")
        if "/" not in repo:
            continue
        size, active = guess_from_name(repo)
        billions = size / (BYTES_PER_PARAM_Q4 * 1e9)
        picks.append(
            Pick(
                name=repo.split("/", 1)[-1].removesuffix("-GGUF").removesuffix("-gguf"),
                category=TRENDING,
                repo=repo,
                quant="Q4_K_M" if size else "",
                size_bytes=size,
                kv_bytes=int(billions * KV_GUESS_PER_B),
                active=active,
                description=f"Trending on Hugging Face · by {repo.split('/', 1)[0]}",
                downloads=int(info.get("downloads") or 0),
            )
        )
    return picks
