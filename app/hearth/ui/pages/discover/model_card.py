"""The model card shown inline on Discover's model page: the repo's README, sanitised.

Rendered with the transcript's markdown (``md_render.markdown_html``: raw HTML in the
README is shown as text, never run) and its theme CSS. Nothing is fetched while
rendering: images become their alt text (a remote image would tell the server who
opened the card), and ``loadResource`` answers nothing for any URL. Links open in the
browser only on a click, and only http(s) ones.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QTextBrowser, QWidget

from hearth.ui.chat.md_render import markdown_css, markdown_html
from hearth.ui.style.theme import tokens_for

log = logging.getLogger(__name__)

MAX_CARD_CHARS = 60_000  # beyond this the card is cut (the Hub page has the rest)
_IMG_RE = re.compile(r"<img\b[^>]*?>", re.IGNORECASE)
_ALT_RE = re.compile(r'\balt="([^"]*)"', re.IGNORECASE)

UrlOpener = Callable[[QUrl], object]


def _image_text(match: re.Match[str]) -> str:
    alt = _ALT_RE.search(match.group(0))
    label = html.unescape(alt.group(1)).strip() if alt else ""
    return f"<i>[image{': ' + html.escape(label) if label else ''}]</i>"


def card_html(markdown: str) -> str:
    """The README as safe HTML: markdown rendered, raw HTML escaped, no images."""
    text = markdown[:MAX_CARD_CHARS]
    body = markdown_html(text)
    body = _IMG_RE.sub(_image_text, body)
    if len(markdown) > MAX_CARD_CHARS:
        body += "<p><i>The model card continues on Hugging Face.</i></p>"
    return body


class ModelCard(QTextBrowser):
    """A read-only, theme-following view of one model card."""

    def __init__(self, parent: QWidget | None = None, *, opener: UrlOpener | None = None):
        super().__init__(parent)
        self.setObjectName("modelCard")
        self.setAccessibleName("Model card")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.anchorClicked.connect(self._open_link)
        self._opener: UrlOpener = opener or QDesktopServices.openUrl
        self._markdown: str | None = None
        self.opened: list[QUrl] = []
        self.document().setDocumentMargin(12)
        self.show_message("")

    def show_markdown(self, markdown: str) -> None:
        self._markdown = markdown
        self._render()

    def show_message(self, text: str) -> None:
        self._markdown = None
        self._apply_css()
        self.setHtml(f"<p>{html.escape(text)}</p>")

    def _apply_css(self) -> None:
        self.document().setDefaultStyleSheet(markdown_css(tokens_for(self.palette())))

    def _render(self) -> None:
        if self._markdown is None:
            return
        self._apply_css()
        self.setHtml(card_html(self._markdown))

    def loadResource(self, kind: int, url: QUrl | str) -> Any:  # noqa: N802 - Qt override
        """Never fetch anything a card refers to (images, style sheets)."""
        return None

    def _open_link(self, url: QUrl) -> None:
        if url.scheme() in ("http", "https"):
            self.opened.append(url)
            self._opener(url)
        else:
            log.info("not opening a model card link with scheme %r", url.scheme())

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._render()
