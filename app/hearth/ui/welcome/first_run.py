"""First run: a friendly welcome, this machine, and the recommended model of each kind.

Shown once on first start (``Settings.first_run_done``) and from the Help menu
(:data:`WELCOME_TITLE`). Top to bottom: a title and one line of intro; this machine as a
row of chips (CPU, RAM, GPU, llama.cpp backend: ``welcome_parts``); the offload notice
where it applies; one card per category of the one table of picks (``hub.picks``, the
file Discover opens on), its best fit for this machine (``hub.picks.suggestions``),
drawn with Discover's own card (``ui.pick_card``) and a fit chip with the estimated
speed; then "Browse all models" (Discover) and Close. The window fits its screen's
available area (an 800x600 screen with the notice showing is shorter than the whole
content): the cards scroll, in a frameless area that scrolls only when needed, and the
header and footer stay in view. Until the probes answer, "Checking…" cards hold the
cards' place, so the window opens at its size instead of growing when they come.

Each card's "Download" gets that model the way the empty Chat page's "Get a recommended
model" does (``quick_start``: the app's download manager, then a load), which is what
LM Studio's onboarding offers; a click elsewhere on the card opens its page in Discover
(its other quants), as in Discover. The hardware probe, the llama.cpp backend query and
the memory-bandwidth measurement (the app's shared one, for the speed estimates) run on
worker threads, and the cards appear when they have answered. When the machine has a
GPU that this llama.cpp build can't use (a source install built CPU-only), a notice says
so with the command that rebuilds it (``hardware.offload_notice``): otherwise models
silently run many times slower. Which backend this build has is ``llama_backend``'s.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from hearth.config.launch import is_packaged
from hearth.hardware import SystemMemory, probe_system
from hearth.hardware.fit import FitVerdict
from hearth.hardware.offload_notice import offload_notice, rebuild_command
from hearth.hardware.speed import Bandwidth, RoughFit
from hearth.hub.picks import Pick, PicksFile, default_picks, judge, pick_speed, suggestions
from hearth.supervisor.backend_probe import BackendProbe
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.welcome import llama_backend
from hearth.ui.welcome.llama_backend import BackendInfo
from hearth.ui.welcome.parts import (
    CardsScroll,
    HardwareRow,
    checking_cards,
    fit_chip,
    hardware_facts,
)
from hearth.ui.widgets.fit_chip import FitChip
from hearth.ui.widgets.page_style import IconButton
from hearth.ui.widgets.pick_card import PickCard

log = logging.getLogger(__name__)

WELCOME_TITLE = "Welcome and recommended models"  # the Help menu's entry; messages cite it
DEFAULT_WIDTH = 860  # two cards a row, each wide enough for its chip and size on one line
COLUMNS = 2
FRAME_ALLOWANCE = QSize(16, 48)  # a title bar and borders, until the real frame is known


class FirstRunDialog(QDialog):
    """Welcome: this machine, and the best fit of each category of picks as a card."""

    ready = Signal()  # the probes finished and the cards show fits
    model_chosen = Signal(str, str)  # repo, file: open it in Discover (a card's click)
    download_requested = Signal(object)  # the Pick whose "Download" was clicked
    browse_requested = Signal()  # "Browse all models": Discover's picks

    def __init__(
        self,
        *,
        system: SystemMemory | None = None,
        backend: BackendInfo | None = None,
        backend_probe: BackendProbe | None = None,
        picks: PicksFile | None = None,
        speed: MachineSpeed | None = None,
        parent: QWidget | None = None,
    ) -> None:
        """``system`` and ``backend`` skip their probes; ``picks`` replaces the shipped
        table (tests). ``speed`` is the app's shared bandwidth measurement (Discover's):
        with it the cards are chosen and labelled by speed too; without, by size."""
        super().__init__(parent)
        self._backend_probe = backend_probe or BackendProbe()
        self.setObjectName("welcome")
        self.setWindowTitle("Welcome to Hearth")
        self.setAccessibleName("Welcome to Hearth")
        self.system = system
        self.backend = backend
        self.picks = picks or default_picks()
        self.models: list[Pick] = []  # the cards' picks, once the machine is known
        self.fits: list[RoughFit] = []
        self.cards: list[PickCard] = []
        self.download_buttons: list[QPushButton] = []
        self.speed = speed
        self.bandwidth: Bandwidth | None = None
        self._tasks = TaskSet()

        title = QLabel("Welcome to Hearth", self)
        title.setProperty("role", "display")
        intro = QLabel(
            "Chat with AI models that run privately on this computer. Download one that "
            "suits it to start: it loads when done.",
            self,
        )
        intro.setProperty("role", "muted")
        intro.setWordWrap(True)
        self.hardware = HardwareRow(self)
        self.offload_label = QLabel(self)  # GPU present, CPU-only build: how to fix it
        self.offload_label.setObjectName("offloadNotice")
        self.offload_label.setAccessibleName("GPU offload notice")
        self.offload_label.setWordWrap(True)
        self.offload_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.offload_label.hide()
        self.copy_command_button = IconButton(
            "copy", "Copy the command that rebuilds llama.cpp", self._copy_command,
            "Copy the rebuild command", self,
        )  # fmt: skip
        self.copy_command_button.hide()
        self.rebuild_command = ""
        heading = QLabel("Recommended for this computer", self)
        heading.setProperty("role", "subtitle")
        self.cards_hint = QLabel("Checking what this computer can run…", self)
        self.cards_hint.setProperty("role", "muted")
        self.cards_hint.setWordWrap(True)
        cards_area = QWidget(self)
        cards_area.setObjectName("welcomeCardsContent")
        self.grid = QGridLayout()
        self.grid.setSpacing(SPACE["m"])
        for c in range(COLUMNS):
            self.grid.setColumnStretch(c, 1)
        self._cards_column = QVBoxLayout(cards_area)
        self._cards_column.setContentsMargins(0, 0, 0, 0)
        self._cards_column.addLayout(self.grid)
        self._cards_column.addStretch(1)  # a taller window leaves room under, not taller cards
        self.cards_scroll = CardsScroll(cards_area, self)
        self.placeholders: list[PickCard] = []  # the cards' area, held until they come
        self.columns = 0  # cards a row: COLUMNS, or 1 on a narrow screen

        self.browse_button = IconButton(
            "discover", "Browse all models in Discover", self._browse, "Browse all models", self
        )
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        close = buttons.button(QDialogButtonBox.StandardButton.Close)
        close.setAccessibleName("Close the welcome window")
        close.clicked.connect(self.accept)
        close.setDefault(True)  # Enter closes, as Esc does: never a download by accident
        footer = QHBoxLayout()
        footer.addWidget(self.browse_button)
        footer.addStretch(1)
        footer.addWidget(buttons)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE["xl"], SPACE["xl"], SPACE["xl"], SPACE["l"])
        layout.setSpacing(SPACE["s"])
        layout.addWidget(title)
        layout.addWidget(intro)
        layout.addSpacing(SPACE["xs"])
        layout.addWidget(self.hardware)
        notice_row = QHBoxLayout()  # the command's button beside the notice: a row less
        notice_row.setSpacing(SPACE["s"])
        notice_row.addWidget(self.offload_label, 1)
        notice_row.addWidget(self.copy_command_button, 0, Qt.AlignmentFlag.AlignBottom)
        layout.addLayout(notice_row)
        layout.addSpacing(SPACE["s"])
        layout.addWidget(heading)
        layout.addWidget(self.cards_hint)
        layout.addWidget(self.cards_scroll, 1)
        layout.addSpacing(SPACE["m"])
        layout.addLayout(footer)
        self._show_hardware()
        self.placeholders = checking_cards(self.picks, self)  # until the probes answer
        self._fit_to_screen()
        close.setFocus()
        self.probe_task = self._tasks.spawn(self._probe(), name="first-run-probe")

    def _content_height(self, width: int) -> int:
        """The height everything needs at ``width``, wrapped lines and all the cards
        included (the scroll area asks for the cards' whole height at its width)."""
        layout = self.layout()
        assert layout is not None
        margins = layout.contentsMargins()
        self.cards_scroll.for_width = width - margins.left() - margins.right()
        self.cards_scroll.updateGeometry()
        layout.invalidate()
        return max(layout.totalHeightForWidth(width), layout.totalMinimumSize().height())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """Its default width, and the height its content needs there (a wrapped label's
        own hint would ask for more, leaving an empty band under the cards)."""
        return QSize(DEFAULT_WIDTH, self._content_height(DEFAULT_WIDTH))

    def room(self) -> QSize:
        """The most this window may take: its screen's available area (less the title
        bar and frame the window manager adds) and its own maximum size."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        room = screen.availableGeometry().size() if screen else QSize(DEFAULT_WIDTH, 10_000)
        frame = self.frameGeometry().size() - self.geometry().size()
        if not self.isVisible() or frame.height() <= 0:
            frame = FRAME_ALLOWANCE  # not known before the window manager has framed it
        room -= frame
        return room.boundedTo(self.maximumSize())

    def _fit_to_screen(self) -> None:
        """Its default width and its content's height, within the screen's room: the
        cards scroll where the screen is shorter, the header and footer stay in view."""
        layout = self.layout()
        assert layout is not None
        room = self.room()
        self._place_cards(room.width())
        width = max(min(self.width() if self.isVisible() else DEFAULT_WIDTH, room.width()), 0)
        width = max(width, min(layout.totalMinimumSize().width(), room.width()))
        height = min(self._content_height(width), room.height())
        self.resize(width, max(height, min(layout.totalMinimumSize().height(), room.height())))

    def _place_cards(self, room_width: int) -> None:
        """Two cards a row where the room is wide enough for two without cutting a word,
        else one (a narrow screen: they scroll rather than cut)."""
        cards = self.cards or self.placeholders
        layout = self.layout()
        assert layout is not None
        margins = layout.contentsMargins()
        widest = max((card.minimumSizeHint().width() for card in cards), default=0)
        need = COLUMNS * widest + (COLUMNS - 1) * self.grid.spacing()
        need += (
            margins.left()
            + margins.right()
            + self.cards_scroll.verticalScrollBar().sizeHint().width()
        )
        columns = COLUMNS if need <= room_width else 1
        if columns == self.columns:  # placed so already (new cards reset it)
            return
        self.columns = columns
        for card in cards:
            self.grid.removeWidget(card)
        for c in range(COLUMNS):
            self.grid.setColumnStretch(c, 1 if c < columns else 0)
        for i, card in enumerate(cards):
            self.grid.addWidget(card, i // columns, i % columns)
        self._cards_column.activate()
        self.cards_scroll.updateGeometry()  # its minimum width is the cards'
        layout.activate()

    def _fit_height(self) -> None:
        """Grow or shrink to the content (cards arrived, a notice showed), within the
        screen: no empty area under the cards, nothing squeezed or cut."""
        layout = self.layout()
        assert layout is not None
        layout.activate()
        self._fit_to_screen()

    async def _probe(self) -> None:
        if self.system is None:
            self.system = await in_thread(probe_system)
        self._show_hardware()
        if self.backend is None:
            self.backend = await in_thread(llama_backend.probe_backend, self._backend_probe)
        self._show_hardware()
        self._show_offload_notice()
        if self.speed is not None:
            try:
                self.bandwidth = await self.speed.bandwidth(self._seen())
            except Exception:
                log.exception("no bandwidth measurement: the picks are judged by size")
        self._show_fits()
        self._fit_height()
        self.ready.emit()

    def _show_hardware(self) -> None:
        if self.system is None:
            return
        b = self.backend
        facts = (
            hardware_facts(self.system, b.name, b.gpu_offload, b.error)
            if b
            else hardware_facts(self.system, None)
        )
        self.hardware.show_facts(facts)

    def _show_offload_notice(self) -> None:
        assert self.system is not None and self.backend is not None
        packaged = is_packaged()
        notice = offload_notice(
            self.system,
            self.backend.gpu_offload,
            packaged=packaged,
            probe_error=self.backend.error,
        )
        self.offload_label.setText(notice or "")
        self.offload_label.setVisible(notice is not None)
        # A source install rebuilds with one command: a button puts it on the clipboard.
        fixable = notice is not None and not packaged
        self.rebuild_command = rebuild_command(self.system.gpus[0]) if fixable else ""
        self.copy_command_button.setVisible(fixable)

    def _copy_command(self) -> None:
        QGuiApplication.clipboard().setText(self.rebuild_command)
        self.copy_command_button.setText("Copied: paste it in a terminal")

    def _seen(self) -> SystemMemory:
        """The machine as llama.cpp sees it: without its GPUs when the build can't use
        them."""
        assert self.system is not None
        offload = self.backend.gpu_offload if self.backend else True
        return self.system if offload else self.system.without_gpus()

    def _show_fits(self) -> None:
        """One card per category: its best fit on the machine as llama.cpp sees it."""
        assert self.system is not None
        seen = self._seen()
        self.models = suggestions(self.picks, seen, self.bandwidth)
        self.fits = [judge(m, seen) for m in self.models]
        for card in [*self.placeholders, *self.cards]:
            self.grid.removeWidget(card)
            card.hide()  # now: the height to fit must not count it
            card.deleteLater()
        self.placeholders, self.cards, self.download_buttons = [], [], []
        for m, fit in zip(self.models, self.fits, strict=True):
            kind = self.picks.categories.get(m.category, m.category)
            card = PickCard(m, self, kicker=kind, actions=[self._download_button(m, fit)])
            card.chip.set_chip(fit_chip(fit, self.system, pick_speed(m, fit, self.bandwidth)))
            card.activated.connect(lambda _repo, p=m: self.model_chosen.emit(p.repo, p.file))
            self.cards.append(card)
        self.columns = 0  # not placed yet
        self._place_cards(self.room().width())
        for card in self.cards:
            card.show()  # now, not on the next turn: the height to fit counts it
        self.cards_hint.setText("No recommended models: Browse all models finds more.")
        self.cards_hint.setVisible(not self.models)  # else the intro says what to do

    def _download_button(self, m: Pick, fit: RoughFit) -> QPushButton:
        button = IconButton(
            "downloads", f"Download {m.name} and load it", lambda: self._download(m), "Download"
        )
        button.set_primary(True)
        if fit.verdict is FitVerdict.WONT_FIT:
            button.setEnabled(False)
            button.setToolTip("Too big for this computer: Browse all models for smaller ones.")
        self.download_buttons.append(button)
        return button

    def chip(self, index: int) -> FitChip | None:
        """The fit chip of card ``index`` (None before the cards appear)."""
        return self.cards[index].chip if 0 <= index < len(self.cards) else None

    def _download(self, m: Pick) -> None:
        self.download_requested.emit(m)
        self.accept()

    def _browse(self) -> None:
        self.browse_requested.emit()
        self.accept()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        """A theme switch changes paddings and type sizes: fit the height again."""
        super().changeEvent(event)
        if event.type() is QEvent.Type.StyleChange and self.cards:
            QTimer.singleShot(0, self, self._fit_height)

    def done(self, result: int) -> None:
        self._tasks.cancel_all()
        super().done(result)
