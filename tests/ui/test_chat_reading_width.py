"""A wide chat keeps a reading width: the transcript's text and the footer (stats,
composer) share one centred column of about 760 px; a narrow one uses all of it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint
from pytestqt.qtbot import QtBot

from hearth.ui.chat.view import READING_WIDTH, ChatView

pytestmark = pytest.mark.ui


def _left(view: ChatView, widget: object) -> int:
    return widget.mapTo(view, QPoint(0, 0)).x()  # type: ignore[attr-defined]


def test_transcript_and_composer_share_the_reading_column(qtbot: QtBot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.set_can_send(True)  # a model is ready: the transcript and composer show
    view.add_user_turn("Hello")
    view.set_stats("12.0 tok/s · 40 tokens")
    view.resize(1600, 700)
    view.show()
    qtbot.waitExposed(view)
    side = (view.transcript.width() - READING_WIDTH) // 2
    assert side > 300
    qtbot.waitUntil(lambda: view.transcript.viewport().width() <= READING_WIDTH)
    text_left = _left(view, view.transcript.viewport())
    # The composer's row starts with its Attach button, then the message box.
    qtbot.waitUntil(lambda: abs(_left(view, view.attach_button) - text_left) < 40)
    assert view.input.width() < READING_WIDTH
    assert abs(_left(view, view.stats_label) - text_left) < 40

    view.resize(700, 600)  # narrower than the reading width: no side margins
    qtbot.waitUntil(lambda: view.transcript.viewport().width() > 600)
    qtbot.waitUntil(lambda: _left(view, view.stats_label) == 0)
