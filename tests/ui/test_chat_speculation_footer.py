"""The chat footer shows a speculative reply's draft acceptance rate beside tok/s; the
rate is saved with the reply and shown again when the chat is reopened (issue 16); the
docs' screenshot of that footer.

A real worker loads the synthetic target with its draft model (``spec_models``: they
agree by construction), as the Load dialog passes it. The reply's draft counts go to
SQLite with its other stats; a new chat, then reopening this one from the sidebar,
shows the same footer, read back from the store. The chat is then shot at 900x650 in
both themes; with HEARTH_SAVE_DOCS_SCREENSHOT=1 the PNGs are copied to
docs/screenshots/ as ``chat-speculative-<theme>.png``.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from hearth.chats import ChatStore
from hearth.supervisor import LoadOptions, WorkerState
from hearth.supervisor.client_types import ChatStreamStats
from hearth.ui.chat.turns import ChatSettings, draft_acceptance, stats_text
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import apply_theme
from hearth.ui.style.tokens import BY_NAME

pytestmark = pytest.mark.ui

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
NARROW = (900, 650)
RATE = re.compile(r"tok/s · drafts (\d+)% accepted · TTFT")


def test_footer_wording() -> None:
    assert draft_acceptance(40, 30) == "drafts 75% accepted"
    assert draft_acceptance(0, 0) is None  # a plain reply says nothing of drafts
    assert draft_acceptance(None, None) is None
    assert "drafts" not in stats_text(ChatStreamStats(tokens_per_s=12.0, ttft_ms=30.0), 512)


def test_a_speculative_reply_shows_its_rate_live_and_when_reopened(
    qtbot: QtBot, arun: Any, spec_models: dict[str, Path], tmp_path: Path
) -> None:
    options = LoadOptions(n_ctx=1024, n_parallel=1, spec_mode="draft",
                          draft_model=str(spec_models["draft"]))  # fmt: skip
    chats_db = tmp_path / "chats.db"
    window = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=options,
        chat_settings=ChatSettings(temperature=0.0, max_tokens=48),
        chats_db=chats_db,
    )
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    chat, view, sidebar = window.chat, window.chat_view, window.sidebar
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    async def scenario() -> str:
        window.open_model(spec_models["target"])
        await arun.wait_until(
            lambda: window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR),
            120,
            "the model and its draft to load",
        )
        assert window.supervisor.status.state is WorkerState.READY, window.supervisor.status
        view.input.setPlainText("Hello world, the cat is")
        view.send_button.click()
        await arun.wait_until(lambda: bool(outcomes), 60, "the reply")
        assert outcomes == ["done"], view.transcript_text()
        live = str(view.stats_label.text())
        assert RATE.search(live) is not None, live
        cid = chat.conversation_id
        assert cid is not None

        # Another chat, then this one again from the sidebar: the footer is read back.
        chat.new_chat()
        assert view.stats_label.text() == ""
        await sidebar.refresh()
        row = sidebar.list.item(sidebar.shown_ids().index(cid))
        sidebar.list.itemClicked.emit(row)
        await arun.wait_until(lambda: chat.conversation_id == cid, 10, "the chat to reopen")
        assert view.stats_label.text() == live
        return live

    live = arun(scenario())
    rate = RATE.search(live)
    assert rate is not None and int(rate.group(1)) >= 50  # the pair agrees by construction

    # What the store holds: the counts behind that rate, on the reply's row.
    store = ChatStore(chats_db)
    reply = [m for m in store.messages(chat.conversation_id or 0) if m.role == "assistant"][-1]
    store.close()
    drafted, accepted = reply.stats.draft_tokens, reply.stats.accepted_tokens
    assert drafted is not None and accepted is not None and 0 < accepted <= drafted
    assert f"drafts {100 * accepted / drafted:.0f}% accepted" in live

    async def shots() -> list[Path]:
        window.resize(*NARROW)  # clamped by the panels' minimum widths, until they fold
        await arun.wait_until(lambda: not window.sidebar.isVisible(), 5, "the fold")
        await arun.wait_until(
            lambda: window.minimumSize().width() <= NARROW[0], 5, "the folded minimum width"
        )
        window.resize(*NARROW)
        await arun.wait_until(lambda: window.size().toTuple() == NARROW, 5, "the size")
        saved = []
        for theme in ("light", "dark"):
            apply_theme(theme)
            await asyncio.sleep(0.05)  # palette events reach the transcript on the next turn
            assert view.tokens is BY_NAME[theme]
            assert view.stats_label.text() == live  # a restyle keeps the footer
            out = tmp_path / f"chat-speculative-{theme}.png"
            assert window.grab().save(str(out))
            saved.append(out)
        return saved

    for out in arun(shots()):
        if os.environ.get("HEARTH_SAVE_DOCS_SCREENSHOT"):
            DOCS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out, DOCS / out.name)
