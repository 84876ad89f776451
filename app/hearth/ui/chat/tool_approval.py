"""Asking before a tool runs: the server, the tool and its full arguments.

Users of other hosts complain of approval dialogs that hide the arguments (jan#5656):
here they are shown whole, as indented JSON in a scrollable, selectable box (long lines
wrap; nothing is cut). The choices are Deny, Allow once, and Always allow *this tool of
this server* (never a whole server, never every tool); standing permissions are listed,
and revoked, in Settings → Tools. Deny is the default and Esc.

The dialog is not modal, so the window's Stop stays in reach, and it never blocks the
Qt thread: ``ask_approval`` awaits it. Stop cancels the await, which closes the dialog
(the call is kept as stopped).
"""

from __future__ import annotations

import asyncio
import html

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from hearth.tools.chat_loop import Approval, ToolRequest

ALWAYS_TEXT = "Always allow this tool of this server"


class ApprovalDialog(QDialog):
    def __init__(self, request: ToolRequest, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("toolApproval")
        self.setWindowTitle("Allow a tool call?")
        self.request = request
        self.choice = Approval.DENY
        heading = QLabel(
            f"The model wants to call <b>{html.escape(request.tool)}</b> of the MCP server "
            f"<b>{html.escape(request.server)}</b> with these arguments:",
            self,
        )
        heading.setObjectName("toolApprovalHeading")
        heading.setWordWrap(True)
        self.arguments = QPlainTextEdit(self)
        self.arguments.setObjectName("toolArguments")
        self.arguments.setAccessibleName("The tool call's arguments")
        self.arguments.setReadOnly(True)
        self.arguments.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.arguments.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.arguments.setPlainText(request.pretty_arguments)
        self.arguments.setMinimumSize(440, 160)
        note = QLabel("Standing permissions are listed in Settings → Tools.", self)
        note.setObjectName("toolApprovalNote")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(self)
        self.deny_button = self._button(buttons, "Deny", Approval.DENY, "denyTool")
        self.once_button = self._button(buttons, "Allow once", Approval.ONCE, "allowToolOnce")
        self.always_button = self._button(buttons, ALWAYS_TEXT, Approval.ALWAYS, "allowTool")
        self.deny_button.setDefault(True)
        self.deny_button.setFocus()
        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addWidget(self.arguments, 1)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.resize(560, 380)

    def _button(
        self, box: QDialogButtonBox, text: str, choice: Approval, name: str
    ) -> QPushButton:
        role = (
            QDialogButtonBox.ButtonRole.RejectRole
            if choice is Approval.DENY
            else QDialogButtonBox.ButtonRole.AcceptRole
        )
        button = box.addButton(text, role)
        button.setObjectName(name)
        button.setAutoDefault(False)
        button.clicked.connect(lambda _c=False: self._choose(choice))
        return button

    def _choose(self, choice: Approval) -> None:
        self.choice = choice
        if choice is Approval.DENY:
            self.reject()
        else:
            self.accept()


async def ask_approval(parent: QWidget, request: ToolRequest) -> Approval:
    """Show the dialog and wait for the choice (closing it counts as Deny)."""
    dialog = ApprovalDialog(request, parent)
    future: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()

    def finished(_result: int) -> None:
        if not future.done():
            future.set_result(dialog.choice)

    dialog.finished.connect(finished)
    dialog.show()  # above the window (its parent), which stays usable: Stop
    dialog.raise_()
    dialog.activateWindow()
    try:
        return await future
    finally:
        dialog.finished.disconnect(finished)
        dialog.close()
        dialog.deleteLater()
