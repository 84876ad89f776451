"""Who may use the worker: the app's token, the endpoint switch, API keys, failing closed.

Real workers (``hearth --worker`` started by the Supervisor, and ``hearth serve``), real
HTTP on 127.0.0.1, real keyrings: a file-backed one, and a locked one
(``tests/keyring_backends``) for the "keys exist but can't be read" case.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from hearth.config.api_keys import create_key, revoke_key
from hearth.supervisor import EndpointOptions, LoadOptions, Supervisor, WorkerState, WorkerStatus
from server_process import free_port, start_serve

TINY = LoadOptions(n_ctx=256, n_parallel=1)


def _get(url: str, path: str, key: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"{url}{path}", headers=headers, trust_env=False, timeout=10).status_code


def test_serve_refuses_to_start_when_keys_cannot_be_read(locked_keyring: None) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hearth", "serve", "--port", "0", "--api-key", "given"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Cannot read the API keys" in result.stderr
    assert "--no-stored-keys" in result.stderr  # the message names the fix
    assert "Traceback" not in result.stderr


def test_serve_with_no_stored_keys_serves_only_given_keys(
    locked_keyring: None, tmp_path: Path
) -> None:
    server = start_serve(None, tmp_path, "--no-stored-keys", api_key="given")
    try:
        assert _get(server.base_url, "/v1/models") == 401
        assert _get(server.base_url, "/v1/models", "given") == 200
    finally:
        server.stop()


def test_serve_requires_stored_keys_on_loopback(file_keyring: None, tmp_path: Path) -> None:
    key = create_key("laptop").key
    server = start_serve(None, tmp_path)
    try:
        assert _get(server.base_url, "/v1/models") == 401
        assert _get(server.base_url, "/v1/models", key) == 200
        assert _get(server.base_url, "/hearth/v1/status", key) == 200  # headless: no token
    finally:
        server.stop()


def _until(check: Callable[[], bool], seconds: float = 30) -> bool:
    """Polls an observable state (the server's answer) until it holds or time is up."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_serve_applies_created_and_revoked_keys_and_a_locked_store_without_restart(
    file_keyring: None, tmp_path: Path
) -> None:
    from hearth.config.secret_stores import API_KEYS
    from hearth.config.secrets import set_secret

    first = create_key("laptop").key
    server = start_serve(None, tmp_path, api_key="given")
    try:
        url = server.base_url
        assert _get(url, "/v1/models", first) == 200
        second = create_key("desktop").key
        assert _until(lambda: _get(url, "/v1/models", second) == 200)
        assert revoke_key("laptop")
        assert _until(lambda: _get(url, "/v1/models", first) == 401)
        assert _get(url, "/api/tags", first) == 401  # each dialect's own shape
        body = httpx.get(f"{url}/api/tags", headers={"Authorization": f"Bearer {first}"},
                         trust_env=False, timeout=10).json()  # fmt: skip
        assert isinstance(body["error"], str) and "API key" in body["error"]
        set_secret(API_KEYS, "not-base64-json")  # the store can no longer be read
        assert _until(lambda: _get(url, "/v1/models", second) == 401)  # fails closed
        assert _get(url, "/v1/models", "given") == 200  # --api-key needs no store
        assert _get(url, "/v1/models") == 401
        assert server.process.poll() is None  # still serving
    finally:
        server.stop()
    log = server.log_path.read_text()
    assert "Stored API keys are refused until it can be read" in log
    assert first not in log and second not in log  # secrets never reach the log


def _refused(url: str) -> bool:
    """Nothing listens there: the endpoint is closed."""
    try:
        httpx.get(f"{url}/health", trust_env=False, timeout=5)
    except httpx.ConnectError:
        return True
    return False


def test_gui_worker_access_changes_live_without_reloading(
    file_keyring: None, tiny_model_q8: Path, tmp_path: Path
) -> None:
    key = create_key("ide").key
    statuses: list[WorkerStatus] = []
    port, other_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"

    async def scenario() -> None:
        sup = Supervisor(on_status=statuses.append, log_dir=tmp_path / "logs")
        sup.endpoint = EndpointOptions(enabled=True, port=port)
        try:
            await sup.start(tiny_model_q8, TINY)
            assert sup.endpoint_port == port and sup.process is not None
            assert sup.port != port  # the app talks to its worker privately
            pid, token = sup.process.pid, sup.client.token if sup.client else None
            assert token

            def probe(path: str, credential: str | None = None, at: str = url) -> int:
                return _get(at, path, credential)

            # On, loopback, no key required: key-less clients get in; admin needs the token.
            assert await asyncio.to_thread(probe, "/v1/models") == 200
            assert await asyncio.to_thread(probe, "/hearth/v1/status") == 401
            assert await asyncio.to_thread(probe, "/hearth/v1/status", key) == 401
            assert await asyncio.to_thread(probe, "/hearth/v1/status", token) == 200
            # The private port stays the app's alone.
            private = f"http://127.0.0.1:{sup.port}"
            assert await asyncio.to_thread(probe, "/v1/models", None, private) == 401
            assert await asyncio.to_thread(probe, "/v1/models", key, private) == 401

            # Require a key: live, same process, the model never reloads.
            await sup.set_endpoint(EndpointOptions(enabled=True, port=port, require_key=True))
            assert await asyncio.to_thread(probe, "/v1/models") == 401
            assert await asyncio.to_thread(probe, "/v1/models", key) == 200
            assert await asyncio.to_thread(probe, "/v1/models", token) == 200

            # A key made now works at once; revoking is the same call.
            second = create_key("second").key
            await sup.set_endpoint(sup.endpoint)
            assert await asyncio.to_thread(probe, "/v1/models", second) == 200

            # Off: nothing listens on the endpoint's port any more.
            await sup.set_endpoint(EndpointOptions(enabled=False, port=port))
            assert await asyncio.to_thread(_refused, url)
            assert sup.endpoint_port is None

            # On again, then on another port: still live.
            await sup.set_endpoint(EndpointOptions(enabled=True, port=port))
            assert await asyncio.to_thread(probe, "/v1/models") == 200
            await sup.set_endpoint(EndpointOptions(enabled=True, port=other_port))
            assert await asyncio.to_thread(_refused, url)
            moved = f"http://127.0.0.1:{other_port}"
            assert await asyncio.to_thread(probe, "/v1/models", None, moved) == 200
            assert sup.process is not None and sup.process.pid == pid
            assert sup.ready and sup.endpoint_error is None
            starts = [s for s in statuses if s.state is WorkerState.STARTING]
            assert len(starts) == 1, statuses  # one launch, one load
            status = await sup.client.admin_status() if sup.client else {}
            assert status["load_id"] == 1  # the model was never reloaded
        finally:
            await sup.stop()

    asyncio.run(asyncio.wait_for(scenario(), 180))


def test_a_taken_port_keeps_the_endpoint_off_and_the_model_loaded(
    tiny_model_q8: Path, tmp_path: Path
) -> None:
    import socket

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    taken = holder.getsockname()[1]

    async def scenario() -> None:
        sup = Supervisor(log_dir=tmp_path / "logs")
        sup.endpoint = EndpointOptions(enabled=True, port=taken)
        try:
            model = await sup.start(tiny_model_q8, TINY)
            assert sup.ready and model
            assert not sup.endpoint.enabled and sup.endpoint_port is None
            assert f"port {taken}" in (sup.endpoint_error or "")
            port = free_port()
            await sup.set_endpoint(EndpointOptions(enabled=True, port=port))
            assert sup.endpoint_error is None and sup.endpoint_port == port
            assert await asyncio.to_thread(_get, f"http://127.0.0.1:{port}", "/v1/models") == 200
        finally:
            await sup.stop()

    try:
        asyncio.run(asyncio.wait_for(scenario(), 180))
    finally:
        holder.close()


def test_gui_keeps_the_endpoint_off_when_keys_cannot_be_read(
    locked_keyring: None, tiny_model_q8: Path, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    async def scenario() -> None:
        sup = Supervisor(log_dir=tmp_path / "logs")
        try:
            # On without "require a key": the keys are not needed, so it opens.
            sup.endpoint = EndpointOptions(enabled=True, port=port)
            await sup.start(tiny_model_q8, TINY)
            assert await asyncio.to_thread(_get, url, "/v1/models") == 200
            pid = sup.process.pid if sup.process else None

            # Asking for a key live: the worker cannot read them, so it closes.
            await sup.set_endpoint(EndpointOptions(enabled=True, port=port, require_key=True))
            assert not sup.endpoint.enabled
            assert "Cannot read the API keys" in (sup.endpoint_error or "")
            assert await asyncio.to_thread(_refused, url)
            assert sup.ready and sup.process is not None and sup.process.pid == pid

            # A launch that needs the keys: the model loads, the endpoint stays off.
            sup.endpoint = EndpointOptions(enabled=True, port=port, require_key=True)
            model = await sup.start(tiny_model_q8, TINY)
            assert sup.ready and model
            assert not sup.endpoint.enabled and sup.endpoint_port is None
            assert "Cannot read the API keys" in (sup.endpoint_error or "")
            client = sup.client
            assert client is not None and await client.models() == [model]
        finally:
            await sup.stop()

    asyncio.run(asyncio.wait_for(scenario(), 180))
