"""After a worker crash the supervisor brings back every model the worker held, each
with its own load settings, the most recently used first (issue 22). Real worker
subprocesses on tiny GGUFs, killed with SIGKILL; waits are on the supervisor's status."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from hearth.config.paths import default_paths
from hearth.core.model_info import ModelInfo
from hearth.library import Library
from hearth.supervisor import LoadOptions, Supervisor, WorkerState, WorkerStatus
from hearth.supervisor.recovery import Recovery

T = TypeVar("T")

FIRST = LoadOptions(n_ctx=512, n_parallel=2)
SECOND = LoadOptions(n_ctx=1024, n_parallel=1)


def run(coro: Coroutine[Any, Any, T], timeout: float = 240.0) -> T:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def model_id(path: Path) -> str:
    return path.name.removesuffix(".gguf")


class Watch:
    """The supervisor's statuses, and a wait for the next crash."""

    def __init__(self) -> None:
        self.statuses: list[WorkerStatus] = []
        self.crashed = asyncio.Event()

    def __call__(self, status: WorkerStatus) -> None:
        self.statuses.append(status)
        if status.state is WorkerState.CRASHED:
            self.crashed.set()

    async def kill(self, sup: Supervisor) -> int:
        assert sup.process is not None and sup.process.pid is not None
        pid = sup.process.pid
        self.crashed.clear()
        os.kill(pid, signal.SIGKILL)
        await asyncio.wait_for(self.crashed.wait(), 30)
        return pid


def shape(info: ModelInfo) -> tuple[int, int]:
    """What a model's load settings made of it: context per slot, slots."""
    return info.n_ctx_per_slot, info.n_slots


async def chat(sup: Supervisor, model: str) -> None:
    assert sup.client is not None
    reply = [
        d
        async for d in sup.client.stream_chat(
            [{"role": "user", "content": "hi"}], model=model, max_tokens=4, seed=1
        )
    ]
    assert reply


def test_a_crash_brings_back_both_models_with_their_settings_most_recent_first(
    tmp_path: Path, tiny_model_q8: Path, tiny_model_f16: Path
) -> None:
    library = Library(default_paths().ensure())  # the worker's library (HEARTH_DATA_DIR)
    library.import_in_place(tiny_model_f16)
    q8, f16 = model_id(tiny_model_q8), model_id(tiny_model_f16)
    watch = Watch()

    async def scenario() -> None:
        sup = Supervisor(on_status=watch, log_dir=tmp_path / "logs")
        try:
            assert await sup.start(tiny_model_q8, FIRST) == q8
            await sup.load_beside(tiny_model_f16, SECOND, replace=False)
            await chat(sup, q8)  # the chat's model is the most recently used one
            models = (await sup.residency()).models
            before = {m.info.id: shape(m.info) for m in models}
            assert set(before) == {q8, f16} and before[q8] != before[f16]
            assert [m.info.id for m in models] == [f16, q8]  # least recently used first

            first_pid = await watch.kill(sup)
            assert "unexpectedly" in (sup.status.message or "")
            seen = len(watch.statuses)
            assert await sup.restart() == q8  # the one in use is back first
            assert sup.process is not None and sup.process.pid != first_pid
            models = (await sup.residency()).models
            after = {m.info.id: shape(m.info) for m in models}
            assert after == before  # each with its own context and slots
            assert [m.info.id for m in models] == [f16, q8]  # the order of use kept
            assert sup.status.state is WorkerState.READY
            assert sup.status.recovery == Recovery(back=(q8, f16))
            # What the app was told on the way: both pending, then each back in turn.
            notes = [s.recovery for s in watch.statuses[seen:] if s.recovery is not None]
            assert notes[0] == Recovery(pending=(q8, f16))
            ready = [
                s.recovery.back
                for s in watch.statuses[seen:]
                if s.state is WorkerState.READY and s.recovery is not None
            ]
            assert ready == [(q8,), (q8, f16)]
            await chat(sup, f16)  # and it serves

            # The user's next action ends the report.
            await sup.unload(f16)
            assert sup.status.recovery is None
        finally:
            await sup.stop()

    run(scenario())


def test_an_ejected_model_stays_out_and_a_broken_one_is_reported_once(
    tmp_path: Path, tiny_model_q8: Path, tiny_model_f16: Path
) -> None:
    library = Library(default_paths().ensure())
    doomed = tmp_path / "hearth-tiny-doomed.gguf"
    shutil.copyfile(tiny_model_f16, doomed)
    for path in (tiny_model_f16, doomed):
        library.import_in_place(path)
    q8, f16, gone = model_id(tiny_model_q8), model_id(tiny_model_f16), model_id(doomed)
    watch = Watch()

    async def scenario() -> None:
        sup = Supervisor(on_status=watch, log_dir=tmp_path / "logs")
        try:
            await sup.start(tiny_model_q8, FIRST)
            await sup.load_beside(tiny_model_f16, SECOND, replace=False)
            await sup.load_beside(doomed, SECOND, replace=False)
            await sup.unload(f16)  # ejected by the user: it must not come back
            doomed.unlink()  # the loaded copy stays mapped; a reload can't find it

            await watch.kill(sup)
            assert await sup.restart() == q8
            recovery = sup.status.recovery
            assert recovery is not None and recovery.done
            assert recovery.back == (q8,)
            assert [name for name, _why in recovery.failed] == [gone]
            assert recovery.failed[0][1]  # with the reason
            assert [m.info.id for m in (await sup.residency()).models] == [q8]

            # Another crash: the broken model is not tried again (its failure is still
            # said, until the user acts).
            await watch.kill(sup)
            seen = len(watch.statuses)
            assert await sup.restart() == q8
            pending = [s.recovery.pending for s in watch.statuses[seen:] if s.recovery]
            assert pending[0] == (q8,)
            assert sup.status.recovery == Recovery(back=(q8,), failed=recovery.failed)
            await sup.load_beside(tiny_model_f16, SECOND, replace=False)  # the user acts
            assert sup.status.recovery is None
        finally:
            await sup.stop()

    run(scenario())


def test_a_model_opened_from_outside_the_library_comes_back_too(
    tmp_path: Path, tiny_model_q8: Path, tiny_model_f16: Path
) -> None:
    Library(default_paths().ensure()).import_in_place(tiny_model_f16)  # q8 is not listed
    q8, f16 = model_id(tiny_model_q8), model_id(tiny_model_f16)
    watch = Watch()

    async def scenario() -> None:
        sup = Supervisor(on_status=watch, log_dir=tmp_path / "logs")
        try:
            await sup.start(tiny_model_q8, FIRST)  # as `hearth PATH` opens it
            await sup.load_beside(tiny_model_f16, SECOND, replace=False)  # most recent
            await watch.kill(sup)
            # Only a fresh worker's own model may be a file outside the library, so q8
            # starts it, and f16 (the admin load takes library models) loads beside it.
            assert await sup.restart() == q8
            assert sup.status.recovery == Recovery(back=(q8, f16))
            models = (await sup.residency()).models
            assert [m.info.id for m in models] == [q8, f16]  # f16 still the most recent
        finally:
            await sup.stop()

    run(scenario())
