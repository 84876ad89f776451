"""The Server page's "Endpoint" card: the on/off switch, the address with a Copy button,
a coloured state chip, the port and the access options.

A person arriving from LM Studio's "Developer" page looks for three things before
anything else: is the server running, at which address, and how to copy it. So the card
opens with the switch and a chip ("Running", "Off", ...), then the address in a fixed
font beside its Copy button, then a sentence saying who may connect. The options below
(port, LAN, "Require an API key") change less often. What the state *is* stays
``ServerPanel``'s (``endpoint_state`` turns the supervisor's facts into the words); this
card only shows it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QWidget,
)

from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE
from hearth.ui.widgets.copy_feedback import flash_copied
from hearth.ui.widgets.section import Section
from hearth.ui.widgets.switch import Switch

log = logging.getLogger(__name__)

TONES = ("on", "starting", "off", "error")  # QSS: QLabel#endpointState[tone=...]


@dataclass(frozen=True)
class EndpointState:
    """What the card shows: the chip's tone and word, and the sentence under the URL."""

    tone: str  # one of TONES
    chip: str
    text: str


def endpoint_state(
    *,
    enabled: bool,
    error: str | None,
    worker_running: bool,
    listening_port: int | None,
    port: int,
    url: str,
    lan: bool,
    require_key: bool,
    model_loaded: bool = True,
) -> EndpointState:
    """The endpoint's state in words, from the supervisor's facts. With no model loaded
    it still listens: it lists the library, and a request naming a model loads it."""
    if error:  # the supervisor kept it off (keys unreadable, port taken): say why
        return EndpointState("error", "Error", f"Off: {error}")
    if not enabled:
        return EndpointState("off", "Off", "Off: only Hearth itself can use the model.")
    if not worker_running:
        return EndpointState("starting", "Waiting", f"On (port {port}); waiting to start.")
    if listening_port != port:
        return EndpointState("starting", "Starting", f"On (port {port}); starting…")
    text = f"On: serving at {url}/v1"
    if lan:
        text += " to the local network (API key required)"
    elif require_key:
        text += " (API key required)"
    else:
        text += " to this computer; no API key needed"
    if not model_loaded:
        # Not "no model is loaded": a client may have loaded one since, unseen here.
        text += "; a request that names a library model loads it (GET /v1/models lists them)"
    return EndpointState("on", "Running", text + ".")


class EndpointBox(Section):
    """The endpoint's controls; ``ServerPanel`` connects them and calls ``show_state``."""

    def __init__(self, *, enabled: bool, port: int, lan: bool, require_key: bool,
                 parent: QWidget | None = None) -> None:  # fmt: skip
        super().__init__(
            "Endpoint",
            "One address for other apps: editors, agents and scripts, on this computer "
            "or on your network.",
            parent,
            icon_kind="network",
        )
        self.setObjectName("endpointSection")
        self.enabled_check = Switch("Serve to other apps", self)
        self.enabled_check.setObjectName("endpointSwitch")
        self.enabled_check.setAccessibleName("Endpoint on")
        self.enabled_check.setChecked(enabled)
        self.state_chip = QLabel(self)
        self.state_chip.setObjectName("endpointState")
        self.state_chip.setAccessibleName("Endpoint state")
        self.state_chip.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.url_label = QLabel(self)
        self.url_label.setObjectName("endpointUrl")
        self.url_label.setAccessibleName("Endpoint address")
        self.url_label.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.url_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy_url_button = QPushButton("Copy", self)
        self.copy_url_button.setObjectName("copyEndpointUrl")
        self.copy_url_button.setAccessibleName("Copy the endpoint address")
        self.copy_url_button.setToolTip(
            "OpenAI-style clients add /v1; Anthropic and Ollama clients use it as it is."
        )
        self.copy_url_button.clicked.connect(self.copy_url)
        self.status_label = QLabel(self)
        self.status_label.setObjectName("endpointStatus")
        self.status_label.setAccessibleName("Endpoint status")
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.port_spin = QSpinBox(self)
        self.port_spin.setAccessibleName("Port")
        self.port_spin.setRange(1, 65535)
        self.port_spin.setValue(port)
        self.port_spin.setMinimumWidth(96)
        self.apply_button = QPushButton("Apply", self)
        self.apply_button.setAccessibleName("Apply endpoint settings")
        self.lan_check = Switch("Allow other machines on the network (LAN)", self)
        self.lan_check.setAccessibleName("LAN access")
        self.lan_check.setChecked(lan)
        self.lan_check.setToolTip("Listens on every interface; clients need an API key.")
        self.require_key_check = Switch("Require an API key (on this computer too)", self)
        self.require_key_check.setAccessibleName("Require an API key")
        self.require_key_check.setChecked(require_key)
        self._layout()
        self.refresh_icons()

    def _layout(self) -> None:
        top = QHBoxLayout()
        top.setSpacing(SPACE["s"])
        top.addWidget(self.enabled_check, 1)
        top.addWidget(self.state_chip, 0, Qt.AlignmentFlag.AlignVCenter)
        address = QHBoxLayout()
        address.setSpacing(SPACE["s"])
        address.addWidget(self.url_label, 1)
        address.addWidget(self.copy_url_button)
        port_name = QLabel("Port", self)
        port_name.setBuddy(self.port_spin)
        port_row = QHBoxLayout()
        port_row.setSpacing(SPACE["s"])
        port_row.addWidget(port_name)
        port_row.addWidget(self.port_spin)
        port_row.addWidget(self.apply_button)
        port_row.addStretch(1)
        self.body.addLayout(top)
        self.body.addLayout(address)
        self.body.addWidget(self.status_label)
        self.body.addSpacing(SPACE["xs"])
        self.body.addLayout(port_row)
        self.body.addWidget(self.lan_check)
        self.body.addWidget(self.require_key_check)
        self.body.addStretch(1)  # beside a taller keys card, the space goes below

    def show_state(self, state: EndpointState, url: str, *, message: bool = True) -> None:
        """Show ``state`` and ``url``; ``message=False`` keeps the status line as it is
        (while a change is being applied, which says so there)."""
        self.state_chip.setText(f"● {state.chip}")
        self.state_chip.setProperty("tone", state.tone)
        self.url_label.setText(url)
        self.url_label.setProperty("live", state.tone == "on")
        self.url_label.setToolTip(
            "Listening now." if state.tone == "on" else "The address once the endpoint is on."
        )
        for widget in (self.state_chip, self.url_label):
            widget.style().unpolish(widget)  # a dynamic property: restyle
            widget.style().polish(widget)
        if message:
            self.status_label.setText(state.text)

    def state_tone(self) -> str:
        return str(self.state_chip.property("tone") or "")

    def copy_url(self) -> None:
        """Copy the address shown; the button says "Copied" for a moment."""
        QGuiApplication.clipboard().setText(self.url_label.text())
        flash_copied(self.copy_url_button)

    def refresh_icons(self) -> None:
        t = tokens_for(self.palette())
        self.copy_url_button.setIcon(icon("copy", t))

    def refresh_icon(self) -> None:  # Section's hook on every palette change
        super().refresh_icon()
        if hasattr(self, "copy_url_button"):
            self.refresh_icons()
