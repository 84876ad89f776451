"""Icons from qtawesome (Material Design Icons, bundled fonts), tinted by the tokens.

One name per use, so a page, the rail and the toolbar agree on what means what.
"""

from __future__ import annotations

import logging

import qtawesome as qta
from PySide6.QtGui import QIcon

from hearth.ui.style.tokens import Tokens

log = logging.getLogger(__name__)

NAMES = {
    "chat": "mdi6.chat-outline",
    "discover": "mdi6.compass-outline",
    "downloads": "mdi6.tray-arrow-down",
    "library": "mdi6.bookshelf",
    "server": "mdi6.server-network",
    "settings": "mdi6.cog-outline",
    "open": "mdi6.folder-open-outline",
    "new_chat": "mdi6.chat-plus-outline",
    "chats": "mdi6.forum-outline",
    "chat_settings": "mdi6.tune-variant",
    "load": "mdi6.rocket-launch-outline",
    "eject": "mdi6.eject-outline",
    "stop": "mdi6.stop",
    "send": "mdi6.send",
    "attach": "mdi6.paperclip",
    "close": "mdi6.close",
    "regenerate": "mdi6.refresh",
    "recommended": "mdi6.star-outline",
    "disk": "mdi6.harddisk",
    "search": "mdi6.magnify",
    "network": "mdi6.lan-connect",
    "copy": "mdi6.content-copy",
    "edit": "mdi6.pencil-outline",
    "delete": "mdi6.delete-outline",
    "export": "mdi6.export-variant",
    "model": "mdi6.cube-outline",
    "folders": "mdi6.folder-multiple-outline",
    "data_folders": "mdi6.folder-cog-outline",
    "account": "mdi6.account-circle-outline",
    "engines": "mdi6.cloud-outline",
    "tools": "mdi6.tools",
    "appearance": "mdi6.palette-outline",
    "key": "mdi6.key-outline",
    "config": "mdi6.code-braces",
    "requests": "mdi6.swap-vertical",
    "attach_image": "mdi6.image-plus-outline",
}


def icon(kind: str, t: Tokens, *, color: str | None = None) -> QIcon:
    """The icon for ``kind`` (a key of NAMES) in the theme's text colour (or ``color``)."""
    name = NAMES[kind]
    try:
        made: QIcon = qta.icon(
            name,
            color=color or t.text,
            color_active=color or t.text,
            color_selected=t.on_accent,
            color_disabled=t.disabled_text,
        )
    except Exception:  # a font that failed to load must not take the window down
        log.exception("could not make the %s icon (%s)", kind, name)
        return QIcon()
    return made
