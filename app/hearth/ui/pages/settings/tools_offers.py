"""The lines above Settings → Tools' list that offer a next step: import the servers
of Claude Desktop, Cursor or LM Studio (one line per app whose file was found, with what
it would add and what it would skip), and move secrets that sit in ``mcp.json`` in plain
text (a file written by hand or copied from another app) into the secret store."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from hearth.tools.mcp_import import ImportOffer
from hearth.ui.style.tokens import SPACE


class Offers(QWidget):
    """``import_chosen`` carries the offer whose button was pressed; ``seal_chosen``
    fires for "Move them to the secret store"."""

    import_chosen = Signal(object)
    seal_chosen = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[QWidget] = []
        self.buttons: list[QPushButton] = []
        self.labels: list[QLabel] = []
        self.plain_label = QLabel(self)
        self.plain_label.setObjectName("toolsPlainSecrets")
        self.plain_label.setWordWrap(True)
        self.seal_button = QPushButton("Move them to the secret store", self)
        self.seal_button.setAccessibleName("Move the secrets in mcp.json to the secret store")
        self.seal_button.clicked.connect(self.seal_chosen)
        self.plain_row = self._row(self.seal_button, self.plain_label)
        self.plain_row.setVisible(False)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(SPACE["xs"])
        self._layout.addWidget(self.plain_row)

    def show_offers(self, offers: list[ImportOffer], primary: bool) -> None:
        """One line per offer; ``primary`` when there is no server yet (the next step)."""
        for old in self.rows:
            self._layout.removeWidget(old)
            old.deleteLater()
        self.rows, self.labels, self.buttons = [], [], []
        for offer in offers:
            label = QLabel(offer.summary(), self)
            label.setProperty("role", "muted")
            label.setWordWrap(True)
            button = QPushButton(f"Import from {offer.source.app}", self)
            button.setAccessibleName(f"Import the MCP servers of {offer.source.app}")
            button.setProperty("primary", primary)
            button.clicked.connect(lambda _checked=False, o=offer: self.import_chosen.emit(o))
            self.rows.append(self._row(button, label))
            self._layout.addWidget(self.rows[-1])
            self.labels.append(label)
            self.buttons.append(button)
        self._fit()

    def show_plain(self, plain: list[str]) -> None:
        """``plain``: "server: KEY" for each secret the file holds in plain text."""
        count = len(plain)
        self.plain_label.setText(
            f"mcp.json holds {count} secret{'' if count == 1 else 's'} in plain text "
            f"({'; '.join(plain)})." if plain else ""
        )  # fmt: skip
        self.plain_row.setVisible(bool(plain))
        self._fit()

    def _row(self, button: QPushButton, label: QLabel) -> QWidget:
        row = QWidget(self)
        button.setParent(row)
        label.setParent(row)
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(SPACE["s"])
        line.addWidget(button)
        line.addWidget(label, 1)
        return row

    def _fit(self) -> None:
        self.setVisible(bool(self.rows) or not self.plain_row.isHidden())
