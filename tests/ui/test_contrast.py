"""Every text colour in the transcript meets WCAG AA (4.5:1) on its background, in
both themes.

The chat view renders a reply holding every markdown element (headings, emphasis,
inline code, fenced code with and without highlighting, an indented code block,
tables, blockquotes, lists, links) plus a user turn with its "edit" link and the
notes under replies. The colours checked are the ones the renderer really emitted:
the transcript document's HTML is parsed, and each run of text gets the innermost
colour and background declared around it, falling back to the QPalette the
transcript paints with. Nothing here reads the tokens to decide what "should" be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from hearth.ui.chat.message_card import CardMeta
from hearth.ui.chat.view import ChatView
from hearth.ui.style.theme import apply_theme
from hearth.ui.style.tokens import DARK, LIGHT, contrast_ratio

pytestmark = pytest.mark.ui

AA = 4.5

REPLY = """# A heading
## A second heading
### A third one

Plain text, **bold**, *italic*, `inline code` and [a link](https://example.com).

> A blockquote with `code` and [a link](https://example.org) in it.

- a bullet with `code`
- another bullet

1. first
2. second

| Name | Value |
| --- | --- |
| alpha | `1` |
| beta | [docs](https://example.net) |

```python
import os  # a comment
def greet(name):
    print("hello", name, 42)
    plain_token = other_token
```

```
a fence with no language: every token unhighlighted
```

    an indented code block
"""

_COLOR = re.compile(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{6})")
_BACKGROUND = re.compile(r"background-color:\s*(#[0-9a-fA-F]{6})")


@dataclass(frozen=True)
class Run:
    text: str
    color: str
    background: str


class _Runs(HTMLParser):
    """Text runs of Qt's rich-text HTML with their effective colours."""

    def __init__(self, text: str, base: str, link: str) -> None:
        super().__init__(convert_charrefs=True)
        self.default_color, self.base, self.link = text, base, link
        self.stack: list[tuple[str, str | None, str | None]] = []
        self.runs: list[Run] = []
        self.in_head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("meta", "br", "img", "hr"):
            return
        values = dict(attrs)
        style = values.get("style") or ""
        color = _COLOR.search(style)
        background = _BACKGROUND.search(style)
        bg = background.group(1) if background else values.get("bgcolor")
        fg = color.group(1) if color else (self.link if tag == "a" else None)
        self.stack.append((tag, fg, bg))
        self.in_head = self.in_head or tag == "head"

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop()[0] == tag:
                break
        if tag == "head":
            self.in_head = False

    def handle_data(self, data: str) -> None:
        if self.in_head or not data.strip():
            return
        fg = next((c for _, c, _ in reversed(self.stack) if c), self.default_color)
        bg = next((b for _, _, b in reversed(self.stack) if b), self.base)
        self.runs.append(Run(data.strip(), fg.lower(), bg.lower()))


def _render(qtbot: QtBot, qapp: QApplication, theme: str) -> tuple[ChatView, list[Run]]:
    apply_theme(theme)
    qapp.processEvents()
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(900, 700)
    view.set_can_send(True)
    view.show()
    view.add_user_turn("Is **this** readable? With `code` too.", 0)
    meta = CardMeta("tiny-model", (1, 3), "Reasoning, unfolded.", 2.0, reasoning_open=True)
    view.add_assistant_message(REPLY, index=1, meta=meta)
    view.add_assistant_message("", "stopped")
    view.add_assistant_message("", "Error: something broke", error=True)
    qapp.processEvents()
    palette = view.transcript.palette()
    parser = _Runs(
        palette.color(QPalette.ColorRole.Text).name(),
        view.transcript.viewport().palette().color(QPalette.ColorRole.Base).name(),
        palette.color(QPalette.ColorRole.Link).name(),
    )
    parser.feed(view.transcript.document().toHtml())
    return view, parser.runs


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_transcript_colour_meets_aa(qtbot: QtBot, qapp: QApplication, theme: str) -> None:
    view, runs = _render(qtbot, qapp, theme)
    texts = " ".join(r.text for r in runs)
    for expected in ("A heading", "inline code", "a link", "blockquote", "bullet", "Name",
                     "beta", "greet", "plain_token", "no language", "indented", "2/3",
                         "Thought for 2 s", "Reasoning, unfolded", "tiny-model",
                     "[stopped]", "[Error"):  # fmt: skip
        assert expected in texts, f"{expected!r} was not rendered"
    failures = [
        f"{r.text[:30]!r}: {r.color} on {r.background} = {ratio:.2f}"
        for r in runs
        if (ratio := contrast_ratio(r.color, r.background)) < AA
    ]
    assert not failures, "\n".join(failures)

    # The parse saw the pieces that used to fail in dark mode, each on its own background.
    pairs = {(r.text, r.background) for r in runs}
    backgrounds = {r.background for r in runs}
    assert len(backgrounds) >= 4, backgrounds  # page, inline code, code block, table header
    header_bg = next(bg for text, bg in pairs if text == "Name")
    code_bg = next(bg for text, bg in pairs if text.startswith("plain_token"))
    inline_bg = next(bg for text, bg in pairs if text == "inline code")
    page_bg = next(bg for text, bg in pairs if text.startswith("Plain text"))
    assert len({header_bg, code_bg, inline_bg, page_bg}) == 4
    colours = {r.color for r in runs if r.background == code_bg}
    assert len(colours) >= 5, colours  # highlighted kinds, plus plain code text

    # The widgets around the transcript: the footer and the input, from their palettes.
    for widget, fg_role, bg_role in (
        (view.stats_label, QPalette.ColorRole.WindowText, QPalette.ColorRole.Window),
        (view.input, QPalette.ColorRole.Text, QPalette.ColorRole.Base),
        (view.input, QPalette.ColorRole.PlaceholderText, QPalette.ColorRole.Base),
    ):
        pal = widget.palette()
        ratio = contrast_ratio(pal.color(fg_role).name(), pal.color(bg_role).name())
        assert ratio >= AA, (widget.objectName(), fg_role, ratio)


def test_a_theme_switch_redraws_in_the_new_colours(qtbot: QtBot, qapp: QApplication) -> None:
    view, light_runs = _render(qtbot, qapp, "light")
    assert {r.background for r in light_runs} >= {LIGHT.code_bg, LIGHT.inline_code_bg}
    with qtbot.waitSignal(view.theme_changed, timeout=2000):
        apply_theme("dark")
        qapp.processEvents()
    assert view.tokens is DARK
    view.clear_transcript()  # what ChatController does on theme_changed
    view.add_assistant_message(REPLY)
    html = view.transcript.document().toHtml().lower()
    assert DARK.code_bg in html and DARK.inline_code_bg in html
    assert LIGHT.code_bg not in html and LIGHT.inline_code_bg not in html
