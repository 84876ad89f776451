"""What a model's download button says, from the latest event of each of its files.

One model can be several files (a split GGUF), so the button sums them: "Download",
"Downloading 34%", "Checking 99%" (sha256 verification), "Paused: resume", "Retry",
and "Load" once every file is verified on disk. Plain logic, tested through the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtWidgets import QPushButton

from hearth.hub import DownloadEvent, DownloadState, GgufModel

LOAD = "Load"
RETRY = "Retry"
RESUME = "Paused: resume"
DOWNLOAD = "Download"


@dataclass(frozen=True)
class ButtonState:
    text: str
    enabled: bool

    @property
    def done(self) -> bool:
        return self.text == LOAD


def button_state(model: GgufModel, events: Sequence[DownloadEvent | None]) -> ButtonState:
    """The button of ``model`` given the latest event of each of its files (None: no
    event for that file yet)."""
    states = {e.state for e in events if e is not None}
    if events and all(e is not None and e.state is DownloadState.COMPLETED for e in events):
        return ButtonState(LOAD, True)
    if DownloadState.FAILED in states:
        return ButtonState(RETRY, True)
    if DownloadState.PAUSED in states:
        return ButtonState(RESUME, True)
    if DownloadState.CANCELLED in states or not states:
        return ButtonState(DOWNLOAD, model.complete)
    done = sum(e.bytes_done for e in events if e is not None)
    total = model.total_size or sum(e.total or 0 for e in events if e is not None)
    pct = f" {min(99, int(100 * done / total))}%" if total else "…"
    word = "Checking" if DownloadState.VERIFYING in states else "Downloading"
    return ButtonState(f"{word}{pct}", False)


def show_state(btn: QPushButton, state: ButtonState, label: str) -> None:
    """Apply ``state`` to ``btn``; Load, the next step, is the primary button."""
    btn.setText(state.text)
    btn.setEnabled(state.enabled)
    btn.setAccessibleName(f"{state.text} {label}")
    if btn.property("primary") != state.done:
        btn.setProperty("primary", state.done)
        btn.style().unpolish(btn)
        btn.style().polish(btn)
