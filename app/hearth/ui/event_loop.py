"""The asyncio loop that runs on Qt's event loop (qasync), made complete.

qasync's loop does not install asyncio's async-generator hooks, so an async generator
left suspended (e.g. an HTTP stream closed early) would be finalized outside the loop
and fail noisily. ``HearthEventLoop`` installs them around ``run_forever`` exactly as
``asyncio.BaseEventLoop`` does: such generators get ``aclose()``d on the loop.
"""

from __future__ import annotations

import sys
from typing import Any

import qasync
from PySide6.QtWidgets import QApplication


class HearthEventLoop(qasync.QEventLoop):  # type: ignore[misc]
    def run_forever(self) -> Any:
        old_hooks = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(
            firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook
        )
        try:
            return super().run_forever()
        finally:
            sys.set_asyncgen_hooks(*old_hooks)


def create_event_loop(app: QApplication) -> HearthEventLoop:
    return HearthEventLoop(app)
