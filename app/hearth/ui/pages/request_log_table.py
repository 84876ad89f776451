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
"""

from __future__ import annotations

import datetime as dt
import http
import logging
from typing import Any

from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from hearth.ui.style.theme import tokens_for

log = logging.getLogger(__name__)

LOG_COLUMNS = (
    "Time", "Request", "Status", "Model", "Prompt", "Cached", "Completion", "tok/s", "TTFT",
    "Duration",
)  # fmt: skip
COL_STATUS = LOG_COLUMNS.index("Status")
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
        text = "499 Client closed" if code == 499 else str(code)
    return f"{text} · {reason}" if reason else text


def failed(row: dict[str, Any]) -> bool:
    code = row.get("status")
    return isinstance(code, int) and code >= 400


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
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(LOG_COLUMNS), parent)
        self.setAccessibleName("Request log")
        self.setHorizontalHeaderLabels(list(LOG_COLUMNS))
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(LOG_COLUMNS.index("Request"), QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setVisible(False)

    def show_rows(self, rows: list[dict[str, Any]]) -> None:
        rows = [row for row in rows if not apps_own(row)]
        red = QBrush(QColor(tokens_for(self.palette()).danger))  # readable in both themes
        self.setRowCount(len(rows))
        for r, row in enumerate(rows):
            bad = failed(row)
            for col, text in enumerate(row_cells(row)):
                item = self.item(r, col)
                if item is None:
                    item = QTableWidgetItem(text)
                    self.setItem(r, col, item)
                elif item.text() != text:
                    item.setText(text)
                if col == COL_STATUS:
                    item.setForeground(red if bad else self.palette().text())
                    item.setToolTip("The request failed." if bad else "")

    def column_texts(self, column: str) -> list[str]:
        """The texts shown in ``column``, top (newest) first."""
        col = LOG_COLUMNS.index(column)
        return [(i.text() if (i := self.item(r, col)) else "") for r in range(self.rowCount())]


def _num(value: object) -> str:
    return str(value) if isinstance(value, int) else ""
