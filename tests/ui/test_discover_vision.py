"""Discover marks a repo with a projector "Vision" and downloads its F16 projector with
the model; the Library then pairs the two. Real pages against the fake Hub over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QPushButton
from pytestqt.qtbot import QtBot

from fake_hub import FakeHub
from gguf_projector import write_projector
from hearth.library.capabilities import model_capabilities
from hearth.library.library import Library
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.discover.page import DiscoverPage
from hearth.ui.pages.services import AppServices
from hearth.ui.tasks import TaskSet
from hub_testing import FAST_RETRY, isolated_hf  # noqa: F401 - autouse: a file keyring

pytestmark = pytest.mark.ui

VISION_REPO = "someone/tiny-vision-GGUF"
TEXT_REPO = "someone/tiny-text-GGUF"
Q8 = "tiny-Q8_0.gguf"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tiny_model_q8: Path, tmp_path: Path):
    projector = write_projector(tmp_path / "proj.gguf").read_bytes()
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        model = tiny_model_q8.read_bytes()
        fake.add_repo(VISION_REPO, {
            Q8: model,
            "mmproj-Q8_0.gguf": projector + b"q8",
            "mmproj-F16.gguf": projector,
            "mmproj-F32.gguf": projector + b"f32",
        })  # fmt: skip
        fake.add_repo(TEXT_REPO, {Q8: model})
        yield fake


def test_vision_chip_and_the_projector_comes_with_the_model(
    qtbot: QtBot, arun, hub: FakeHub
) -> None:
    services = AppServices(
        download_options={"retry": FAST_RETRY, "reserve_bytes": 0, "token_provider": lambda: None}
    )
    page = DiscoverPage(services, TaskSet(), speed=MachineSpeed(ram_bps=40e9))
    qtbot.addWidget(page)
    page.resize(1200, 800)
    page.show()
    mp = page.model_page
    folder = services.paths.models_dir / "someone" / "tiny-vision-GGUF"

    seer = page.picks.card_for("ggml-org/gemma-3-4b-it-GGUF")  # picks.json: vision
    blind = page.picks.card_for("Qwen/Qwen3-8B-GGUF")
    assert seer is not None and blind is not None
    assert seer.vision_chip.isVisible() and not blind.vision_chip.isVisible()

    async def scenario() -> None:
        await page.open_model(TEXT_REPO)
        assert not mp.vision_chip.isVisible()
        await page.open_model(VISION_REPO)
        assert mp.vision_chip.isVisible() and mp.vision_chip.text() == "Vision"
        assert "projector" in mp.vision_chip.toolTip()
        assert list(mp.buttons) == ["tiny-Q8_0"]  # projectors are no rows of their own
        cell = mp.download_button("Q8_0")
        assert cell is not None
        cell.findChild(QPushButton).click()
        await arun.wait_until(lambda: mp.button_text("Q8_0") == "Load", 60, "the model")
        await arun.wait_until((folder / "mmproj-F16.gguf").is_file, 60, "the projector")
        assert sorted(p.name for p in folder.glob("*.gguf")) == ["mmproj-F16.gguf", Q8]
        assert hub.file_gets(VISION_REPO, "mmproj-F16.gguf")
        for other in ("mmproj-Q8_0.gguf", "mmproj-F32.gguf"):
            assert hub.file_gets(VISION_REPO, other) == []
        await services.aclose()

    arun(scenario())
    model = next(m for m in Library(services.paths).models() if m.path.name == Q8)
    assert model.projector == folder / "mmproj-F16.gguf"
    labels = [c.label for c in model_capabilities(model.metadata, model.kind, model.projector)]
    assert "Vision" in labels
