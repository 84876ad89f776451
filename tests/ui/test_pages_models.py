"""Discover → Downloads → Library → Load → Chat against the fake Hub and a real worker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtWidgets import QPushButton, QWidget
from pytestqt.qtbot import QtBot

from fake_hub import FakeFile, FakeHub
from hearth.hardware.fit import FitVerdict
from hearth.hub import DownloadState
from hearth.hub.sidecar import part_path
from hearth.supervisor import LoadOptions, WorkerState
from hearth.ui.chat.turns import ChatSettings
from hearth.ui.pages.services import AppServices
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import apply_theme, clear_theme
from hub_testing import FAST_RETRY, isolated_hf  # noqa: F401 - autouse: a file keyring

pytestmark = pytest.mark.ui

REPO = "hearth/tiny-GGUF"
Q8 = "tiny-Q8_0.gguf"
Q4 = "tiny-Q4_K_M.gguf"
VERDICTS = {v.value for v in FitVerdict}
MODEL_CARD = """---
license: apache-2.0
base_model: hearth/tiny
---
# Tiny (GGUF)

A **1.4M-parameter** llama-architecture model with random weights, made for Hearth's
tests. ![banner](https://example.com/banner.png)

## Files

| File | Quant | Use |
| --- | --- | --- |
| tiny-Q8_0.gguf | Q8_0 | closest to the original |
| tiny-Q4_K_M.gguf | Q4_K_M | smaller and faster |

## Prompt format

```
<|user|>
{prompt}<|end|>
<|assistant|>
```

> It answers in noise: use it to try the app, not for answers.
"""


def download_options() -> dict[str, object]:
    return {"retry": FAST_RETRY, "reserve_bytes": 0, "token_provider": lambda: None}


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tiny_model_q8: Path, tiny_model_q4km: Path):
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        card = FakeFile(MODEL_CARD.encode(), lfs=False)
        files = {
            Q8: tiny_model_q8.read_bytes(),
            Q4: tiny_model_q4km.read_bytes(),
            "README.md": card,
        }
        fake.add_repo(REPO, files)
        fake.add_repo("hearth/other-tiny-GGUF", {"other-Q8_0.gguf": tiny_model_q8.read_bytes()})
        yield fake


@pytest.fixture
def window(qtbot: QtBot, tmp_path: Path) -> MainWindow:
    win = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=LoadOptions(n_ctx=1024, n_parallel=1),
        chat_settings=ChatSettings(temperature=0.8, max_tokens=16),
        chats_db=tmp_path / "chats.db",
        services=AppServices(download_options=download_options()),
    )
    qtbot.addWidget(win)
    win.show()
    return win


def shot(widget: QWidget, tmp_path: Path, name: str) -> None:
    """A grab kept with the test's files (the docs' set is test_screenshots.py's)."""
    assert widget.grab().save(str(tmp_path / f"{name}.png"))


def test_search_download_library_load_chat(
    qtbot: QtBot, arun, window: MainWindow, hub: FakeHub, tiny_model_q8: Path, tmp_path: Path
) -> None:
    assert window.page_names()[:4] == ["Chat", "Discover", "Downloads", "Library"]
    discover = window.show_page("Discover")
    assert discover is window.discover_page
    page = window.discover_page
    page.page_size = 1
    outcomes: list[str] = []
    window.chat.generation_finished.connect(outcomes.append)

    expected = tiny_model_q8.read_bytes()

    async def scenario() -> None:
        # Search with paging: one result per page, "Load more" fetches the next.
        qtbot.keyClicks(page.search_box, "tiny")
        await page.search()
        assert len(page.shown_repos()) == 1 and page.more_button.isVisible()
        await page.load_more()
        assert sorted(page.shown_repos()) == sorted([REPO, "hearth/other-tiny-GGUF"])

        # The model page: both quantizations, sizes, fit badges off the Qt thread.
        await page.open_model(REPO)
        mp = page.model_page
        files = [mp.table.item(r, 0).text() for r in range(mp.table.rowCount())]
        assert sorted(files) == sorted([Q8, Q4])
        assert all(text in VERDICTS for text in mp.fit_texts()), mp.fit_texts()
        assert mp.model_card_url().toString() == f"{hub.url}/{REPO}"
        await arun.wait_until(lambda: "Prompt format" in mp.model_card.toPlainText(), 10, "card")
        ranged = [r for r in hub.requests if (r.headers.get("range") or "").startswith("bytes=0-")]
        assert ranged, "the fit check reads the header with a ranged GET"
        shot(window, tmp_path, "discover")

        # Download Q8_0 from its row: the Downloads page shows it until it is verified.
        cell = mp.download_button("Q8_0")
        assert cell is not None
        cell.findChild(QPushButton).click()
        downloads = window.downloads_page
        await arun.wait_until(lambda: downloads.row_for(Q8) is not None, 10, "a row")
        row = downloads.row_for(Q8)
        assert row is not None
        await arun.wait_until(
            lambda: row.last.state is DownloadState.COMPLETED, 60, "the download to finish"
        )
        dest = window.services.paths.models_dir / "hearth" / "tiny-GGUF" / Q8
        assert dest.read_bytes() == expected
        assert row.bar.value() == 1000 and "Done" in row.detail_label.text()
        await arun.wait_until(lambda: mp.button_text("Q8_0") == "Load", 10, "Load on Discover")
        assert "Downloading" not in mp.status.text()
        assert not row.load_button.isHidden() and not row.folder_button.isHidden()
        assert window.nav.badge("Downloads") == 0
        assert not row.pause_button.isVisible() and not part_path(dest).exists()

        # A second, slow download: its row button counts up, the rail shows a badge.
        hub.throttle_bps = 150_000
        q4_button = mp.download_button("Q4_K_M").findChild(QPushButton)  # type: ignore[union-attr]
        q4_button.click()
        await arun.wait_until(lambda: downloads.row_for(Q4) is not None, 10, "the Q4 row")
        q4_row = downloads.row_for(Q4)
        assert q4_row is not None
        await arun.wait_until(lambda: q4_row.last.bytes_done > 0, 20, "Q4 bytes")
        await arun.wait_until(lambda: "%" in mp.button_text("Q4_K_M"), 10, "a percentage")
        assert mp.button_text("Q4_K_M").startswith("Downloading ") and not q4_button.isEnabled()
        assert window.nav.badge("Downloads") == 1
        window.resize(1400, 900)
        for theme in ("light", "dark"):
            apply_theme(theme)
            await asyncio.sleep(0.05)  # palette events
            window.show_page("Discover")
            shot(window, tmp_path, f"discover-model-{theme}")
            window.show_page("Downloads")
            shot(window, tmp_path, f"downloads-{theme}")
        clear_theme()
        downloads.cancel(q4_row.download_id)
        await arun.wait_until(lambda: window.nav.badge("Downloads") == 0, 10, "no badge")
        assert mp.button_text("Q4_K_M") == "Download"
        hub.throttle_bps = None

        # The Library lists it (refreshed when the download completed); Load → Chat.
        library = window.library_page
        window.show_page("Library")
        await arun.wait_until(lambda: library.model_named(Q8) is not None, 20, "library row")
        model = library.model_named(Q8)
        assert model is not None and model.metadata is not None
        assert model.metadata.quantization == "Q8_0"
        texts = [library.table.item(0, c).text() for c in range(8)]
        assert texts[1] == "Q8_0" and texts[5] == "llama" and texts[6] == "Hearth"
        shot(window, tmp_path, "library")  # docs: test_screenshots.py's
        library.load_model(model)  # Load: the Load dialog for it, not a direct load
        dialog = window.extras.load_dialog
        assert dialog is not None and dialog.model_path == model.path
        assert window.supervisor.process is None
        await dialog.info_task
        dialog.load_button.click()
        assert window.pages.currentWidget() is window.pages.widget(0)  # back on Chat
        await arun.wait_until(
            lambda: window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR),
            120,
            "the model to load",
        )
        assert window.supervisor.status.state is WorkerState.READY, window.supervisor.status
        assert window.chat.send("Hello there") is not None
        await arun.wait_until(lambda: outcomes, 60, "the reply")
        assert outcomes == ["done"] and window.chat.turns[-1].content

    arun(scenario())
