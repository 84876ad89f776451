"""A call that is stopped (the chat's Stop, or the host's own timeout) is cancelled at
the MCP server too: the SDK sends ``notifications/cancelled``, the server's handler is
interrupted, and the next call on the same connection works. Over stdio and over
streamable HTTP, against ``tests/mcp_servers/cancel_server.py``, which writes what it
saw to a file the test reads."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hearth.tools import McpHost, ServerState, ToolCallError, parse_config
from mcp_testing import CANCEL, mcp_http_server


async def until(predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait on observable state (a file the server writes), with a deadline."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def said(marker: Path, word: str) -> Callable[[], bool]:
    return lambda: marker.exists() and word in marker.read_text(encoding="utf-8").split()


@pytest.fixture
def cancel_http() -> Iterator[str]:
    with mcp_http_server(CANCEL) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def server_entry(request: pytest.FixtureRequest) -> dict[str, object]:
    if request.param == "http":
        return {"url": request.getfixturevalue("cancel_http")}
    return {"command": sys.executable, "args": [CANCEL]}


def host_for(entry: dict[str, object], tmp_path: Path) -> McpHost:
    config = parse_config({"mcpServers": {"slow": entry}})
    return McpHost(config, log_dir=tmp_path / "logs", start_timeout=60)


def test_stop_during_a_call_cancels_it_at_the_server(
    tmp_path: Path, server_entry: dict[str, object]
):
    marker = tmp_path / "linger.txt"

    async def scenario() -> None:
        host = host_for(server_entry, tmp_path)
        try:
            # A limit far past the wait below: only the Stop can cancel this call.
            arguments = {"marker": str(marker), "seconds": 3600}
            call = asyncio.create_task(host.call("slow", "linger", arguments, timeout=3600))
            await until(said(marker, "started"), "the tool to start")
            call.cancel()  # what the chat's Stop does to the task awaiting the call
            with pytest.raises(asyncio.CancelledError):
                await call
            await until(said(marker, "cancelled"), "the server to see the cancellation")
            assert "finished" not in marker.read_text(encoding="utf-8")
            answer = await host.call("slow", "echo", {"text": "still here"}, timeout=30)
            assert answer.text == "still here" and not answer.is_error
            assert host.status("slow").state is ServerState.RUNNING
        finally:
            await host.close()

    asyncio.run(scenario())


def test_a_timed_out_call_is_cancelled_at_the_server(
    tmp_path: Path, server_entry: dict[str, object]
):
    marker = tmp_path / "linger.txt"

    async def scenario() -> None:
        host = host_for(server_entry, tmp_path)
        try:
            await host.tools("slow")  # started first: the limit is the call's alone
            with pytest.raises(ToolCallError, match="did not answer within 1 s"):
                await host.call("slow", "linger", {"marker": str(marker), "seconds": 3600},
                                timeout=1)  # fmt: skip
            await until(said(marker, "cancelled"), "the server to see the cancellation")
            answer = await host.call("slow", "echo", {"text": "next"}, timeout=30)
            assert answer.text == "next"
        finally:
            await host.close()

    asyncio.run(scenario())
