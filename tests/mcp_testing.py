"""The test MCP servers (tests/mcp_servers/) and a way to run one over streamable HTTP.

Several test modules start the same scripts; their paths, the wait until an HTTP
server listens and the look for a stdio server's process are defined here once, so
every test starts (and finds) them the same way.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
import pytest

from server_process import free_port

SERVERS = Path(__file__).resolve().parent / "mcp_servers"
TOY = str(SERVERS / "toy_server.py")  # add, nap, die, env... (the SDK's FastMCP)
CANCEL = str(SERVERS / "cancel_server.py")  # writes what it saw of a call to a file


@contextmanager
def mcp_http_server(script: str) -> Iterator[str]:
    """Run ``script`` as a streamable HTTP MCP server on a free port and yield its
    endpoint once it answers; fail the test if it exits first, and end it after."""
    port = free_port()
    process = subprocess.Popen([sys.executable, script, str(port)], stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # until it listens; each try waits on the process a little
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
                break
            except httpx.TransportError:
                try:
                    process.wait(timeout=0.1)
                    pytest.fail(f"the MCP server {Path(script).name} exited")
                except subprocess.TimeoutExpired:
                    continue
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def server_processes(mark: str) -> list[psutil.Process]:
    """This process's live descendants whose command line names ``mark`` (a script's
    path, say): the stdio servers a host started, which only the host can stop."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            named = any(mark in part for part in child.cmdline())
            if named and child.status() != psutil.STATUS_ZOMBIE:
                found.append(child)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def process_gone(process: psutil.Process) -> bool:
    """Whether ``process`` has ended (a zombie has: only its exit status is left)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
