"""The chat footer shows the draft acceptance rate beside tok/s for a speculative reply.

A real worker loads the synthetic target with its draft model (they agree by
construction: acceptance near 100%), chosen as the Load dialog passes it
(``LoadOptions.spec_mode/draft_model``); the reply's timings carry the draft counts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from hearth.supervisor import LoadOptions, WorkerState
from hearth.supervisor.client_types import ChatStreamStats
from hearth.ui.chat_turns import ChatSettings, draft_acceptance, stats_text
from hearth.ui.main_window import MainWindow

pytestmark = pytest.mark.ui


def test_footer_wording() -> None:
    assert draft_acceptance(40, 30) == "drafts 75% accepted"
    assert draft_acceptance(0, 0) is None  # a plain reply says nothing of drafts
    assert draft_acceptance(None, None) is None
    assert "drafts" not in stats_text(ChatStreamStats(tokens_per_s=12.0, ttft_ms=30.0), 512)


def test_a_speculative_reply_shows_its_acceptance_rate(
    qtbot: QtBot, arun: Any, spec_models: dict[str, Path], tmp_path: Path
) -> None:
    options = LoadOptions(n_ctx=1024, n_parallel=1, spec_mode="draft",
                          draft_model=str(spec_models["draft"]))  # fmt: skip
    window = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=options,
        chat_settings=ChatSettings(temperature=0.0, max_tokens=48),
        chats_db=tmp_path / "chats.db",
    )
    qtbot.addWidget(window)
    window.show()
    outcomes: list[str] = []
    window.chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        window.open_model(spec_models["target"])
        await arun.wait_until(
            lambda: window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR),
            120,
            "the model and its draft to load",
        )
        assert window.supervisor.status.state is WorkerState.READY, window.supervisor.status
        window.chat_view.input.setPlainText("Hello world, the cat is")
        window.chat_view.send_button.click()
        await arun.wait_until(lambda: bool(outcomes), 60, "the reply")

    arun(scenario())
    assert outcomes == ["done"]
    footer = window.chat_view.stats_label.text()
    found = re.search(r"tok/s · drafts (\d+)% accepted", footer)
    assert found is not None, footer
    assert int(found.group(1)) >= 50  # the pair agrees by construction
