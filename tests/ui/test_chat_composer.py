"""The composer as in LM Studio, Jan and ChatGPT, and empty-state cards of one size.

The real main window with no worker (the view is told a model is ready, or that a
reply streams, as ``ChatController`` tells it): at 900x650 and 800x600 the composer is
one line tall, with a single primary button that is Send while idle and Stop while a
reply streams, in the same place; the box grows with its text up to a few lines; Enter
and Ctrl+Enter send, Shift+Enter starts a new line, Esc stops; Regenerate sits on the
stats line. Every page's empty-state cards have one width and one height.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from hearth.ui.chat.composer import MAX_LINES
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import apply_theme

pytestmark = pytest.mark.ui

SMALL_SCREENS = [(900, 650), (800, 600)]


@pytest.fixture
def window(offline_window: MainWindow) -> MainWindow:
    win = offline_window
    apply_theme("light")  # the app's stylesheet: its padding sets the box's height
    win.show()
    return win


def _resize(qtbot: QtBot, window: MainWindow, size: tuple[int, int]) -> None:
    window.resize(*size)  # clamped by the side panels' minimum widths until they fold
    qtbot.waitUntil(lambda: not window.sidebar.isVisible(), timeout=2000)
    window.resize(*size)
    qtbot.waitUntil(lambda: window.size().toTuple() == size, timeout=2000)
    view = window.chat_view  # the chat takes the room the panels left (past the rail)
    qtbot.waitUntil(lambda: view.width() > size[0] - 150, timeout=2000)


def _rect(widget: QWidget, window: QWidget) -> QRect:
    return QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())


def _laid_out(composer: QWidget, button: QWidget) -> bool:
    """The composer's layout has placed ``button`` at its right edge."""
    layout = composer.layout()
    assert layout is not None
    return button.geometry().right() == layout.contentsRect().right()


@pytest.mark.parametrize("size", SMALL_SCREENS)
def test_the_composer_is_one_line_with_one_send_stop_button(
    qtbot: QtBot, window: MainWindow, size: tuple[int, int]
) -> None:
    view = window.chat_view
    composer = view.composer
    view.add_user_turn("An old question", 0)  # an old chat, opened with no model
    assert not view.send_button.isEnabled() and "Load a model" in view.input.placeholderText()
    view.set_can_send(True)  # a model is ready
    assert "Enter to send" in view.input.placeholderText()
    view.set_stats("12.0 tok/s · 40 tokens")
    _resize(qtbot, window, size)
    qtbot.waitUntil(lambda: _laid_out(composer, view.send_button), timeout=2000)
    assert composer.height() <= 60
    assert view.input.height() >= view.input.fontMetrics().lineSpacing()  # a line shows

    # Idle: Send in the primary place, enabled; no Stop.
    send_rect = _rect(view.send_button, window)
    assert view.send_button.isVisible() and view.send_button.isEnabled()
    assert not view.stop_button.isVisible()
    assert composer.primary_button is view.send_button
    assert view.send_button.accessibleName() == "Send"
    assert "Enter" in view.send_button.toolTip()
    assert not view.send_button.icon().isNull() and not view.send_button.text()
    assert send_rect.height() <= 60 and send_rect.width() == send_rect.height()
    bottom = window.statusBar().mapTo(window, QPoint(0, 0)).y()
    assert send_rect.bottom() < bottom and _rect(view.input, window).bottom() < bottom

    # A reply streams: Stop takes Send's place, in the same spot.
    view.set_generating(True)
    qtbot.waitUntil(view.stop_button.isVisible, timeout=2000)
    assert not view.send_button.isVisible() and composer.primary_button is view.stop_button
    assert view.stop_button.isEnabled() and not view.send_button.isEnabled()
    qtbot.waitUntil(lambda: _laid_out(composer, view.stop_button), timeout=2000)
    assert _rect(view.stop_button, window) == send_rect
    assert view.stop_button.accessibleName() == "Stop"
    assert "Esc" in view.stop_button.toolTip() and not view.stop_button.icon().isNull()
    stops: list[bool] = []
    view.stop_requested.connect(lambda: stops.append(True))
    view.stop_button.click()
    assert stops == [True]
    assert composer.height() <= 60

    view.set_generating(False)
    qtbot.waitUntil(view.send_button.isVisible, timeout=2000)
    assert not view.stop_button.isVisible() and view.send_button.isEnabled()


def test_the_box_grows_with_its_text_and_enter_sends(qtbot: QtBot, window: MainWindow) -> None:
    view = window.chat_view
    view.set_can_send(True)
    _resize(qtbot, window, (900, 650))
    box = view.input
    one_line = box.height()
    sent: list[str] = []
    view.send_requested.connect(sent.append)

    # Shift+Enter starts a new line; the box grows a line at a time.
    qtbot.keyClicks(box, "first")
    qtbot.keyClick(box, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(box, "second")
    assert box.toPlainText() == "first\nsecond" and sent == []
    qtbot.waitUntil(lambda: box.visible_lines == 2 and box.height() > one_line, timeout=2000)
    two_lines = box.height()
    qtbot.keyClick(box, Qt.Key.Key_Return)  # Enter sends both lines, as typed
    assert sent == ["first\nsecond"] and box.toPlainText() == ""
    qtbot.waitUntil(lambda: box.height() == one_line, timeout=2000)
    sent.clear()

    # Up to MAX_LINES, then it scrolls instead of taking the transcript's room.
    box.setPlainText("\n".join(f"line {n}" for n in range(MAX_LINES + 5)))
    qtbot.waitUntil(lambda: box.visible_lines == MAX_LINES, timeout=2000)
    qtbot.waitUntil(lambda: box.height() == box.height_for_lines(MAX_LINES), timeout=2000)
    assert box.height() > two_lines
    assert view.transcript.height() >= 250

    # Long wrapped text counts its wrapped lines too.
    box.setPlainText("word " * 40)
    qtbot.waitUntil(lambda: 1 < box.visible_lines < MAX_LINES, timeout=2000)

    # Enter sends (and empties the box, which shrinks back to one line).
    box.setPlainText("Hello there")
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert sent == ["Hello there"] and box.toPlainText() == ""
    qtbot.waitUntil(lambda: box.height() == one_line, timeout=2000)
    # Ctrl+Enter still sends, too; an empty box sends nothing.
    qtbot.keyClicks(box, "Again")
    qtbot.keyClick(box, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert sent == ["Hello there", "Again"]


def test_regenerate_is_on_the_stats_line(qtbot: QtBot, window: MainWindow) -> None:
    view = window.chat_view
    view.set_can_send(True)
    view.add_user_turn("Hi", 0)
    view.add_assistant_message("Hello!", index=1)
    view.set_stats("12.0 tok/s · 40 tokens")
    _resize(qtbot, window, (800, 600))
    button = view.regenerate_button
    assert not button.isVisible()  # nothing to regenerate yet (the controller says)
    view.set_can_regenerate(True)
    assert button.isVisible() and button.isEnabled() and button.accessibleName() == "Regenerate"
    asked: list[bool] = []
    view.regenerate_requested.connect(lambda: asked.append(True))
    button.click()
    assert asked == [True]
    stats, regen = _rect(view.stats_label, window), _rect(button, window)
    assert abs(stats.center().y() - regen.center().y()) <= 4  # one line
    assert regen.right() <= _rect(view.send_button, window).right() + 1  # lined up
    height = view.footer.height()
    view.set_generating(True)  # while a reply streams it hides; the line keeps its height
    assert not button.isVisible()
    qtbot.waitUntil(lambda: view.footer.height() == height, timeout=2000)
    view.set_generating(False)


def _cards_equal(cards: Sequence[QWidget]) -> None:
    sizes = {(card.width(), card.height()) for card in cards}
    assert len(sizes) == 1, [card.geometry() for card in cards]
    tops = {card.y() for card in cards}
    assert len(tops) == 1  # one row, aligned


@pytest.mark.parametrize("size", [(1400, 900), *SMALL_SCREENS])
def test_empty_state_cards_have_one_size_on_every_page(
    qtbot: QtBot, arun, window: MainWindow, size: tuple[int, int]
) -> None:
    if size[0] < 1000:
        _resize(qtbot, window, size)
    else:
        window.resize(*size)
        qtbot.waitUntil(lambda: window.size().toTuple() == size, timeout=2000)
    chat = window.chat_view.empty_state
    assert window.chat_view.showing_empty_state
    qtbot.waitUntil(lambda: all(card.isVisible() for card in chat.cards), timeout=2000)
    _cards_equal(chat.cards)
    for page, state in (
        ("Downloads", window.downloads_page.empty_label),
        ("Library", window.library_page.empty_state),  # once its (empty) scan is done
    ):
        window.show_page(page)
        shown = lambda s=state: all(card.isVisible() for card in s.cards)  # noqa: E731
        arun(arun.wait_until(shown, 20, f"the {page} empty state"))
        _cards_equal(state.cards)
        for card in state.cards:  # each card's text fits inside it
            inner = card.text_label.geometry()
            assert inner.bottom() <= card.height() and inner.right() <= card.width()
