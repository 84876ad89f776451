"""One file's download: resolve metadata, then ranged GETs into ``<dest>.part``.

The HTTP side lives here (asyncio + httpx, with retries and the shared bandwidth cap);
the file side (writing, hashing, verifying, renaming) is :class:`PartFile`, run on one
dedicated thread so the event loop stays free and file operations stay in order.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import httpx

from hearth.core.units import format_bytes
from hearth.hub.bandwidth import TokenBucket
from hearth.hub.client import TokenProvider, auth_headers, has_auth
from hearth.hub.errors import DownloadError, HubUnavailableError, access_error
from hearth.hub.partfile import FileOpener, PartFile, SpaceCheck, default_opener
from hearth.hub.progress import DownloadState
from hearth.hub.remote import RemoteFile, resolve_remote

log = logging.getLogger(__name__)

T = TypeVar("T")
CHUNK = 64 * 1024
FLUSH_AT = 1024 * 1024
_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff. ``max_attempts`` counts consecutive failures that made no
    progress; any attempt that wrote bytes resets the count."""

    max_attempts: int = 8
    base_delay: float = 1.0
    max_delay: float = 60.0

    def delay(self, failures: int, retry_after: float | None = None) -> float:
        wait = min(self.max_delay, self.base_delay * 2.0 ** max(0, failures - 1))
        wait *= 1 + random.random() * 0.25  # jitter, so parallel downloads spread out
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait


class _RetryableError(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class FileTransfer:
    """Downloads one Hub file to ``dest``. Call :meth:`run` again after a failure or a
    cancellation to resume; call :meth:`close` when done with it."""

    def __init__(
        self,
        *,
        repo_id: str,
        filename: str,
        revision: str,
        dest: Path,
        client: httpx.AsyncClient,
        bucket: TokenBucket,
        endpoint: str,
        token: TokenProvider,
        retry: RetryPolicy,
        space_check: SpaceCheck,
        on_progress: Callable[[int, int | None], None],
        on_state: Callable[[DownloadState], None],
        opener: FileOpener = default_opener,
    ) -> None:
        self.repo_id, self.filename, self.revision, self.dest = repo_id, filename, revision, dest
        self._client, self._bucket, self._endpoint = client, bucket, endpoint
        self._token_provider, self._retry, self._space_check = token, retry, space_check
        self._on_progress, self._on_state = on_progress, on_state
        self._part = PartFile(dest, filename, opener)
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hearth-dl-io")

    @property
    def bytes_done(self) -> int:
        return max(0, self._part.offset)

    @property
    def total(self) -> int | None:
        return self._part.total

    async def _in_io(self, func: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._io, func, *args)

    async def drain(self) -> None:
        """Wait until every queued file operation has finished."""
        await self._in_io(lambda: None)

    def discard(self) -> None:
        """Delete the partial download. Only when idle (not running, or after drain())."""
        self._part.discard()

    def close(self) -> None:
        self._io.shutdown(wait=False)

    # ------------------------------------------------------------------ main flow

    async def run(self) -> Path:
        token = await asyncio.to_thread(self._token_provider)
        remote = await self._resolve(token)
        self._part.total = remote.size
        if await self._in_io(self._part.already_there, remote):
            log.info("%s already downloaded", self.dest)
            self._part.offset = remote.size
            return self.dest
        try:
            await self._in_io(self._part.prepare, remote, self._space_check)
            await self._transfer(remote, token)
            self._on_state(DownloadState.VERIFYING)
            await self._in_io(self._part.finish, remote, self.repo_id)
        finally:
            # Another process may take over a paused or failed download.
            await self._in_io(self._part.release)
        return self.dest

    async def _resolve(self, token: str | None) -> RemoteFile:
        failures = 0
        while True:
            try:
                return await asyncio.to_thread(
                    resolve_remote,
                    self.repo_id,
                    self.filename,
                    revision=self.revision,
                    endpoint=self._endpoint,
                    token=token,
                )
            except HubUnavailableError as exc:
                failures += 1
                if failures > self._retry.max_attempts:
                    raise
                await self._backoff(failures, f"cannot reach the Hub ({exc})")

    async def _backoff(self, failures: int, reason: str, retry_after: float | None = None) -> None:
        delay = self._retry.delay(failures, retry_after)
        log.info("%s: %s; retry %d in %.1fs", self.filename, reason, failures, delay)
        self._on_state(DownloadState.RETRYING)
        await asyncio.sleep(delay)
        self._on_state(DownloadState.RUNNING)

    async def _transfer(self, remote: RemoteFile, token: str | None) -> None:
        failures = 0
        while True:
            before = self._part.offset
            try:
                await self._attempt(remote, token)
                return
            except _RetryableError as exc:
                failures = 1 if self._part.offset > max(0, before) else failures + 1
                if failures > self._retry.max_attempts:
                    raise HubUnavailableError(
                        f"Downloading {self.filename} kept failing ({exc}). The partial file "
                        "is kept: resume the download when the connection is back."
                    ) from exc
                await self._backoff(failures, str(exc), exc.retry_after)

    async def _attempt(self, remote: RemoteFile, token: str | None) -> None:
        part = self._part
        handle = await self._in_io(part.open, remote)
        try:
            if part.offset >= remote.size:
                return
            headers = auth_headers(token)
            if part.offset > 0:
                headers["Range"] = f"bytes={part.offset}-"
            try:
                async with self._client.stream("GET", remote.url, headers=headers) as resp:
                    await self._check_response(resp, has_auth(headers))
                    if resp.status_code == 200 and part.offset > 0:
                        log.info("%s: the server ignored Range; restarting", self.filename)
                        await self._in_io(part.restart, handle, remote)
                    await self._stream(resp, handle, remote)
            except httpx.TransportError as exc:
                raise _RetryableError(f"connection problem: {type(exc).__name__}: {exc}") from exc
        finally:
            await self._in_io(handle.close)
        if part.offset < remote.size:
            raise _RetryableError(
                f"connection closed at {format_bytes(part.offset)} of {format_bytes(remote.size)}"
            )

    async def _check_response(self, resp: httpx.Response, auth: bool) -> None:
        status = resp.status_code
        if status == 200:
            return
        if status == 206:
            start = resp.headers.get("Content-Range", "").removeprefix("bytes ").split("-")[0]
            if start != str(self._part.offset):
                await self._in_io(self._part.reset)
                raise _RetryableError(f"server sent range {start!r}, asked {self._part.offset}")
            return
        if status == 416:
            await self._in_io(self._part.reset)
            raise _RetryableError("server refused the range")
        if status in _RETRY_STATUS:
            retry_after = resp.headers.get("Retry-After", "")
            raise _RetryableError(
                f"HTTP {status}",
                retry_after=float(retry_after) if retry_after.isdigit() else None,
            )
        if status in (401, 403, 404):
            raise access_error(
                self.repo_id,
                status=status,
                error_code=resp.headers.get("X-Error-Code"),
                error_message=resp.headers.get("X-Error-Message"),
                has_token=auth,
                endpoint=self._endpoint,
            )
        raise DownloadError(f"The Hub answered HTTP {status} for {self.filename}.")

    async def _stream(self, resp: httpx.Response, handle: BinaryIO, remote: RemoteFile) -> None:
        part = self._part
        buffer = bytearray()
        try:
            async for chunk in resp.aiter_bytes(CHUNK):
                await self._bucket.acquire(len(chunk))
                buffer += chunk
                if part.offset + len(buffer) > remote.size:
                    buffer.clear()
                    await self._in_io(part.reset)
                    raise DownloadError(
                        f"The server sent more than the {remote.size} bytes of "
                        f"{self.filename}; the partial file was discarded. Try again."
                    )
                if len(buffer) >= FLUSH_AT:
                    await self._in_io(part.append, handle, bytes(buffer))
                    buffer.clear()
                self._on_progress(part.offset + len(buffer), remote.size)
        except (httpx.TransportError, asyncio.CancelledError):
            # What arrived before a dropped connection or a pause is a good prefix: keep
            # it, so a resume asks only for what is still missing.
            if buffer:
                await asyncio.shield(self._in_io(part.append, handle, bytes(buffer)))
            raise
        if buffer:
            await self._in_io(part.append, handle, bytes(buffer))
        self._on_progress(part.offset, remote.size)


__all__ = ["FileTransfer", "RetryPolicy"]
