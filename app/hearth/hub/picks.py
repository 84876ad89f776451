"""The one table of recommended models: Discover's picks, the Welcome window's and the
quick start's suggestions, plus the Hub's trending GGUFs.

The picks file (``ui/resources/picks.json``, :data:`PICKS_FILE`) names current models
by category (chat, coding, reasoning, small) with the approximate size of a default
quant, so a fit chip and a speed estimate can be shown before a repo is opened. Some
also carry the file's known name (``file``): the Hub's listing decides which file to
download (:func:`resolve_pick`), and the name stands in when the listing can't be had.
``first_run`` marks the few the empty Chat page's "Get a recommended model" chooses
from: general chat models with a modest download.

Which pick suits a machine is one rule, :func:`best_fit`, on the same rough fit and
speed estimate as Discover's chips (``hardware.speed``): the largest that fits with
room and generates at least at reading speed. The Welcome window shows the best fit of
each category (:func:`suggestions`), the quick start the best fit of the ``first_run``
picks.

:func:`trending` adds the Hub's trending GGUF repos when online; their size is guessed
from the parameter count in the name ("Qwen3-14B" → 14B at ~4.8 bits per weight,
Q4_K_M's average), and a mixture of experts named "30B-A3B" reads only its active 3B
per token.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx

from hearth.core.units import MIB
from hearth.hardware.fit import FitVerdict
from hearth.hardware.probe import SystemMemory
from hearth.hardware.speed import Bandwidth, RoughFit, estimate_speed_from_size, rough_fit
from hearth.hub.client import auth_headers, hub_endpoint, keyring_token
from hearth.hub.errors import HubUnavailableError, RemoteNotFoundError
from hearth.hub.names import is_gguf, parse_quant, safe_relative_path
from hearth.hub.repo import GgufModel, list_repo_gguf
from hearth.hub.search import GGUF_FILTER

log = logging.getLogger(__name__)

PICKS_FILE = Path(__file__).resolve().parents[1] / "ui" / "resources" / "picks.json"
# About reading speed (~240 words a minute, ~5 tokens a second): slower than this, the
# reader waits for the text, so a suggestion should be at least this fast.
COMFORTABLE_TOK_S = 5.0

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
    file: str = ""  # the quant's file name when known: the fallback when the Hub won't list
    first_run: bool = False  # one of the quick start's candidates
    vision: bool = False  # the repo has a projector: the model sees images


@dataclass(frozen=True)
class PicksFile:
    categories: dict[str, str]  # key -> title, in display order
    picks: tuple[Pick, ...]

    @property
    def first_run(self) -> tuple[Pick, ...]:
        """The picks "Get a recommended model" chooses from."""
        return tuple(p for p in self.picks if p.first_run)


def _known_file(m: dict[str, Any]) -> str:
    """The model's ``file``, checked: a safe relative ``.gguf`` path of the pick's quant
    (a wrong name would only show when the Hub is unreachable, so it fails here)."""
    name = str(m.get("file") or "")
    if not name:
        return ""
    safe = safe_relative_path(name).as_posix()
    quant = str(m.get("quant", "")).upper()
    if not is_gguf(safe) or parse_quant(safe) != quant:
        raise ValueError(f"picks file: {m['repo']}: {name!r} is not a {quant} GGUF file name")
    return safe


def load_picks(path: Path = PICKS_FILE) -> PicksFile:
    """Read the curated picks (blocking; a small file). Raises ValueError for a file
    name that can't be the pick's quant."""
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
            file=_known_file(m),
            first_run=bool(m.get("first_run", False)),
            vision=bool(m.get("vision", False)),
        )
        for m in data["models"]
        if str(m["category"]) in categories
    )
    return PicksFile(categories, picks)


@cache
def default_picks() -> PicksFile:
    """The shipped picks file, read once per process."""
    return load_picks(PICKS_FILE)


# --------------------------------------------------------------------------- fit


def judge(pick: Pick, system: SystemMemory) -> RoughFit:
    """Where ``pick`` would go on ``system`` (the machine as llama.cpp sees it)."""
    return rough_fit(pick.size_bytes, pick.kv_bytes, system)


def fits_with_room(fit: RoughFit, system: SystemMemory) -> bool:
    """All in the fastest memory there is, with room to spare: in GPU memory, or in
    RAM on a machine without a usable GPU (the green chip, before the speed)."""
    if fit.tight:
        return False
    if fit.verdict is FitVerdict.FULL_GPU:
        return True
    return fit.verdict is FitVerdict.CPU_ONLY and not system.usable_vram


def pick_speed(pick: Pick, fit: RoughFit, bandwidth: Bandwidth | None) -> float | None:
    """Estimated tokens per second of ``pick`` placed as ``fit`` says (from its size:
    ``hardware.speed``); None without a bandwidth, a size, or when it won't fit."""
    if bandwidth is None or not pick.size_bytes or fit.verdict is FitVerdict.WONT_FIT:
        return None
    return estimate_speed_from_size(
        pick.size_bytes, bandwidth, on_gpu=fit.on_gpu, active=pick.active
    )


def best_fit(
    picks: Iterable[Pick], system: SystemMemory, bandwidth: Bandwidth | None = None
) -> Pick | None:
    """The pick to suggest for ``system`` (the machine as llama.cpp sees it): the
    largest that fits with room to spare (within a curated category, larger means more
    capable) and, when ``bandwidth`` is known, generates at least
    :data:`COMFORTABLE_TOK_S`; else the fastest that runs at all (split between GPU
    and RAM, tight, or slow); None when none fits. Picks of unknown size are skipped."""
    judged = [(p, judge(p, system)) for p in picks if p.size_bytes]

    def comfortable(pick: Pick, fit: RoughFit) -> bool:
        tok_s = pick_speed(pick, fit, bandwidth)
        return tok_s is None or tok_s >= COMFORTABLE_TOK_S

    roomy = [p for p, fit in judged if fits_with_room(fit, system) and comfortable(p, fit)]
    if roomy:
        return max(roomy, key=lambda p: p.size_bytes)
    runs = [(p, fit) for p, fit in judged if fit.verdict is not FitVerdict.WONT_FIT]
    if not runs:
        return None
    if bandwidth is None:  # the fewest bytes read per token
        return min(runs, key=lambda pf: pf[0].size_bytes * pf[0].active)[0]
    return max(runs, key=lambda pf: pick_speed(pf[0], pf[1], bandwidth) or 0.0)[0]


def suggestions(
    picks_file: PicksFile, system: SystemMemory, bandwidth: Bandwidth | None = None
) -> list[Pick]:
    """One pick per category, in the file's order: its :func:`best_fit`, or its
    smallest when none fits (shown with a red chip, so the Welcome window says so)."""
    chosen: list[Pick] = []
    for key in picks_file.categories:
        members = [p for p in picks_file.picks if p.category == key and p.size_bytes]
        if members:
            best = best_fit(members, system, bandwidth)
            chosen.append(best or min(members, key=lambda p: p.size_bytes))
    return chosen


# --------------------------------------------------------------------------- files


@dataclass(frozen=True)
class PickFiles:
    """What to download for a pick: one file, or every shard of a split model in order,
    then the repo's vision projector for it when it has one (``paths[0]`` is always
    what llama.cpp opens)."""

    repo: str
    paths: tuple[str, ...]
    size_bytes: int  # in all; the table's approximation when not listed
    revision: str  # the listing's commit, so all shards come from one; else "main"
    listed: bool  # False: the table's known name stood in for the Hub's listing


def choose_model(models: Iterable[GgufModel], pick: Pick) -> GgufModel | None:
    """The pick's quant among a repo's models: the file the table names when the repo
    still has it, else the first complete one (repos rename files between releases)."""
    wanted = pick.quant.upper()
    candidates = [m for m in models if m.complete and m.quant is not None and m.quant == wanted]
    named = [m for m in candidates if pick.file and pick.file in m.paths]
    found = named or candidates
    return found[0] if found else None


def resolve_pick(pick: Pick, *, endpoint: str | None = None, token: str | None = None) -> PickFiles:
    """The file(s) of ``pick``'s quant, from the repo's listing (blocking: one
    ``model_info`` call through huggingface_hub).

    When the Hub can't be reached or answers with a server error, a pick whose file
    name the table knows falls back to it (the downloader retries on its own); other
    picks raise :class:`HubUnavailableError`. Access errors (gated, private) are
    raised as they are, and :class:`RemoteNotFoundError` when the repo has no
    complete file of that quant.
    """
    try:
        listing = list_repo_gguf(pick.repo, endpoint=endpoint, token=token)
    except HubUnavailableError as exc:
        if not pick.file:
            raise
        log.info("no listing of %s (%s); using the known file %s", pick.repo, exc, pick.file)
        return PickFiles(pick.repo, (pick.file,), pick.size_bytes, "main", listed=False)
    model = choose_model(listing.models, pick)
    if model is None:
        raise RemoteNotFoundError(
            f"{pick.repo} has no complete {pick.quant} GGUF file now. Open it in Discover "
            "to choose another quantization."
        )
    projector = listing.projector_for(model)
    extra = (projector.path,) if projector is not None else ()
    return PickFiles(
        listing.repo_id,
        model.paths + extra,
        (model.total_size or pick.size_bytes) + (projector.size or 0 if projector else 0),
        listing.commit or "main",
        listed=True,
    )


# --------------------------------------------------------------------------- trending


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
