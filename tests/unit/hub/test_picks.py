"""The one table of recommended models (``hub.picks``): the shipped file, the best-fit
rule the Welcome window and the quick start share, and finding a pick's file from the
repo's listing on the (fake, local) Hub, with the table's known name when the Hub
can't be reached."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_hub import FakeHub, deterministic_blob
from hearth.core.units import GIB, MIB
from hearth.hardware.fit import FitVerdict
from hearth.hardware.probe import GpuInfo, SystemMemory
from hearth.hardware.speed import Bandwidth
from hearth.hub.errors import (
    HubAccessError,
    HubUnavailableError,
    RemoteNotFoundError,
    UnsafePathError,
)
from hearth.hub.names import parse_quant
from hearth.hub.picks import (
    COMFORTABLE_TOK_S,
    PICKS_FILE,
    Pick,
    PicksFile,
    best_fit,
    default_picks,
    judge,
    load_picks,
    pick_speed,
    resolve_pick,
    suggestions,
)
from hub_testing import isolated_hf  # noqa: F401 - autouse: no real token or keyring

GPU_12 = SystemMemory(32 * GIB, 24 * GIB, 8, 16, (GpuInfo("RTX 4070", 12 * GIB, 11 * GIB, "cuda"),))
CPU_32 = SystemMemory(32 * GIB, 24 * GIB, 8, 16)
TINY = SystemMemory(GIB, GIB // 2, 2, 2)


def _pick(name: str, gib: float, category: str = "chat", **kw: object) -> Pick:
    return Pick(name, category, f"org/{name}-GGUF", "Q4_K_M", int(gib * GIB), 256 * MIB, **kw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the table


def test_the_shipped_table_is_complete_and_its_file_names_are_its_quants() -> None:
    picks = default_picks()
    assert list(picks.categories) == ["chat", "coding", "reasoning", "small"]
    for key in picks.categories:
        assert [p for p in picks.picks if p.category == key], key
    assert all(p.size_bytes > 0 and p.repo.count("/") == 1 for p in picks.picks)
    named = [p for p in picks.picks if p.file]
    assert len(named) >= 5
    assert all(parse_quant(p.file) == p.quant for p in named)  # load_picks checks too
    # The quick start's candidates: general chat models, each with a known file, and
    # one small enough for an 8 GB laptop.
    starters = picks.first_run
    assert len(starters) >= 2
    assert {p.category for p in starters} <= {"chat", "small"}
    assert all(p.file for p in starters)
    assert min(p.size_bytes for p in starters) < GIB
    assert len({p.repo for p in picks.picks}) == len(picks.picks)  # no repo twice


def test_a_file_name_of_another_quant_is_refused(tmp_path: Path) -> None:
    data = json.loads(PICKS_FILE.read_text(encoding="utf-8"))
    model = next(m for m in data["models"] if m.get("file"))
    model["file"] = model["file"].replace("Q4_K_M", "Q8_0").replace("q4_k_m", "q8_0")
    bad = tmp_path / "picks.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="is not a Q4_K_M GGUF file name"):
        load_picks(bad)
    model["file"] = "../escape-Q4_K_M.gguf"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UnsafePathError):
        load_picks(bad)


# --------------------------------------------------------------------------- best fit


def test_best_fit_is_the_largest_that_fits_with_room() -> None:
    small, mid, big, huge = (
        _pick("small", 1),
        _pick("mid", 5),
        _pick("big", 9),
        _pick("huge", 40),
    )
    picks = [mid, huge, small, big]
    # 12 GB GPU: 9 GiB + KV + compute buffers is too tight in ~10.5 GiB usable VRAM,
    # 5 GiB sits there with room.
    assert judge(big, GPU_12).verdict is not FitVerdict.FULL_GPU or judge(big, GPU_12).tight
    assert best_fit(picks, GPU_12) is mid
    # No GPU, 24 GiB free: all in RAM, the largest that isn't tight.
    assert best_fit(picks, CPU_32) is big
    # The same machine through a CPU-only build (as llama.cpp sees it): no GPU either.
    assert best_fit(picks, GPU_12.without_gpus()) is big
    # Only a split between GPU and RAM runs it: the smallest such, the least slow.
    small_gpu = SystemMemory(32 * GIB, 24 * GIB, 8, 16, (GpuInfo("GPU", 2 * GIB, 2 * GIB, "cuda"),))
    assert judge(small, small_gpu).verdict is FitVerdict.PARTIAL_GPU
    assert best_fit([big, mid, small], small_gpu) is small
    # Nothing fits, and unknown sizes are never suggested.
    assert best_fit([mid, huge], TINY) is None
    assert best_fit([_pick("unknown", 0)], CPU_32) is None


def test_with_a_bandwidth_the_best_fit_also_keeps_up_with_reading() -> None:
    """Measured bandwidth turns "fits" into "fits and is quick enough": on a machine
    whose RAM moves 20 GB/s a dense 5 GiB model crawls at ~2.6 tok/s, a 1 GiB one runs
    at ~13, and a mixture of experts reading 12% of 18 GiB per token at ~6."""
    small, mid, big = _pick("small", 1), _pick("mid", 5), _pick("big", 9)
    moe = _pick("moe", 18, active=0.12)
    slow, fast = Bandwidth(ram_bps=20e9), Bandwidth(ram_bps=200e9)

    def tok_s(p: Pick, bw: Bandwidth) -> float:
        speed = pick_speed(p, judge(p, CPU_32), bw)
        assert speed is not None
        return speed

    assert tok_s(mid, slow) < COMFORTABLE_TOK_S <= tok_s(small, slow)
    assert best_fit([small, mid, big], CPU_32) is big  # by size alone
    assert best_fit([small, mid, big], CPU_32, fast) is big
    assert best_fit([small, mid, big], CPU_32, slow) is small
    assert tok_s(moe, slow) >= COMFORTABLE_TOK_S
    assert best_fit([small, mid, big, moe], CPU_32, slow) is moe  # large and still quick
    # Nothing is quick enough: the fastest that runs, not the largest.
    crawl = Bandwidth(ram_bps=2e9)
    assert best_fit([big, mid], CPU_32, crawl) is mid
    assert pick_speed(_pick("huge", 60), judge(_pick("huge", 60), CPU_32), slow) is None


def test_suggestions_give_each_category_its_best_fit_or_its_smallest() -> None:
    table = PicksFile(
        {"chat": "Chat", "coding": "Coding", "empty": "Nothing here"},
        (
            _pick("chat-small", 1),
            _pick("chat-big", 9),
            _pick("code-huge", 60, "coding"),
            _pick("code-bigger", 80, "coding"),
        ),
    )
    got = suggestions(table, CPU_32)
    assert [p.name for p in got] == ["chat-big", "code-huge"]  # coding: none fits
    assert judge(got[1], CPU_32).verdict is FitVerdict.WONT_FIT


# --------------------------------------------------------------------------- files


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHub() as fake:
        fake.add_repo(
            "org/one-GGUF",
            {
                "one-Q4_K_M.gguf": deterministic_blob(3000, 1),
                "one-Q8_0.gguf": deterministic_blob(5000, 2),
                "README.md": b"# one\n",
            },
        )
        fake.add_repo(
            "org/split-GGUF",
            {
                "Q4_K_M/split-Q4_K_M-00002-of-00002.gguf": deterministic_blob(1500, 3),
                "Q4_K_M/split-Q4_K_M-00001-of-00002.gguf": deterministic_blob(2500, 4),
                "split-Q8_0.gguf": deterministic_blob(6000, 5),
            },
        )
        fake.add_repo(
            "org/eyes-GGUF",
            {
                "eyes-Q4_K_M.gguf": deterministic_blob(2000, 8),
                "mmproj-F16.gguf": deterministic_blob(300, 9),
                "mmproj-Q8_0.gguf": deterministic_blob(200, 10),
            },
        )
        fake.add_repo(
            "org/two-GGUF",
            {
                "a/two-Q4_K_M.gguf": deterministic_blob(1000, 6),
                "b/two-Q4_K_M.gguf": deterministic_blob(1100, 7),
            },
        )
        yield fake


def _repo_pick(repo: str, file: str = "") -> Pick:
    return Pick("x", "chat", repo, "Q4_K_M", 123, 0, file=file)


def test_the_file_comes_from_the_listing(hub: FakeHub) -> None:
    got = resolve_pick(_repo_pick("org/one-GGUF"), endpoint=hub.url)
    assert got.paths == ("one-Q4_K_M.gguf",) and got.listed
    assert got.size_bytes == 3000  # the listing's, not the table's approximation
    assert got.revision == hub.repos["org/one-GGUF"].sha  # pinned to the listed commit
    # A renamed file: the table's old name gives way to what the repo has now.
    renamed = resolve_pick(_repo_pick("org/one-GGUF", "old-name-Q4_K_M.gguf"), endpoint=hub.url)
    assert renamed.paths == ("one-Q4_K_M.gguf",)


def test_a_vision_pick_brings_its_f16_projector_after_the_model(hub: FakeHub) -> None:
    got = resolve_pick(_repo_pick("org/eyes-GGUF"), endpoint=hub.url)
    assert got.paths == ("eyes-Q4_K_M.gguf", "mmproj-F16.gguf")
    assert got.size_bytes == 2300


def test_a_split_model_gives_every_shard_in_order(hub: FakeHub) -> None:
    got = resolve_pick(_repo_pick("org/split-GGUF"), endpoint=hub.url)
    assert got.paths == (
        "Q4_K_M/split-Q4_K_M-00001-of-00002.gguf",
        "Q4_K_M/split-Q4_K_M-00002-of-00002.gguf",
    )
    assert got.size_bytes == 4000


def test_the_named_file_wins_among_several_of_the_quant(hub: FakeHub) -> None:
    first = resolve_pick(_repo_pick("org/two-GGUF"), endpoint=hub.url)
    assert first.paths == ("a/two-Q4_K_M.gguf",)
    named = resolve_pick(_repo_pick("org/two-GGUF", "b/two-Q4_K_M.gguf"), endpoint=hub.url)
    assert named.paths == ("b/two-Q4_K_M.gguf",) and named.size_bytes == 1100


def test_a_repo_without_the_quant_says_so(hub: FakeHub) -> None:
    pick = Pick("x", "chat", "org/one-GGUF", "Q2_K", 1, 0, file="one-Q2_K.gguf")
    with pytest.raises(RemoteNotFoundError, match="no complete Q2_K GGUF file"):
        resolve_pick(pick, endpoint=hub.url)


def test_hub_answers_are_not_papered_over_by_the_known_name(hub: FakeHub) -> None:
    """Only an unreachable Hub falls back: a repo the Hub says is gone is an error."""
    with pytest.raises((RemoteNotFoundError, HubAccessError), match="org/gone-GGUF"):
        resolve_pick(_repo_pick("org/gone-GGUF", "gone-Q4_K_M.gguf"), endpoint=hub.url)


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # closed when the block ends


def test_unreachable_hub_falls_back_to_the_known_file_name() -> None:
    offline = _closed_port()
    got = resolve_pick(_repo_pick("org/one-GGUF", "one-Q4_K_M.gguf"), endpoint=offline)
    assert got.paths == ("one-Q4_K_M.gguf",) and not got.listed
    assert got.revision == "main" and got.size_bytes == 123
    with pytest.raises(HubUnavailableError, match="Could not reach"):
        resolve_pick(_repo_pick("org/one-GGUF"), endpoint=offline)  # no name to fall back on
