"""The Load dialog with models already loaded: "Load alongside" or "Replace", and an
estimate that counts the loaded models.

The worker keeps several models under a count and a memory budget. With models loaded,
the dialog's one Load becomes two buttons: "Load alongside" (the default: the others
stay) and "Replace" (they are unloaded first). A line under the estimate says what is
loaded, how much of the budget it holds, and whether this model fits beside it; if it
doesn't (or the count is full), it says whether loading it alongside unloads models that
requests loaded (least recently used first) or needs one of the user's own ejected first
(those are never unloaded to make room). The free memory the estimate shows is measured now,
with those models in memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from PySide6.QtWidgets import QDialogButtonBox, QLabel, QPushButton, QWidget

from hearth.core.residency import LoadedModel, ResidencyLimits
from hearth.core.units import format_bytes

log = logging.getLogger(__name__)


def beside_words(
    need_bytes: int | None, models: Sequence[LoadedModel], limits: ResidencyLimits | None
) -> str:
    """What loading alongside means for memory: the loaded models, their share of the
    budget, and whether ``need_bytes`` more fits."""
    used = sum(m.memory_bytes for m in models)
    names = ", ".join(f"{m.info.id} ({format_bytes(m.memory_bytes)})" for m in models)
    noun = "model" if len(models) == 1 else "models"
    head = f"Loaded now: {names}"
    if limits is None:
        return f"{head}. Alongside them, this model adds its own memory."
    budget = limits.memory_budget_bytes
    head += f": {format_bytes(used)} of the {format_bytes(budget)} budget."
    full = len(models) >= limits.max_models
    if need_bytes is None:
        return head
    if not full and used + need_bytes <= budget:
        left = budget - used - need_bytes
        return f"{head} Alongside them it fits, with {format_bytes(left)} of the budget left."
    why = (
        f"{len(models)} of {limits.max_models} {noun} are loaded"
        if full
        else f"it needs {format_bytes(used + need_bytes - budget)} more than the budget leaves"
    )
    if need_bytes > budget:
        return f"{head} It is larger than the whole budget (Settings → Models)."
    # Only models loaded by requests are ever unloaded to make room; the ones loaded
    # here stay until ejected (server/residency.py), so say which case this is.
    by_requests = [m for m in models if not m.pinned]
    count_after = len(models) - len(by_requests)
    used_after = used - sum(m.memory_bytes for m in by_requests)
    if by_requests and count_after < limits.max_models and used_after + need_bytes <= budget:
        return (
            f"{head} Alongside them {why}: models loaded by requests are unloaded first, "
            "least recently used first (a model answering a request never is)."
        )
    return (
        f"{head} Alongside them {why}, and models you loaded stay until ejected: eject "
        "one first, or choose Replace."
    )


class ResidentChoice:
    """Adds "Load alongside" beside the dialog's Load (renamed "Replace") when models
    are loaded, and the line about them; ``replace`` is the button that was pressed."""

    def __init__(
        self,
        buttons: QDialogButtonBox,
        load_button: QPushButton,
        models: Sequence[LoadedModel],
        limits: ResidencyLimits | None,
        parent: QWidget,
    ) -> None:
        self.models, self.limits = tuple(models), limits
        self.replace = False
        self.remote = False
        self.load_button = load_button
        self.label = QLabel(parent)
        self.label.setObjectName("residentsNote")
        self.label.setProperty("role", "muted")
        self.label.setWordWrap(True)
        self.label.setVisible(bool(self.models))
        # Load (the primary, Enter) becomes "Load alongside"; a second button replaces.
        self.replace_button = buttons.addButton("Replace", QDialogButtonBox.ButtonRole.AcceptRole)
        self.replace_button.setVisible(bool(self.models))
        self.replace_button.setAccessibleName("Unload the loaded models, then load this one")
        self.replace_button.setToolTip("Unload " + ", ".join(m.info.id for m in self.models))
        # The box's clicked comes before its accepted: the choice is known by then.
        buttons.clicked.connect(self._clicked)

    def _clicked(self, button: object) -> None:
        self.replace = button is self.replace_button

    @property
    def asking(self) -> bool:
        """Whether the dialog asks "Load alongside" or "Replace" (models are loaded, and
        the chosen model is a local one)."""
        return bool(self.models) and not self.remote

    def show_for(self, *, remote: bool) -> None:
        """Label the buttons for a local model ("Load", or "Load alongside" and
        "Replace") or a remote one ("Use": nothing is loaded)."""
        self.remote = remote
        alongside = self.asking
        self.load_button.setText("Use" if remote else "Load alongside" if alongside else "Load")
        self.load_button.setAccessibleName(
            "Load the model alongside the loaded ones" if alongside else "Load the model"
        )
        self.replace_button.setVisible(alongside)
        self.label.setVisible(alongside)

    def update(self, need_bytes: int | None) -> None:
        if self.models:
            self.label.setText(beside_words(need_bytes, self.models, self.limits))

    def set_enabled(self, enabled: bool) -> None:
        self.replace_button.setEnabled(enabled)
