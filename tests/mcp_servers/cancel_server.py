"""A small MCP server written with the SDK, for the MCP host's cancellation tests.

``python cancel_server.py`` speaks stdio; ``python cancel_server.py PORT`` serves
streamable HTTP on 127.0.0.1:PORT at /mcp. Its ``linger`` tool writes ``started`` to the
file it is given and then waits; when the client cancels the call (MCP's
``notifications/cancelled``, which interrupts the handler), it appends ``cancelled``.
A test reads that file: the server's own word that it was told to stop. A separate
server from ``toy_server.py`` so that the toy's tool count, which other tests list,
stays as it is."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("cancel")


@server.tool()
async def linger(marker: str, seconds: float = 120.0) -> str:
    """Write 'started' to the marker file, wait, and record a cancellation there."""
    _note(Path(marker), "started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _note(Path(marker), "cancelled")  # no await here: the handler's scope is cancelled
        raise
    _note(Path(marker), "finished")
    return "lingered"


def _note(path: Path, word: str) -> None:
    """One word a line; a few bytes, so written in place even from the async handler."""
    with path.open("a", encoding="utf-8") as out:
        out.write(word + "\n")


@server.tool()
def echo(text: str) -> str:
    """Say the text back: the call after a cancelled one."""
    return text


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run()
