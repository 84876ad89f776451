"""The chat's composer: one message box that grows with its text, and one round button.

As in LM Studio, Jan and ChatGPT: the box starts one line tall and grows up to
``MAX_LINES`` (then scrolls), so a small window keeps its transcript; Enter (or
Ctrl+Enter) sends and Shift+Enter starts a new line. At the box's right sits a single
primary button, Send while idle and Stop while a reply streams: two buttons that take
turns in the same place, so each keeps one meaning, one accessible name and one
tooltip. Regenerate is not here: it is on each reply's card and on the stats line
(``ChatView``).

``ChatView`` decides when the buttons are enabled and what they do; this only builds
them and sizes the box, so the view's module stays about the transcript.

Images (issue 23): an attach button left of Send, drops on the composer, and pastes
into the box (an image, or image files) go to the tray of thumbnails above the box
(``image_attach``); the button says when the model can't see (``image_hint``). Other
dropped files leave as ``files_dropped``, for the documents feature.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, QSize, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QKeyEvent, QResizeEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from hearth.chats.images import ImageFileError, check_count
from hearth.ui.chat.image_attach import (
    ImageAttachments,
    ImageTray,
    has_media,
    is_image_file,
    local_files,
)
from hearth.ui.chat.image_hint import AttachButton, VisionState
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)

MAX_LINES = 6  # the box grows to this many lines, then scrolls
HINT = "Send a message — Enter to send, Shift+Enter for a new line"
HINT_NO_MODEL = "Load a model to send a message (Ctrl+L)"
ICON_SIZE = QSize(18, 18)


class ChatInput(QPlainTextEdit):
    """The message box: Enter or Ctrl+Enter submits, Shift+Enter inserts a newline.

    Its height follows its text (wrapped lines included), from one line to
    ``MAX_LINES``: the size hint is computed from the document's line count, and the
    layout is told whenever that count changes (typing, pasting, a narrower window).
    """

    submitted = Signal()
    metrics_changed = Signal()
    """The style or font changed: a line's height (and the buttons') may differ."""
    media_inserted = Signal(QMimeData)
    """A paste or drop of images or files (text is inserted as usual): the composer's."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabChangesFocus(True)  # Tab leaves the box, as in a form
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._lines = 1
        layout = self.document().documentLayout()
        layout.documentSizeChanged.connect(lambda _size: self._refit())

    def event(self, event: QEvent) -> bool:
        handled = super().event(event)
        if event.type() in (QEvent.Type.Polish, QEvent.Type.StyleChange, QEvent.Type.FontChange):
            self.updateGeometry()  # the stylesheet's padding and the font set a line's height
            self.metrics_changed.emit()
        return handled

    # ------------------------------------------------------------------ keys
    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        mods = event.modifiers()
        if enter and not mods & Qt.KeyboardModifier.ShiftModifier:
            # Enter and Ctrl+Enter send (Shift+Enter falls through: a new line).
            self.submitted.emit()
            event.accept()
            return
        super().keyPressEvent(event)

    # --- images (issue 23): a paste or drop of images/files goes to the composer ---
    def canInsertFromMimeData(self, source: QMimeData) -> bool:  # noqa: N802 - Qt override
        return has_media(source) or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 - Qt override
        if has_media(source):
            self.media_inserted.emit(source)
            return
        super().insertFromMimeData(source)

    # --- end images ---

    # ------------------------------------------------------------------ size
    @property
    def visible_lines(self) -> int:
        """How many lines tall the box is now (1 to MAX_LINES)."""
        return self._lines

    def _text_lines(self) -> int:
        """Lines the text takes at the current width (wrapped lines counted)."""
        # For a plain-text document the layout's height is its line count.
        return max(1, round(self.document().documentLayout().documentSize().height()))

    def height_for_lines(self, lines: int) -> int:
        """The box's height when it shows ``lines`` lines of text."""
        frame = self.contentsMargins()  # the stylesheet's border and padding
        doc = 2 * self.document().documentMargin()
        text = lines * self.fontMetrics().lineSpacing()
        return int(text + doc + frame.top() + frame.bottom())

    def _refit(self) -> None:
        lines = min(MAX_LINES, self._text_lines())
        if lines != self._lines:
            self._lines = lines
            self.updateGeometry()
        # A scroll bar only once the box stops growing: below that, all the text shows.
        fits = self._text_lines() <= MAX_LINES
        policy = (
            Qt.ScrollBarPolicy.ScrollBarAlwaysOff if fits else Qt.ScrollBarPolicy.ScrollBarAsNeeded
        )
        self.setVerticalScrollBarPolicy(policy)
        if fits:
            self.verticalScrollBar().setValue(0)  # no line scrolled half out of sight

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(super().sizeHint().width(), self.height_for_lines(self._lines))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(super().minimumSizeHint().width(), self.height_for_lines(1))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._refit()  # a new width wraps the text into more or fewer lines


class SquareButton(QPushButton):
    """An icon-only button as tall as it is wide: ``side`` px, set by the composer.

    A size hint rather than a fixed size, because the stylesheet sets a button's
    minimum height when it polishes it (which may come after ``setFixedSize``).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.side = 36
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(self.side, self.side)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return self.sizeHint()


class ChatComposer(QWidget):
    """The message box with the Send/Stop button at its right, bottom-aligned."""

    # --- images (issue 23) ---
    files_dropped = Signal(list)
    """Files that are not images, dropped or pasted (``list[Path]``): documents."""
    discover_requested = Signal(str)
    """The "can't see images" popover's pick: a repo to open in Discover ("": none)."""
    # --- end images ---

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatComposer")
        self.input = ChatInput(self)
        self.input.setObjectName("chatInput")
        self.input.setAccessibleName("Message")
        self.input.setPlaceholderText(HINT_NO_MODEL)
        self.send_button = self._button("Send", "sendButton", "Send (Enter)")
        self.stop_button = self._button("Stop", "stopButton", "Stop generating (Esc)")
        self.stop_button.hide()
        # --- images (issue 23): the tray of thumbnails above, attach left of Send ---
        self.tray = ImageTray(self)
        self.images = ImageAttachments(self.tray, tokens_for(self.palette()), self)
        self.attach_button = AttachButton(self)
        self.attach_button.setIconSize(ICON_SIZE)
        self.attach_button.pick_files.connect(self.choose_files)
        self.attach_button.popover.discover_requested.connect(self.discover_requested)
        self.input.media_inserted.connect(self.attach_mime)
        self.setAcceptDrops(True)
        col = QVBoxLayout(self)
        col.setContentsMargins(SPACE["l"], SPACE["xs"], SPACE["l"], SPACE["s"])
        col.setSpacing(SPACE["xs"])
        col.addWidget(self.tray)
        self.row = row = QHBoxLayout()  # the box and its buttons, under the tray
        row.setContentsMargins(0, 0, 0, 0)
        col.addLayout(row)
        # --- end images ---
        row.setSpacing(SPACE["s"])
        row.addWidget(self.input, 1, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.attach_button, 0, Qt.AlignmentFlag.AlignBottom)  # images
        for button in (self.send_button, self.stop_button):
            row.addWidget(button, 0, Qt.AlignmentFlag.AlignBottom)
        self.input.metrics_changed.connect(self.fit_buttons)
        self.fit_buttons()

    def _button(self, text: str, name: str, tip: str) -> SquareButton:
        """An icon-only primary button; its name and tooltip say what it does."""
        button = SquareButton(self)
        button.setObjectName(name)
        button.setToolTip(tip)
        button.setAccessibleName(text)
        button.setProperty("primary", True)
        button.setIconSize(ICON_SIZE)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        return button

    def fit_buttons(self) -> None:
        """Square buttons as tall as a one-line box, so the row stays one line tall."""
        side = self.input.height_for_lines(1)
        for button in (self.send_button, self.stop_button):
            button.side = side
            button.updateGeometry()
        self.attach_button.setFixedSize(side, side)  # images

    # --- images (issue 23) ---
    def add_tool(self, button: QWidget) -> None:
        """A tool button at the box's left, bottom-aligned like Send (the composer's
        own layout is a column: the image tray above this row)."""
        self.row.insertWidget(0, button, 0, Qt.AlignmentFlag.AlignBottom)

    def set_vision(self, state: VisionState) -> None:
        """Whether the chat's model sees images (the attach button says so)."""
        self.attach_button.set_state(state)

    def choose_files(self) -> None:
        """The attach button's file dialog."""
        paths, _filter = QFileDialog.getOpenFileNames(
            self, "Attach images", "", "Images (*.png *.jpg *.jpeg *.webp *.gif *.bmp)"
        )
        self.attach_files([Path(p) for p in paths])

    def attach_files(self, paths: list[Path]) -> None:
        """Attach the images among ``paths``; other files go out as ``files_dropped``."""
        images = [p for p in paths if is_image_file(p)]
        others = [p for p in paths if not is_image_file(p)]
        if images and self.attach_button.blind:
            self.attach_button.explain()
        elif images:
            self.images.add_files(images)
        if others:
            self.files_dropped.emit(others)

    def attach_mime(self, mime: QMimeData) -> None:
        """A paste or drop: files by path, or an image on the clipboard."""
        files = local_files(mime)
        if files:
            self.attach_files(files)
        elif mime.hasImage():
            if self.attach_button.blind:
                self.attach_button.explain()
            else:
                self.images.add_image(mime.imageData())

    def images_fit(self, count: int) -> bool:
        """Whether a turn may carry ``count`` images in all (every image of a chat goes
        with each turn): only to a model that sees, and within the worker's limit. If
        not, the button or the tray says why; the caller keeps the images."""
        if self.attach_button.blind:
            self.attach_button.explain()
            return False
        try:
            check_count(count)
        except ImageFileError as exc:
            self.tray.say(str(exc))
            return False
        return True

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if has_media(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        self.attach_mime(event.mimeData())
        event.acceptProposedAction()

    # --- end images ---

    def set_can_send(self, can_send: bool) -> None:
        """The box says how to send, or (an old chat open, no model) what to do first."""
        self.input.setPlaceholderText(HINT if can_send else HINT_NO_MODEL)

    def set_generating(self, generating: bool) -> None:
        """Stop takes Send's place while a reply streams (focus moves with it)."""
        had_focus = self.send_button.hasFocus() or self.stop_button.hasFocus()
        self.send_button.setVisible(not generating)
        self.stop_button.setVisible(generating)
        if had_focus:
            (self.stop_button if generating else self.send_button).setFocus()

    @property
    def primary_button(self) -> QPushButton:
        """The button in the primary place now: Stop while generating, else Send."""
        return self.stop_button if self.stop_button.isVisibleTo(self) else self.send_button
