"""A small MCP server written with the official SDK, for the MCP host's tests.

``python toy_server.py`` speaks stdio; ``python toy_server.py PORT`` serves streamable
HTTP on 127.0.0.1:PORT at /mcp. Its tools add, sleep (for timeouts), exit the process
(for crashes), and read an environment variable (for the child's environment)."""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("toy")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers.

    A second paragraph that a one-line listing leaves out."""
    return a + b


@server.tool()
def nap(seconds: float) -> str:
    """Sleep for a while, then answer."""
    time.sleep(seconds)
    return "rested"


@server.tool()
def die() -> str:
    """End the server's process at once."""
    os._exit(3)


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable in the server's process, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool()
def fail(message: str) -> str:
    """Report an error from the tool itself."""
    raise ToolError(message)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run()
