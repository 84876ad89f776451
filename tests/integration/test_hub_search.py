"""Search and repo listings through huggingface_hub, unchanged, against the fake Hub."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import gguf
import pytest

from fake_hub import FakeFile, FakeHub
from fake_hub_repos import EPOCH
from hearth.hub import (
    DownloadManager,
    HubAccessError,
    ModelSearch,
    list_repo_gguf,
    search_models,
)
from hub_testing import isolated_hf

REPO = "hearth-test/tiny-llama-GGUF"
__all__ = ["isolated_hf"]  # an autouse fixture, found by pytest by name


@pytest.fixture
def hub(
    monkeypatch: pytest.MonkeyPatch, tiny_model_f16: Path, tiny_model_q8: Path
) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        q8 = tiny_model_q8.read_bytes()
        half = len(q8) // 2
        fake.add_repo(
            REPO,
            {
                "tiny-llama-F16.gguf": tiny_model_f16.read_bytes(),
                "tiny-llama-Q8_0.gguf": q8,
                "split/tiny-llama-Q8_0-00002-of-00002.gguf": q8[half:],
                "split/tiny-llama-Q8_0-00001-of-00002.gguf": q8[:half],
                "README.md": FakeFile(b"# tiny\n", lfs=False),
                "../escape-Q4_0.gguf": b"evil",
            },
            downloads=500,
            likes=5,
            last_modified=EPOCH + timedelta(days=3),
        )
        for i in range(7):
            fake.add_repo(
                f"org{i}/model-{i}-GGUF",
                {f"model-{i}-Q4_K_M.gguf": b"GGUF" + bytes([i])},
                downloads=100 * i,
                likes=70 - 10 * i,
                last_modified=EPOCH + timedelta(days=10 + i % 3 * 5 + i),
            )
        fake.add_repo("org/safetensors-model", {"model.safetensors": b"x"}, tags=["pytorch"])
        fake.add_repo("corp/gated-GGUF", {"g-Q4_0.gguf": b"g"}, gated="manual", downloads=1)
        fake.add_repo("corp/private-GGUF", {"p-Q4_0.gguf": b"p"}, private=True, downloads=10**6)
        yield fake


def test_search_sorts_and_filters_gguf(hub: FakeHub) -> None:
    by_downloads = search_models("", sort="downloads", limit=20)
    ids = [m.repo_id for m in by_downloads]
    assert ids[0] == "org6/model-6-GGUF" and "org/safetensors-model" not in ids
    assert "corp/private-GGUF" not in ids  # private repos stay invisible without a token
    assert [m.downloads for m in by_downloads] == sorted(
        (m.downloads for m in by_downloads), reverse=True
    )
    by_likes = search_models("GGUF", sort="likes", limit=3)
    assert [m.repo_id for m in by_likes] == [f"org{i}/model-{i}-GGUF" for i in range(3)]
    recent = search_models("model", sort="last_modified", limit=20)
    stamps = [m.last_modified for m in recent]
    assert all(s is not None for s in stamps) and stamps == sorted(stamps, reverse=True)  # type: ignore[type-var]
    gated = search_models("gated")
    assert [(m.repo_id, m.gated, m.gated_mode) for m in gated] == [
        ("corp/gated-GGUF", True, "manual")
    ]
    # huggingface_hub sent our query as the real Hub expects it.
    asked = [r.query for r in hub.requests if r.path == "/api/models"]
    assert asked[0]["filter"] == ["gguf"] and asked[0]["sort"] == ["downloads"]


def test_paging_follows_the_link_header(hub: FakeHub) -> None:
    search = ModelSearch("GGUF", sort="downloads", page_size=3)
    pages = []
    while search.has_more:
        pages.append(search.next_page())
    assert [p.number for p in pages] == [1, 2, 3]
    assert [len(p.results) for p in pages] == [3, 3, 3]
    assert [p.has_more for p in pages] == [True, True, False]
    ids = [m.repo_id for p in pages for m in p.results]
    assert len(ids) == len(set(ids)) == 9
    assert search.next_page().results == []
    cursors = [r.query.get("cursor") for r in hub.requests if r.path == "/api/models"]
    assert cursors[0] is None and all(c for c in cursors[1:]) and len(cursors) == 3


def test_repo_listing_groups_shards_and_rejects_unsafe_names(
    hub: FakeHub, tiny_model_f16: Path, tiny_model_q8: Path
) -> None:
    listing = list_repo_gguf(REPO)
    assert listing.commit == hub.repos[REPO].sha and not listing.gated
    assert listing.rejected == ("../escape-Q4_0.gguf",)
    assert listing.quants == ["F16", "Q8_0"]
    f16 = next(m for m in listing.models if m.name == "tiny-llama-F16")
    assert f16.total_size == tiny_model_f16.stat().st_size
    assert f16.files[0].sha256 == hashlib.sha256(tiny_model_f16.read_bytes()).hexdigest()
    split = next(m for m in listing.models if m.is_split)
    assert split.name == "split/tiny-llama-Q8_0" and split.complete
    assert split.paths == (
        "split/tiny-llama-Q8_0-00001-of-00002.gguf",
        "split/tiny-llama-Q8_0-00002-of-00002.gguf",
    )
    assert split.total_size == tiny_model_q8.stat().st_size
    assert len(listing.find("q8_0")) == 2  # the single file and the split one


def test_gated_flag_and_unknown_repo(hub: FakeHub) -> None:
    gated = list_repo_gguf("corp/gated-GGUF")
    assert gated.gated and gated.gated_mode == "manual"
    with pytest.raises(HubAccessError) as err:
        list_repo_gguf("nobody/missing-GGUF")
    assert "was not found" in err.value.message


def test_downloaded_gguf_is_the_real_model(
    hub: FakeHub, tmp_path: Path, tiny_model_q8: Path
) -> None:
    listing = list_repo_gguf(REPO)
    split = next(m for m in listing.models if m.is_split)

    async def pull() -> tuple[Path, list[Path]]:
        manager = DownloadManager(tmp_path / "models", token_provider=lambda: None)
        try:
            single = await manager.pull(REPO, "tiny-llama-Q8_0.gguf")
            shards = manager.add_model(REPO, split, revision=listing.commit or "main")
            return single, [await h.wait() for h in shards]
        finally:
            await manager.aclose()

    path, shards = asyncio.run(pull())
    folder = tmp_path / "models" / "hearth-test" / "tiny-llama-GGUF"
    assert path == folder / "tiny-llama-Q8_0.gguf"
    reader = gguf.GGUFReader(path)
    arch = reader.get_field("general.architecture")
    assert arch is not None and arch.contents() == "llama"
    assert [p.relative_to(folder).as_posix() for p in shards] == list(split.paths)
    assert b"".join(p.read_bytes() for p in shards) == tiny_model_q8.read_bytes()
