"""The Downloads page: pause and resume (across a restart), a failure and Retry."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from fake_hub import FakeHub
from hearth.hub import DownloadState
from hearth.hub.sidecar import part_path
from hearth.hub.transfer import FLUSH_AT
from hearth.ui.pages.downloads.page import DownloadsPage
from hearth.ui.pages.services import AppServices
from hearth.ui.tasks import TaskSet
from hub_testing import FAST_RETRY, isolated_hf  # noqa: F401 - autouse: a file keyring

pytestmark = pytest.mark.ui

REPO = "hearth/tiny-GGUF"
Q8 = "tiny-Q8_0.gguf"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tiny_model_q8: Path):
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        fake.add_repo(REPO, {Q8: tiny_model_q8.read_bytes()})
        yield fake


def make_page(qtbot: QtBot) -> tuple[AppServices, DownloadsPage]:
    services = AppServices(
        download_options={"retry": FAST_RETRY, "reserve_bytes": 0, "token_provider": lambda: None}
    )
    page = DownloadsPage(services, TaskSet())
    qtbot.addWidget(page)
    page.resize(900, 300)
    page.show()
    return services, page


def test_pause_then_resume_after_a_restart(
    qtbot: QtBot, arun, hub: FakeHub, tiny_model_q8: Path, tmp_path: Path
) -> None:
    hub.throttle_bps = 400_000  # ~4 s for the 1.5 MB file
    size = tiny_model_q8.stat().st_size

    expected = tiny_model_q8.read_bytes()

    async def scenario() -> None:
        services, page = make_page(qtbot)
        handle = services.downloads.add(REPO, Q8)
        await arun.wait_until(lambda: page.row_for(Q8) is not None, 5, "a row")
        row = page.row_for(Q8)
        assert row is not None
        # Past the first write block, so the pause below has buffered bytes to keep.
        await arun.wait_until(lambda: row.last.bytes_done > FLUSH_AT + 50_000, 20, "bytes")
        assert row.pause_button.isVisible() and "/s" in row.detail_label.text()
        assert "left" in row.detail_label.text()  # speed and ETA while running
        shot = tmp_path / "downloads.png"
        assert page.grab().save(str(shot))
        row.pause_button.click()
        await arun.wait_until(lambda: row.last.state is DownloadState.PAUSED, 10, "paused")
        assert row.resume_button.isVisible() and not row.pause_button.isVisible()
        part = part_path(handle.dest)
        kept = part.stat().st_size
        # a pause writes out what had arrived: nothing received is thrown away
        assert FLUSH_AT + 50_000 <= kept < size and row.last.bytes_done == kept

        # "Restart": the app closes (partial file kept); a new one lists it as paused.
        await services.aclose()
        page.close()
        services2, page2 = make_page(qtbot)
        await page2.restore()
        row2 = page2.row_for(Q8)
        assert row2 is not None and row2.last.state is DownloadState.PAUSED
        assert row2.last.bytes_done == kept and row2.resume_button.isVisible()
        gets_before = len(hub.file_gets(REPO, Q8))
        hub.throttle_bps = None
        row2.resume_button.click()
        await arun.wait_until(lambda: row2.last.state is DownloadState.COMPLETED, 30, "done")
        resumed = hub.file_gets(REPO, Q8)[gets_before:]
        assert resumed and resumed[0].headers.get("range") == f"bytes={kept}-"
        assert handle.dest.read_bytes() == expected
        assert not part.exists()
        await services2.aclose()

    arun(scenario())


def test_failure_is_plain_words_and_retry_works(
    qtbot: QtBot, arun, hub: FakeHub, tiny_model_q8: Path
) -> None:
    hub.fail_next(REPO, Q8, *([503] * 8))  # more than the retry policy allows

    expected = tiny_model_q8.read_bytes()

    async def scenario() -> None:
        services, page = make_page(qtbot)
        services.downloads.add(REPO, Q8)
        await arun.wait_until(lambda: page.row_for(Q8) is not None, 5, "a row")
        row = page.row_for(Q8)
        assert row is not None
        await arun.wait_until(lambda: row.last.state is DownloadState.FAILED, 30, "failure")
        text = row.error_label.text()
        assert text and row.error_label.isVisible()
        assert "Traceback" not in text and "Error(" not in text
        assert row.retry_button.isVisible() and not row.resume_button.isVisible()
        hub.fail_next(REPO, Q8)  # clear: nothing more to fail
        hub._fail.clear()
        row.retry_button.click()
        await arun.wait_until(lambda: row.last.state is DownloadState.COMPLETED, 30, "done")
        assert not row.error_label.isVisible() and not row.retry_button.isVisible()
        assert row.last.dest.read_bytes() == expected
        await services.aclose()

    arun(scenario())


def test_finished_download_has_load_and_show_in_folder_and_the_count_follows(
    qtbot: QtBot, arun, hub: FakeHub, tiny_model_q8: Path
) -> None:
    hub.throttle_bps = 2_000_000
    opened: list[str] = []
    services = AppServices(
        download_options={"retry": FAST_RETRY, "reserve_bytes": 0, "token_provider": lambda: None}
    )
    page = DownloadsPage(services, TaskSet(), opener=lambda url: opened.append(url.toLocalFile()))
    qtbot.addWidget(page)
    page.show()
    counts: list[int] = []
    page.active_changed.connect(counts.append)
    loads: list[Path] = []
    page.load_requested.connect(loads.append)

    async def scenario() -> None:
        assert page.empty_label.isVisible() and not page.clear_button.isVisible()  # no rows
        services.downloads.add(REPO, Q8)
        await arun.wait_until(lambda: page.row_for(Q8) is not None, 5, "a row")
        row = page.row_for(Q8)
        assert row is not None
        assert counts[:1] == [1] and page.active_count == 1  # the rail's badge: 1
        assert page.header.subtitle.text() == "1 downloading"
        assert page.clear_button.isVisible() and not page.clear_button.isEnabled()  # none done
        assert not row.load_button.isVisible() and not row.folder_button.isVisible()
        await arun.wait_until(lambda: row.last.state is DownloadState.COMPLETED, 60, "done")
        assert counts[-1] == 0 and page.active_count == 0  # the badge goes away
        assert row.load_button.isVisible() and row.folder_button.isVisible()
        assert not row.pause_button.isVisible() and not row.cancel_button.isVisible()
        row.load_button.click()
        assert loads == [row.last.dest]
        row.folder_button.click()
        assert opened == [str(row.last.dest.parent)]
        assert not row.bar.isVisible() and row.bar.value() == 1000  # nothing left to show
        assert page.header.subtitle.text() == "1 finished" and page.clear_button.isEnabled()
        page.clear_button.click()
        assert page.row_for(Q8) is None and page.empty_label.isVisible()
        assert not page.clear_button.isVisible() and not page.header.subtitle.isVisible()
        await services.aclose()

    arun(scenario())
