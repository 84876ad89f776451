"""Generation events on their way out of the scheduler thread, held until its next decode.

Handed over at once, each event wakes the relay and then the server's event loop,
which take the GIL whenever the scheduler makes a ctypes call: a speculative step's
seventeen samples and sixteen draft decodes then waited on them, one handover at a
time (behind ``hearth serve`` on the 2-core dev machine, verification took 2-3 ms a
step against 0.75 ms in-process). Handed over as the next decode starts, their work
overlaps the decode, which releases the GIL for its whole length.
"""

from __future__ import annotations

import logging

from hearth.core.generation import GenerationEvent
from hearth.engine.relay import EventRelay
from hearth.engine.slots import Job

log = logging.getLogger(__name__)


class EventOutbox:
    """Used by the scheduler thread only; events keep the order they were posted in."""

    def __init__(self) -> None:
        self._relay = EventRelay()
        self._held: list[tuple[Job, GenerationEvent]] = []

    def post(self, job: Job, event: GenerationEvent) -> None:
        """Hold ``event`` until the next ``flush``."""
        self._held.append((job, event))

    def flush(self) -> None:
        """Hand every held event to the relay: just before a decode, or before the
        scheduler waits for anything else."""
        held, self._held = self._held, []
        for job, event in held:
            self._relay.post(job, event)

    def close(self) -> None:
        """Deliver what is held and queued, then stop the relay's thread."""
        self.flush()
        self._relay.close()
