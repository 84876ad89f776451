"""Discover on a machine too small for the model: Download asks first, with the numbers;
Cancel (or Esc) downloads nothing, "Download anyway" downloads it. Real page, real fit
estimate from the file's header, fake Hub over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QPushButton
from pytestqt.qtbot import QtBot

from fake_hub import FakeHub
from hearth.hardware import SystemMemory
from hearth.hardware.fit import FitVerdict
from hearth.hardware.probe import RAM_RESERVE_BYTES
from hearth.ui.pages.discover.fit_confirm import DOWNLOAD_ANYWAY, OBJECT_NAME
from hearth.ui.pages.discover.page import DiscoverPage
from hearth.ui.pages.services import AppServices
from hearth.ui.tasks import TaskSet
from hub_testing import FAST_RETRY, isolated_hf  # noqa: F401 - autouse: a file keyring

pytestmark = pytest.mark.ui

REPO = "hearth/tiny-GGUF"
Q8 = "tiny-Q8_0.gguf"
MIB = 1024**2
# 2 MiB of RAM left for a model and no GPU: the tiny model needs more.
SMALL = SystemMemory(
    total_ram=RAM_RESERVE_BYTES + 4 * MIB,
    available_ram=RAM_RESERVE_BYTES + 2 * MIB,
    physical_cores=2,
    logical_cores=2,
)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tiny_model_q8: Path):
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        fake.add_repo(REPO, {Q8: tiny_model_q8.read_bytes()})
        yield fake


def test_wont_fit_asks_before_downloading(
    qtbot: QtBot, arun, hub: FakeHub, tiny_model_q8: Path
) -> None:
    services = AppServices(
        download_options={"retry": FAST_RETRY, "reserve_bytes": 0, "token_provider": lambda: None},
        system=SMALL,
    )
    page = DiscoverPage(services, TaskSet())
    qtbot.addWidget(page)
    page.resize(900, 500)
    page.show()
    mp = page.model_page
    started: list[str] = []
    page.download_started.connect(started.append)
    dest = services.paths.models_dir / "hearth" / "tiny-GGUF" / Q8
    expected = tiny_model_q8.read_bytes()

    def question() -> QMessageBox:
        shown = [b for b in mp.findChildren(QMessageBox, OBJECT_NAME) if b.isVisible()]
        assert len(shown) == 1, "the won't-fit question is open, once"
        return shown[0]

    async def scenario() -> None:
        await page.open_model(REPO)
        assert mp.fit_texts() == [FitVerdict.WONT_FIT.value]
        download = mp.download_button("Q8_0").findChild(QPushButton)  # type: ignore[union-attr]

        # Cancel: nothing is downloaded.
        download.click()
        box = question()
        assert box.windowModality() != Qt.WindowModality.NonModal
        text = f"{box.text()}\n{box.informativeText()}"
        est = mp.estimates["tiny-Q8_0"]
        assert "Q8_0 probably won't fit" in text
        assert "only 2.0 MiB of RAM free for it" in text  # what this machine has
        assert f"{est.memory.total_bytes / MIB:.1f} MiB of memory" in text  # the estimate
        assert "fail to load" in text
        assert box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
        box.button(QMessageBox.StandardButton.Cancel).click()
        await arun.wait_until(lambda: mp.downloads.confirm_box is None, 5, "the box to close")
        assert not services.has_downloads and started == [] and not dest.exists()
        assert "Not downloading Q8_0" in mp.status.text()

        # Esc is Cancel too.
        download.click()
        qtbot.keyClick(question(), Qt.Key.Key_Escape)
        await arun.wait_until(lambda: mp.downloads.confirm_box is None, 5, "the box to close")
        assert not services.has_downloads and started == []

        # "Download anyway": the download runs to the end.
        download.click()
        box = question()
        anyway = next(b for b in box.buttons() if b.text() == DOWNLOAD_ANYWAY)
        anyway.click()
        await arun.wait_until(lambda: started == [Q8], 5, "the download to start")
        assert "won't fit" in mp.status.text()
        await arun.wait_until(dest.exists, 30, "the download to finish")
        assert dest.read_bytes() == expected
        await services.aclose()

    arun(scenario())
