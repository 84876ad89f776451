"""Reading a document in a child process, with progress and cancel.

pypdf is pure Python: a 300-page PDF is seconds of interpreter work, and in a thread of
the GUI's process it would hold the interpreter lock the Qt thread needs to draw a
streaming reply (measured: stalls of 100 ms and more). So the GUI re-runs this program
as ``hearth --read-document PATH`` (a packaged app has no separate python), which
prints JSON lines on stdout: ``progress`` per page, then each ``section``, then
``done`` or ``error`` (a ``DocumentError``'s message, for the chat to show). Cancel ends
the child. Nothing here imports Qt; ``child_main`` is the child's side.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from hearth.chats.doc_parse import (
    DocumentCancelled,
    DocumentError,
    ParsedDocument,
    Progress,
    Section,
    parse_document,
)
from hearth.config.launch import relaunch_prefix

log = logging.getLogger(__name__)

READ_FLAG = "--read-document"


def _emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def child_main(args: Sequence[str]) -> int:
    """``hearth --read-document PATH``: read it, reporting on stdout as JSON lines."""
    if len(args) != 1:
        sys.stderr.write(f"usage: hearth {READ_FLAG} PATH\n")
        return 2
    logging.basicConfig(level=logging.ERROR)  # pypdf's warnings about a damaged file
    path = Path(args[0])

    def progress(done: int, total: int) -> None:
        _emit({"event": "progress", "done": done, "total": total})

    try:
        document = parse_document(path, progress=progress)
    except DocumentError as exc:
        _emit({"event": "error", "message": str(exc)})
        return 1
    except Exception as exc:  # anything else a hostile file provokes: refused, not a crash
        _emit({"event": "error", "message": f"{path.name} can't be read ({type(exc).__name__})."})
        return 1
    for s in document.sections:
        _emit({"event": "section", "text": s.text, "page": s.page, "line": s.line})
    _emit({"event": "done", "name": document.name, "kind": document.kind,
           "pages": document.pages})  # fmt: skip
    return 0


def _lower_priority(pid: int) -> None:
    """Yield the CPU to the GUI: on a busy machine the reader (from its first import on)
    competes with the process drawing the chat, and the chat must win."""
    try:
        below = psutil.BELOW_NORMAL_PRIORITY_CLASS if sys.platform == "win32" else 10
        psutil.Process(pid).nice(below)
    except (psutil.Error, OSError) as exc:
        log.debug("reader keeps its priority: %s", exc)


class DocumentReader:
    """One document read in a child process: ``read()`` (blocking: call it off the Qt
    thread) returns it or raises; ``cancel()`` (any thread) ends the child, and ``read``
    then raises ``DocumentCancelled``."""

    def __init__(self, path: Path, *, launcher: Sequence[str] | None = None) -> None:
        self.path = path
        prefix = list(launcher) if launcher is not None else relaunch_prefix()
        self.command = [*prefix, READ_FLAG, str(path)]
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()  # the child holds nothing worth a clean exit

    def read(self, progress: Progress | None = None) -> ParsedDocument:
        report = progress or (lambda _done, _total: None)
        kwargs: dict[str, Any] = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = subprocess.CREATE_NO_WINDOW
        with self._lock:
            if self._cancelled:
                raise DocumentCancelled
            try:
                self._proc = proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    encoding="utf-8",
                    errors="replace",
                    **kwargs,
                )
            except OSError as exc:
                log.error("document reader did not start: %s", exc)
                raise DocumentError(f"{self.path.name} can't be read: {exc}.") from exc
            _lower_priority(proc.pid)
        assert proc.stdout is not None
        sections: list[Section] = []
        end: dict[str, Any] = {}
        with proc:
            for line in proc.stdout:
                event = _event(line)
                kind = event.get("event")
                if kind == "progress":
                    report(int(event.get("done") or 0), int(event.get("total") or 0))
                elif kind == "section":
                    sections.append(_section(event))
                elif kind in ("done", "error"):
                    end = event
            code = proc.wait()
        if self._cancelled:
            raise DocumentCancelled
        if end.get("event") == "error":
            raise DocumentError(str(end.get("message")))
        if code != 0 or end.get("event") != "done":
            log.warning("document reader for %s ended with %s", self.path, code)
            raise DocumentError(f"{self.path.name} can't be read (the reader stopped).")
        return ParsedDocument(
            str(end.get("name") or self.path.name),
            str(end.get("kind") or "text"),
            tuple(sections),
            pages=int(end.get("pages") or 0),
        )


def _event(line: str) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError:
        return {}
    return event if isinstance(event, dict) else {}


def _section(event: dict[str, Any]) -> Section:
    page, number = event.get("page"), event.get("line")
    return Section(
        str(event.get("text") or ""),
        page=page if isinstance(page, int) else None,
        line=number if isinstance(number, int) else None,
    )
