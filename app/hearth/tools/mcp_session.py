"""One open connection to an MCP server, through the official SDK (``mcp`` 2.x).

The SDK's types stay in this module: the host sees plain tool records and results.
A stdio server is started with only the environment its entry names (plus the SDK's
short list of safe variables, such as PATH and HOME): the app's own environment, keys
included, is not passed on. Its stderr goes to ``errlog``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TextIO

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult

from hearth.tools.mcp_config import McpServerEntry

CLIENT_NAME = "hearth"


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    input_schema: dict[str, Any]


class ServerSession:
    """The calls the host makes on a connected server."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def list_tools(self) -> list[ListedTool]:
        tools: list[ListedTool] = []
        cursor: str | None = None
        for _page in range(100):  # a server that pages forever can't hang the start
            page = await self._client.list_tools(cursor=cursor)
            tools.extend(
                ListedTool(t.name, t.description or "", dict(t.input_schema or {}))
                for t in page.tools
            )
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float
    ) -> tuple[str, bool, dict[str, Any] | None]:
        """The result as text for the model, whether the tool reported an error, and its
        structured content if any. A closed connection is a ``ConnectionError``."""
        try:
            result = await self._client.call_tool(name, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise ConnectionError(
                    "the server closed the connection (it may have crashed)"
                ) from exc
            if exc.code == REQUEST_TIMEOUT:
                raise TimeoutError(f"the tool did not answer within {timeout:g} s") from exc
            return f"Error from the MCP server: {exc.message}", True, None
        return _text(result), bool(result.is_error), result.structured_content


def _text(result: CallToolResult) -> str:
    """Text parts as they are; other parts (images, resources) as a short note."""
    parts: list[str] = []
    for item in result.content:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(str(getattr(item, "text", "")))
        elif kind == "resource":
            resource = getattr(item, "resource", None)
            parts.append(
                str(getattr(resource, "text", "") or f"[resource {getattr(resource, 'uri', '')}]")
            )
        else:
            parts.append(f"[{kind or 'content'} omitted]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


@contextlib.asynccontextmanager
async def open_session(
    entry: McpServerEntry, errlog: TextIO | None
) -> AsyncIterator[ServerSession]:
    """Connect to ``entry`` (a child process, or a URL) for as long as the block runs."""
    async with contextlib.AsyncExitStack() as stack:
        if entry.transport == "http":
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=dict(entry.headers), timeout=httpx2.Timeout(30.0))
            )
            transport: Any = streamable_http_client(entry.url, http_client=http)
        else:
            params = StdioServerParameters(
                command=entry.command, args=list(entry.args), env=dict(entry.env) or None,
                cwd=entry.cwd,
            )  # fmt: skip
            transport = stdio_client(params, errlog) if errlog is not None else stdio_client(params)
        client = await stack.enter_async_context(Client(transport, mode="auto"))
        yield ServerSession(client)
