"""The Server panel's live request log: one row per HTTP request the worker answered.

A person turning the endpoint on for an IDE or a team wants to see both what ran (model,
tokens, speed) and what was refused (a wrong key, an unknown model), so every row shows
the HTTP status, failures in red. Rows come from ``GET /hearth/v1/requests`` (newest
first); cells are updated in place so a poll every second costs almost nothing.

The app's own traffic is hidden: ``GET /health`` answered 503 means "still loading",
which is what the GUI's start-up probes are told, and a successful
``POST /hearth/v1/access`` is the app turning its endpoint on or off. Neither is a
request from another program; a refused access call (someone without the app's token)
is still shown.

Statuses are coloured by what they mean to the person reading: success green, a
client that hung up (499, e.g. Stop) amber, refusals and errors red; all three are the
theme's text tokens, which meet WCAG AA on the table's rows. Numbers are right-aligned so
their digits line up, and the model name is elided in the middle (its quant is at the
end). With no rows the table says what to do to get one (``RequestsBox``).
"""

from __future__ import annotations

import datetime as dt
import http
import logging
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE, Tokens
from hearth.ui.widgets.empty_overlay import EmptyOverlay
from hearth.ui.widgets.section import Section

log = logging.getLogger(__name__)

LOG_COLUMNS = (
    "Time", "Request", "Status", "Model", "Prompt", "Cached", "Completion", "tok/s", "TTFT",
    "Duration",
)  # fmt: skip
COL_STATUS = LOG_COLUMNS.index("Status")
COL_REQUEST = LOG_COLUMNS.index("Request")
COL_MODEL = LOG_COLUMNS.index("Model")
NUMERIC = frozenset(
    LOG_COLUMNS.index(c) for c in ("Prompt", "Cached", "Completion", "tok/s", "TTFT", "Duration")
)
SHOWN_AS = {"Completion": "Output"}  # a header's words where the column name is long
HEADER_TIPS = {
    "Prompt": "Prompt tokens",
    "Cached": "Prompt tokens found in the cache (not computed again)",
    "Completion": "Generated (completion) tokens",
    "tok/s": "Generation speed, tokens per second",
    "TTFT": "Time to first token",
    "Duration": "From the request's arrival to its last byte",
}
TABLE_MIN_PX = 220  # the header and six rows
MODEL_PX = 170  # "qwen2.5-coder…Q4_K_M": the middle is elided
REQUEST_MIN_PX = 170  # "POST /v1/chat/completions"
HIDE_FIRST = ("Cached", "Duration", "TTFT", "tok/s")  # on a narrow table, in this order
CLIENT_CLOSED = 499
STATUS_HINTS = {
    400: "The tool sent something the endpoint could not use; the reply says what.",
    401: "No API key, or a wrong one: copy a key from API keys into the tool.",
    403: "Refused: the request came from an address or web page that is not allowed.",
    404: "Unknown model name or path: copy the config again for the loaded model.",
    CLIENT_CLOSED: "The client closed the connection before the reply ended (e.g. Stop).",
    503: "The model was loading or switching; the tool can retry.",
}
EMPTY_ON = "No requests yet: paste a config above into your tool, and its requests show up here."
EMPTY_OFF = "No requests yet: turn the endpoint on, then paste a config above into your tool."
HEALTH_PATH = "/health"
ACCESS_PATH = "/hearth/v1/access"
LOADING = http.HTTPStatus.SERVICE_UNAVAILABLE


def apps_own(row: dict[str, Any]) -> bool:
    """The app's own housekeeping: start-up health probes told "still loading", and
    its endpoint switch answered OK."""
    path, status = row.get("path"), row.get("status")
    return (path == HEALTH_PATH and status == LOADING) or (
        path == ACCESS_PATH and status == http.HTTPStatus.OK
    )


def status_text(row: dict[str, Any]) -> str:
    """ "200 OK · stop", "401 Unauthorized"; a worker without HTTP statuses: the reason."""
    code = row.get("status")
    reason = str(row.get("finish_reason") or "")
    if not isinstance(code, int):
        return reason
    try:
        text = f"{code} {http.HTTPStatus(code).phrase}"
    except ValueError:
        if code == CLIENT_CLOSED:  # its reason is always "cancelled": say it once
            return "499 Client closed"
        text = str(code)
    return f"{text} · {reason}" if reason else text


def failed(row: dict[str, Any]) -> bool:
    code = row.get("status")
    return isinstance(code, int) and code >= 400


def tone(row: dict[str, Any]) -> str:
    """ "good" (2xx), "warn" (the client hung up), "danger" (refused or failed), or ""."""
    code = row.get("status")
    if not isinstance(code, int):
        return ""
    if code == CLIENT_CLOSED:
        return "warn"
    if code >= 400:
        return "danger"
    return "good" if 200 <= code < 300 else ""


def status_hint(row: dict[str, Any]) -> str:
    """What a failed status most likely means for the person setting a tool up."""
    code = row.get("status")
    if not isinstance(code, int) or code < 400:
        return ""
    return STATUS_HINTS.get(code, "The request failed.")


def tone_color(t: Tokens, name: str) -> str:
    """The text colour of a tone; each is checked against the rows in the contrast test."""
    return {"good": t.good, "warn": t.warn, "danger": t.danger}.get(name, t.text)


def row_cells(row: dict[str, Any]) -> tuple[str, ...]:
    finished = row.get("finished_at")
    when = (
        dt.datetime.fromtimestamp(float(finished)).strftime("%H:%M:%S")
        if isinstance(finished, int | float)
        else ""
    )
    request = " ".join(str(row[k]) for k in ("method", "path") if row.get(k))
    tps, ttft, took = row.get("decode_tokens_per_s"), row.get("ttft_ms"), row.get("duration_ms")
    return (
        when,
        request,
        status_text(row),
        str(row.get("model") or ""),
        _num(row.get("prompt_tokens")),
        _num(row.get("cached_tokens")),
        _num(row.get("completion_tokens")),
        f"{tps:.1f}" if isinstance(tps, int | float) else "",
        f"{ttft:.0f} ms" if isinstance(ttft, int | float) else "",
        f"{took:.0f} ms" if isinstance(took, int | float) else "",
    )


class RequestLogTable(QTableWidget):
    """The rows; with none, a sentence in the middle says how to get some."""

    def __init__(self, parent: QWidget | None = None) -> None:
        self._rows: list[dict[str, Any]] = []  # before Qt's first change event
        super().__init__(0, len(LOG_COLUMNS), parent)
        self.setAccessibleName("Request log")
        self.setHorizontalHeaderLabels([SHOWN_AS.get(name, name) for name in LOG_COLUMNS])
        for col, name in enumerate(LOG_COLUMNS):
            head = self.horizontalHeaderItem(col)
            if head is not None:
                head.setToolTip(HEADER_TIPS.get(name, ""))
                if col in NUMERIC:
                    head.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setAlternatingRowColors(True)
        self.setShowGrid(False)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # it fits
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)  # by fit_columns
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(40)
        header.setHighlightSections(False)
        self._fitted: tuple[tuple[int, int], ...] = ()
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + SPACE["m"])
        self.empty_label = EmptyOverlay(self, EMPTY_OFF, "requestsEmpty")

    @property
    def showing_empty_state(self) -> bool:
        return self.empty_label.isVisibleTo(self)

    def set_endpoint_on(self, on: bool) -> None:
        """The empty state's advice depends on whether other apps can connect yet."""
        self.empty_label.setText(EMPTY_ON if on else EMPTY_OFF)

    def show_rows(self, rows: list[dict[str, Any]]) -> None:
        rows = [row for row in rows if not apps_own(row)]
        self._rows = rows
        t = tokens_for(self.palette())
        self.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for col, text in enumerate(row_cells(row)):
                item = self.item(r, col)
                if item is None:
                    item = QTableWidgetItem(text)
                    if col in NUMERIC:
                        item.setTextAlignment(
                            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                        )
                    self.setItem(r, col, item)
                elif item.text() != text:
                    item.setText(text)
                if col == COL_MODEL:
                    item.setToolTip(text)
                elif col == COL_REQUEST:
                    client = row.get("client")
                    item.setToolTip(f"From {client}" if client else "")
            self._color_status(r, row, t)
        self.empty_label.setVisible(not rows)
        self.fit_columns()

    def fit_columns(self) -> None:
        """Each column as wide as its texts (the model name at most ``MODEL_PX``), the
        request path the rest; where the width is short, the least needed columns are
        hidden (``HIDE_FIRST``) before the table would scroll sideways."""
        avail = self.viewport().width()
        header = self.horizontalHeader()
        was_hidden = [c for c in range(len(LOG_COLUMNS)) if self.isColumnHidden(c)]
        for col in was_hidden:  # a hidden column measures as nothing: show it to measure
            self.setColumnHidden(col, False)
        widths = {
            col: max(
                self.sizeHintForColumn(col),
                header.sectionSizeHint(col),
                header.minimumSectionSize(),
            )
            for col in range(len(LOG_COLUMNS))
            if col != COL_REQUEST
        }
        widths[COL_MODEL] = min(widths[COL_MODEL], MODEL_PX)
        hidden: set[int] = set()
        for name in HIDE_FIRST:
            if sum(w for c, w in widths.items() if c not in hidden) + REQUEST_MIN_PX <= avail:
                break
            hidden.add(LOG_COLUMNS.index(name))
        shown = {c: w for c, w in widths.items() if c not in hidden}
        shown[COL_REQUEST] = max(REQUEST_MIN_PX, avail - sum(shown.values()))
        fitted = tuple(sorted(shown.items()))
        for col in range(len(LOG_COLUMNS)):
            self.setColumnHidden(col, col in hidden)
        if fitted == self._fitted:
            return  # unchanged: a width the user dragged stays until something changes
        self._fitted = fitted
        for col, width in shown.items():
            self.setColumnWidth(col, width)

    def hidden_columns(self) -> list[str]:
        return [name for col, name in enumerate(LOG_COLUMNS) if self.isColumnHidden(col)]

    def _color_status(self, r: int, row: dict[str, Any], t: Tokens) -> None:
        item = self.item(r, COL_STATUS)
        if item is None:
            return
        item.setForeground(QBrush(QColor(tone_color(t, tone(row)))))
        item.setToolTip(status_hint(row))

    def column_texts(self, column: str) -> list[str]:
        """The texts shown in ``column``, top (newest) first."""
        col = LOG_COLUMNS.index(column)
        return [(i.text() if (i := self.item(r, col)) else "") for r in range(self.rowCount())]

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Resize:  # the table's, or a scroll bar came or went
            QTimer.singleShot(0, self, self.fit_columns)
        return super().viewportEvent(event)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            t = tokens_for(self.palette())  # the statuses' colours are the theme's
            for r, row in enumerate(self._rows):
                self._color_status(r, row, t)
        super().changeEvent(event)


class RequestsBox(Section):
    """The "Requests" card around the table."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            "Requests",
            "Every request the endpoint answers, live, this app's chats included: its "
            "status, model, tokens and speed. Hover a status for what it means.",
            parent,
            icon_kind="requests",
        )
        self.setObjectName("requestsSection")
        self.table = RequestLogTable(self)
        self.table.setMinimumHeight(TABLE_MIN_PX)
        # Its height is what the page has left, never its own wish (a wrapped page
        # asks its widgets' preferred heights, and the table's would make it scroll).
        policy = self.table.sizePolicy()
        policy.setVerticalPolicy(QSizePolicy.Policy.Ignored)
        self.table.setSizePolicy(policy)
        self.body.addWidget(self.table, 1)


def _num(value: object) -> str:
    return str(value) if isinstance(value, int) else ""
