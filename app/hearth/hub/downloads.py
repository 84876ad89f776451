"""The download manager: a queue of Hub files, a few at a time, under one bandwidth cap.

Runs on an asyncio loop (the GUI's qasync loop, or ``asyncio.run`` in the CLI). Methods
that change state (``add``, ``pause``, ``resume``, ``cancel``) are plain calls made on
that loop; ``wait`` and ``pull`` are awaited. Every change is reported through
``on_event`` (see :class:`DownloadEvent`).

- pause keeps ``.part`` + sidecar; resume continues from the same byte;
- cancel deletes both;
- after an app restart or a crash, :meth:`restore` re-queues every download whose
  sidecar is found under the models folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
from collections import deque
from pathlib import Path

import httpx

from hearth.hub.bandwidth import TokenBucket
from hearth.hub.client import TokenProvider, hub_endpoint, keyring_token
from hearth.hub.disk_space import DEFAULT_RESERVE, DiskFree, DiskSpaceGuard, free_bytes
from hearth.hub.errors import (
    DownloadCancelledError,
    DownloadError,
    HubError,
)
from hearth.hub.handle import DownloadHandle, new_future
from hearth.hub.names import local_model_path, safe_relative_path, validate_repo_id
from hearth.hub.partfile import FileOpener, default_opener, discard_files
from hearth.hub.progress import DownloadState, EventCallback, Throttle
from hearth.hub.repo import GgufFile, GgufModel
from hearth.hub.sidecar import dest_from_sidecar, find_sidecars, part_path, read_sidecar
from hearth.hub.transfer import FileTransfer, RetryPolicy

log = logging.getLogger(__name__)


class DownloadManager:
    """Queues downloads into ``<models_dir>/<owner>/<repo>/<file>``."""

    def __init__(
        self,
        models_dir: Path,
        *,
        max_concurrent: int = 2,
        bandwidth_limit: float | None = None,
        endpoint: str | None = None,
        token_provider: TokenProvider = keyring_token,
        on_event: EventCallback | None = None,
        retry: RetryPolicy | None = None,
        disk_free: DiskFree = free_bytes,
        opener: FileOpener = default_opener,
        reserve_bytes: int = DEFAULT_RESERVE,
        progress_interval: float = 0.1,
        timeout: httpx.Timeout | None = None,
    ) -> None:
        self.models_dir = models_dir
        self._max = self._check_limit(max_concurrent)
        self._bucket = TokenBucket(bandwidth_limit)
        self._endpoint = hub_endpoint(endpoint)
        self._token_provider = token_provider
        self._on_event = on_event
        self._retry = retry or RetryPolicy()
        self._space = DiskSpaceGuard(disk_free, reserve_bytes)
        self._opener = opener
        self._interval = progress_interval
        self._timeout = timeout or httpx.Timeout(30.0, connect=15.0)
        self._client: httpx.AsyncClient | None = None
        self._ids = itertools.count(1)
        self._handles: dict[int, DownloadHandle] = {}
        self._queue: deque[DownloadHandle] = deque()
        self._running: set[DownloadHandle] = set()
        self._closed = False

    # ------------------------------------------------------------------ settings

    @staticmethod
    def _check_limit(n: int) -> int:
        if n < 1:
            raise ValueError("at least one download must be allowed to run")
        return n

    @property
    def max_concurrent(self) -> int:
        return self._max

    def set_max_concurrent(self, n: int) -> None:
        """Takes effect for the next download that starts; running ones are not stopped."""
        self._max = self._check_limit(n)
        self._pump()

    @property
    def bandwidth_limit(self) -> float | None:
        return self._bucket.rate

    def set_bandwidth_limit(self, bytes_per_s: float | None) -> None:
        """One cap shared by all downloads; None removes it."""
        self._bucket.set_rate(bytes_per_s)

    # ------------------------------------------------------------------ queries

    def downloads(self) -> list[DownloadHandle]:
        return list(self._handles.values())

    def get(self, download_id: int) -> DownloadHandle:
        try:
            return self._handles[download_id]
        except KeyError:
            raise KeyError(f"no download with id {download_id}") from None

    # ------------------------------------------------------------------ commands

    def add(
        self, repo_id: str, filename: str, *, revision: str = "main", dest: Path | None = None
    ) -> DownloadHandle:
        """Queue one file. The same destination twice gives back the existing download."""
        return self._add(repo_id, filename, revision, dest, start=True)

    def _add(
        self, repo_id: str, filename: str, revision: str, dest: Path | None, *, start: bool
    ) -> DownloadHandle:
        if self._closed:
            raise RuntimeError("the download manager is closed")
        validate_repo_id(repo_id)
        safe_relative_path(filename)
        target = dest or local_model_path(self.models_dir, repo_id, filename)
        for handle in self._handles.values():
            if handle.dest == target and not handle.state.finished:
                return handle
        handle = DownloadHandle(next(self._ids), repo_id, filename, revision, target)
        handle._throttle = Throttle(self._interval)
        self._handles[handle.id] = handle
        if start:
            self._queue.append(handle)
        else:
            handle.state = DownloadState.PAUSED
        self._emit(handle)
        self._pump()
        return handle

    def add_model(
        self,
        repo_id: str,
        model: GgufModel,
        *,
        revision: str = "main",
        projector: GgufFile | None = None,
    ) -> list[DownloadHandle]:
        """Queue every file of a model: one, or all shards of a split model in order,
        then its vision ``projector`` unless it is on disk already (one serves every
        quant of the repo). Pass the listing's commit as ``revision`` so all files come
        from one commit."""
        if not model.complete:
            raise DownloadError(
                f"{model.name} in {repo_id} is missing shards ({len(model.files)} of "
                f"{model.shard_count} present); it cannot be loaded, so it is not downloaded."
            )
        handles = [self.add(repo_id, f.path, revision=revision) for f in model.files]
        if projector is not None:
            kept = local_model_path(self.models_dir, repo_id, projector.path)
            if not kept.is_file():  # one projector serves every quant of the repo
                handles.append(self.add(repo_id, projector.path, revision=revision))
        return handles

    async def pull(self, repo_id: str, filename: str, *, revision: str = "main") -> Path:
        """Add a download and wait for its verified file."""
        return await self.add(repo_id, filename, revision=revision).wait()

    def restore(self, *, start: bool = True) -> list[DownloadHandle]:
        """Re-queue (or, with ``start=False``, list as paused) the unfinished downloads
        found under the models folder: what was running when the app quit or crashed."""
        restored = []
        for path in find_sidecars(self.models_dir):
            dest = dest_from_sidecar(path)
            side = read_sidecar(dest)
            if side is None:
                continue
            try:
                if dest != local_model_path(self.models_dir, side.repo_id, side.filename):
                    log.warning("ignoring download state at an unexpected place: %s", path)
                    continue
                handle = self._add(side.repo_id, side.filename, side.revision, dest, start=start)
                # What is already on disk, so the row shows it before any request is made.
                part = part_path(dest)
                handle.bytes_done = part.stat().st_size if part.exists() else 0
                handle.total = side.size
                self._emit(handle)
            except HubError as exc:
                log.warning("ignoring download state %s: %s", path, exc)
                continue
            restored.append(handle)
        return restored

    def pause(self, download_id: int) -> None:
        handle = self.get(download_id)
        if handle.state == DownloadState.QUEUED:
            self._queue.remove(handle)
            self._set_state(handle, DownloadState.PAUSED)
        elif handle.state.active and handle._task is not None:
            handle._intent = "pause"
            handle._task.cancel()

    def resume(self, download_id: int) -> None:
        """Continue a paused download, or retry a failed one (from where it stopped)."""
        handle = self.get(download_id)
        if handle.state not in (DownloadState.PAUSED, DownloadState.FAILED):
            return
        if handle._future.done():
            handle._future = new_future()
        handle.error = None
        self._queue.append(handle)
        self._set_state(handle, DownloadState.QUEUED)
        self._pump()

    def cancel(self, download_id: int) -> None:
        """Stop and delete the partial file. Running downloads finish cancelling shortly
        (``wait`` then raises :class:`DownloadCancelledError`)."""
        handle = self.get(download_id)
        if handle.state.finished and handle.state != DownloadState.FAILED:
            return
        if handle.state.active and handle._task is not None:
            handle._intent = "cancel"
            handle._task.cancel()
            return
        if handle in self._queue:
            self._queue.remove(handle)
        self._discard(handle)

    async def aclose(self) -> None:
        """Stop everything, keeping partial files so the next start can resume them."""
        self._closed = True
        self._queue.clear()
        tasks = []
        for handle in list(self._running):
            if handle._task is not None:
                handle._intent = "shutdown"
                handle._task.cancel()
                tasks.append(handle._task)
        await asyncio.gather(*tasks, return_exceptions=True)
        for handle in self._handles.values():
            if handle._transfer is not None:
                handle._transfer.close()
        if self._client is not None:
            await self._client.aclose()

    # ------------------------------------------------------------------ internals

    def _pump(self) -> None:
        while self._queue and len(self._running) < self._max and not self._closed:
            handle = self._queue.popleft()
            self._running.add(handle)
            handle._intent = None
            self._set_state(handle, DownloadState.RUNNING)
            task = asyncio.get_running_loop().create_task(
                self._run(handle), name=f"download-{handle.id}"
            )
            handle._task = task
            task.add_done_callback(functools.partial(self._task_done, handle))

    def _task_done(self, handle: DownloadHandle, task: asyncio.Task[None]) -> None:
        self._running.discard(handle)
        if handle._task is task:
            handle._task = None
        if task.cancelled() and handle.state.active:
            # Cancelled before its first step: no file I/O happened, settle it here.
            intent, handle._intent = handle._intent, None
            if intent == "cancel":
                self._discard(handle)
            else:
                self._set_state(handle, DownloadState.PAUSED)
        self._pump()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                follow_redirects=True,
                timeout=self._timeout,
                limits=httpx.Limits(max_connections=max(8, self._max * 2)),
            )
        return self._client

    def _transfer_for(self, handle: DownloadHandle) -> FileTransfer:
        if handle._transfer is None:
            handle._transfer = FileTransfer(
                repo_id=handle.repo_id,
                filename=handle.filename,
                revision=handle.revision,
                dest=handle.dest,
                client=self._http(),
                bucket=self._bucket,
                endpoint=self._endpoint,
                token=self._token_provider,
                retry=self._retry,
                space_check=lambda dest, needed: self._check_space(handle, dest, needed),
                on_progress=lambda done, total: self._progress(handle, done, total),
                on_state=lambda state: self._set_state(handle, state),
                opener=self._opener,
            )
        return handle._transfer

    async def _run(self, handle: DownloadHandle) -> None:
        transfer = self._transfer_for(handle)
        try:
            path = await transfer.run()
        except asyncio.CancelledError:
            intent, handle._intent = handle._intent, None
            with contextlib.suppress(asyncio.CancelledError):
                await transfer.drain()  # let a write in flight land before touching files
            if intent == "cancel":
                self._discard(handle)
            else:
                self._set_state(handle, DownloadState.PAUSED)
            if intent is None:
                raise  # cancelled by someone else (loop shutdown): keep propagating
        except HubError as exc:
            self._fail(handle, exc)
        except Exception as exc:
            log.exception("download of %s failed unexpectedly", handle.filename)
            self._fail(handle, DownloadError(f"Downloading {handle.filename} failed: {exc}"))
        else:
            handle.total = transfer.total
            handle.bytes_done = transfer.bytes_done
            transfer.close()  # its I/O thread is no longer needed
            handle._transfer = None
            self._set_state(handle, DownloadState.COMPLETED)
            if not handle._future.done():
                handle._future.set_result(path)

    def _fail(self, handle: DownloadHandle, exc: HubError) -> None:
        log.warning("download of %s failed: %s", handle.filename, exc.message)
        handle.error = exc
        if handle._transfer is not None:
            handle.bytes_done = handle._transfer.bytes_done
        self._set_state(handle, DownloadState.FAILED)
        if not handle._future.done():
            handle._future.set_exception(exc)

    def _discard(self, handle: DownloadHandle) -> None:
        """Delete the partial files; only when no file I/O of this download is in flight."""
        if handle._transfer is not None:
            handle._transfer.discard()
            handle._transfer.close()
            handle._transfer = None
        else:
            discard_files(handle.dest)
        handle.bytes_done = 0
        handle.error = None
        self._set_state(handle, DownloadState.CANCELLED)
        if not handle._future.done():
            handle._future.set_exception(
                DownloadCancelledError(f"The download of {handle.filename} was cancelled.")
            )

    def _check_space(self, handle: DownloadHandle, dest: Path, needed: int) -> None:
        others = sum(
            max(0, (h.total or 0) - h.bytes_done)
            for h in tuple(self._running)  # runs on a download's I/O thread: copy first
            if h is not handle and h.state.active
        )
        self._space.check(handle.filename, dest, needed, others)

    def _progress(self, handle: DownloadHandle, done: int, total: int | None) -> None:
        handle.bytes_done, handle.total = done, total
        if done == total or handle._throttle is None or handle._throttle.ready():
            handle._meter.add(done)
            self._emit(handle)

    def _set_state(self, handle: DownloadHandle, state: DownloadState) -> None:
        if state == DownloadState.RUNNING and handle.state != DownloadState.RETRYING:
            handle._meter.reset()
        handle.state = state
        if handle._transfer is not None and handle._transfer.total is not None:
            handle.total = handle._transfer.total
            if state != DownloadState.CANCELLED:
                handle.bytes_done = handle._transfer.bytes_done
        self._emit(handle)

    def _emit(self, handle: DownloadHandle) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(handle.snapshot())
        except Exception:
            log.exception("a download event listener failed")
