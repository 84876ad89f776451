"""Discover: it opens on picks with coloured fit chips, one click opens a repo, the
model card is shown inline and sanitised, and a row's button follows its download
from "Download" to "Load". Real pages against the fake Hub over HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QPushButton
from pytestqt.qtbot import QtBot

from fake_hub import FakeFile, FakeHub
from hearth.hardware import SystemMemory
from hearth.hardware.probe import RAM_RESERVE_BYTES
from hearth.hub.picks import TRENDING
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.discover.page import DiscoverPage
from hearth.ui.pages.services import AppServices
from hearth.ui.style.tokens import DARK, LIGHT, contrast_ratio
from hearth.ui.tasks import TaskSet
from hearth.ui.widgets.fit_chip import ChipLevel, chip_colors
from hub_testing import FAST_RETRY, isolated_hf  # noqa: F401 - autouse: a file keyring

pytestmark = pytest.mark.ui

GIB = 1024**3
PICKED = "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF"  # in picks.json, served by the fake Hub
Q8 = "tiny-Q8_0.gguf"
README = b"""---
license: apache-2.0
tags: [gguf]
---
# Tiny Coder

A **small** model for tests. ![logo](https://example.com/logo.png)

<script>alert("x")</script>

| Quant | Use |
| --- | --- |
| Q8_0 | best |

See [the docs](https://example.com/docs) and [a file](file:///etc/passwd).
"""
# 16 GiB free, no GPU: 1.5B fits easily, a 20 GB model does not.
MACHINE = SystemMemory(32 * GIB, 16 * GIB + RAM_RESERVE_BYTES, 4, 8)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tiny_model_q8: Path):
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        fake.add_repo(
            PICKED,
            {Q8: tiny_model_q8.read_bytes(), "README.md": FakeFile(README, lfs=False)},
        )
        fake.add_repo("someone/Trendy-7B-GGUF", {"t-Q4_K_M.gguf": b"GGUF" + b"\0" * 64})
        yield fake


def make_page(qtbot: QtBot, *, system: SystemMemory = MACHINE) -> DiscoverPage:
    services = AppServices(
        download_options={"retry": FAST_RETRY, "reserve_bytes": 0, "token_provider": lambda: None},
        system=system,
    )
    page = DiscoverPage(services, TaskSet(), speed=MachineSpeed(ram_bps=40e9))
    qtbot.addWidget(page)
    page.resize(1200, 800)
    page.show()
    return page


def test_chip_colours_are_readable_in_both_themes() -> None:
    for tokens in (LIGHT, DARK):
        for level in ChipLevel:
            c = chip_colors(tokens, level)
            assert contrast_ratio(c.text, c.fill) >= 4.5, (tokens.name, level)
    # Three different colours for the three verdicts.
    assert len({chip_colors(LIGHT, lv).fill for lv in ChipLevel if lv != ChipLevel.UNKNOWN}) == 3


def test_opens_on_picks_with_fit_chips_and_one_click_opens(qtbot: QtBot, arun, hub) -> None:
    page = make_page(qtbot)
    picks = page.picks

    async def scenario() -> None:
        assert picks.isVisible() and not page.list.isVisible()
        assert "One click opens" in page.status.text()
        categories = {c.pick.category for c in picks.cards}
        assert {"chat", "coding", "reasoning", "small"} <= categories
        await page.picks_task
        small = picks.card_for(PICKED)
        big = picks.card_for("Qwen/QwQ-32B-GGUF")
        assert small is not None and big is not None
        assert small.chip.level is ChipLevel.GOOD and "tok/s" in small.chip.text()
        assert big.chip.level is ChipLevel.BAD and big.chip.text() == "Won't fit"
        # Online: the Hub's trending GGUFs join, in their own category.
        assert page.trending_task is not None and await page.trending_task == 1
        trendy = picks.card_for("someone/Trendy-7B-GGUF")
        assert trendy is not None and trendy.pick.category == TRENDING
        assert trendy.chip.level is ChipLevel.GOOD  # ~4.2 GB guessed from "7B"
        assert TRENDING in picks.filter_buttons

        picks.filter_buttons["coding"].click()
        shown = picks.visible_cards()
        assert shown and {c.pick.category for c in shown} == {"coding"}
        assert big not in shown and not big.isVisible()

        # One click on the card opens the repo, its files and its model card.
        qtbot.mouseClick(small, Qt.MouseButton.LeftButton)
        assert page.stack.currentWidget() is page.model_page
        mp = page.model_page
        await arun.wait_until(lambda: mp.table.rowCount() == 1, 20, "the files")
        await arun.wait_until(lambda: mp.fit_texts() == ["CPU only"], 20, "the fit")
        chip = mp.chip(0)
        assert chip is not None and chip.level is ChipLevel.GOOD and "tok/s" in chip.text()
        await arun.wait_until(lambda: "Tiny Coder" in mp.model_card.toPlainText(), 20, "card")
        text = mp.model_card.toPlainText()
        assert "license: apache" not in text  # the front matter is cut
        assert "[image: logo]" in text  # no remote image is fetched
        assert '<script>alert("x")</script>' in text  # raw HTML shown as text, never run
        html = mp.model_card.toHtml()
        assert "<img" not in html and "example.com/logo.png" not in html
        mp.model_card.anchorClicked.emit(QUrl("file:///etc/passwd"))
        assert mp.model_card.opened == []  # only http(s) links open

    arun(scenario())


def test_offline_shows_the_picks_file_without_an_error(
    qtbot: QtBot, arun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    page = make_page(qtbot)

    async def scenario() -> None:
        await page.picks_task
        assert page.trending_task is not None
        assert await asyncio.wait_for(page.trending_task, 5) == 0  # no minute of retries
        assert TRENDING not in page.picks.filter_buttons
        assert all(c.pick.category != TRENDING for c in page.picks.cards)
        assert len(page.picks.cards) >= 12
        assert "One click opens" in page.status.text()  # no error said

    arun(scenario())


def test_search_result_opens_on_one_click(qtbot: QtBot, arun, hub) -> None:
    page = make_page(qtbot)

    async def scenario() -> None:
        await page.search("coder")
        assert page.shown_repos() == [PICKED] and not page.picks.isVisible()
        rect = page.list.visualItemRect(page.list.item(0))
        qtbot.mouseClick(page.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        assert page.stack.currentWidget() is page.model_page
        assert page.model_page.repo_id == PICKED
        page.model_page.back_button.click()
        page.picks_button.click()
        assert page.picks.isVisible() and not page.list.isVisible()

    arun(scenario())


def test_download_button_follows_the_download_then_loads(qtbot: QtBot, arun, hub) -> None:
    hub.throttle_bps = 4 * 1024 * 1024  # slow enough to see it run
    page = make_page(qtbot)
    mp = page.model_page
    loads: list[Path] = []
    page.load_requested.connect(loads.append)
    dest = page.services.paths.models_dir / "Qwen" / "Qwen2.5-Coder-1.5B-Instruct-GGUF" / Q8

    async def scenario() -> None:
        await page.open_model(PICKED)
        assert mp.button_text("Q8_0") == "Download"
        cell = mp.download_button("Q8_0")
        assert cell is not None
        btn = cell.findChild(QPushButton)
        btn.click()
        assert mp.button_text("Q8_0").startswith(("Downloading", "Checking"))
        assert not btn.isEnabled()
        assert "Downloading Q8_0" in mp.status.text()
        await arun.wait_until(lambda: mp.button_text("Q8_0") == "Load", 60, "Load")
        assert dest.is_file() and btn.isEnabled()
        assert "Downloading" not in mp.status.text()  # the stale line is gone
        assert "is downloaded" in mp.status.text()
        btn.click()
        assert loads == [dest]
        # Opened again later, a file already on disk says Load at once.
        await page.open_model(PICKED)
        assert mp.button_text("Q8_0") == "Load"
        await page.services.aclose()

    arun(scenario())


def test_chip_words_and_levels_for_rough_fits() -> None:
    from hearth.hardware.speed import Bandwidth, rough_fit
    from hearth.ui.widgets.fit_chip import chip_for_rough

    slow_ram = Bandwidth(ram_bps=5e9)
    fast_ram = Bandwidth(ram_bps=60e9)
    size, kv = 5 * GIB, 512 * 1024 * 1024
    fits = rough_fit(size, kv, MACHINE)
    quick = chip_for_rough(fits, fast_ram, size_bytes=size)
    assert quick.level is ChipLevel.GOOD and quick.text.startswith("Fits · ~")
    crawl = chip_for_rough(fits, slow_ram, size_bytes=size)  # fits, but under 2 tok/s
    assert crawl.level is ChipLevel.WARN and crawl.text.startswith("Fits, slow · ")
    # The same model reads only its active share per token (mixture of experts).
    moe = chip_for_rough(fits, slow_ram, active=0.1, size_bytes=size)
    assert moe.level is ChipLevel.GOOD and moe.tok_s is not None and crawl.tok_s is not None
    assert moe.tok_s > 5 * crawl.tok_s
    wont = chip_for_rough(rough_fit(40 * GIB, kv, MACHINE), fast_ram, size_bytes=40 * GIB)
    assert wont.level is ChipLevel.BAD and wont.text == "Won't fit"


def test_gated_repo_points_at_the_hugging_face_account_settings(
    qtbot: QtBot, arun, hub: FakeHub, tiny_model_q8: Path
) -> None:
    hub.add_repo("corp/gated-GGUF", {Q8: tiny_model_q8.read_bytes()}, gated="manual")
    page = make_page(qtbot)
    mp = page.model_page

    async def scenario() -> None:
        await page.open_model("corp/gated-GGUF")
        status = mp.status.text()
        # The header can't be read without a token: the message names the real place.
        assert "Settings > Hugging Face account" in status, status
        assert mp.fit_texts() == [""] and mp.chip(0) is not None
        assert mp.chip(0).level is ChipLevel.UNKNOWN  # type: ignore[union-attr]

    arun(scenario())
