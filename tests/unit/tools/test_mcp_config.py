"""``mcp.json`` as Claude Desktop, Cursor and LM Studio write it, and what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hearth.tools import McpConfigError, load_config, parse_config
from hearth.tools.mcp_config import SECRET_PREFIX


def test_stdio_and_http_servers_in_the_mcp_servers_format(tmp_path: Path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"X-Key": "k"}},
        "off": {"command": "x", "disabled": True},
        "typed": {"type": "streamable-http", "url": "https://example.invalid/mcp"},
    }}))  # fmt: skip
    config = load_config(path)
    assert [e.name for e in config.servers] == ["time", "docs", "off", "typed"]
    time_entry, docs, _off, typed = config.servers
    assert (time_entry.transport, time_entry.command, time_entry.args) == (
        "stdio", "uvx", ("mcp-server-time",)
    )  # fmt: skip
    assert dict(time_entry.env) == {"TZ": "UTC"}
    assert (docs.transport, docs.url, dict(docs.headers)) == (
        "http", "http://127.0.0.1:8000/mcp", {"X-Key": "k"}
    )  # fmt: skip
    assert typed.transport == "http"
    assert [e.name for e in config.enabled] == ["time", "docs", "typed"]
    assert time_entry.describe() == "uvx mcp-server-time"


def test_a_missing_file_is_no_servers(tmp_path: Path):
    config = load_config(tmp_path / "absent.json")
    assert config.servers == () and config.path == tmp_path / "absent.json"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ([], "JSON object"),
        ({"mcpServers": []}, "object of servers"),
        ({"mcpServers": {"a": {"args": ["x"]}}}, "needs a \"command\""),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "list of strings"),
        ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, "env must be an object"),
        ({"mcpServers": {"a": {"url": "ftp://x"}}}, "http:// or https://"),
        ({"mcpServers": {"a": {"type": "sse", "url": "http://x/sse"}}}, "SSE"),
    ],
)
def test_what_is_wrong_is_named(data: object, words: str):
    with pytest.raises(McpConfigError, match=words):
        parse_config(data)


def test_broken_json_says_where(tmp_path: Path):
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"a": }')
    with pytest.raises(McpConfigError, match=r"not valid JSON \(line 1"):
        load_config(path)


def test_a_file_that_is_not_text_says_so(tmp_path: Path):
    from hearth.tools.mcp_file import McpFile

    path = tmp_path / "mcp.json"
    path.write_bytes(b'{"mcpServers": {}}\xff\xfe\x00junk')
    with pytest.raises(McpConfigError, match="not UTF-8 text"):
        load_config(path)
    with pytest.raises(McpConfigError, match="not UTF-8 text"):
        McpFile(path, lambda: None).read()  # type: ignore[arg-type,return-value]


def test_secret_references_are_resolved_and_a_missing_one_is_named():
    config = parse_config({"mcpServers": {"gh": {
        "command": "x", "env": {"TOKEN": f"{SECRET_PREFIX}mcp/gh/TOKEN", "PLAIN": "p"},
    }}})  # fmt: skip
    entry = config.server("gh")
    resolved = entry.with_secrets({"mcp/gh/TOKEN": "s3cret"}.get)
    assert dict(resolved.env) == {"TOKEN": "s3cret", "PLAIN": "p"}
    with pytest.raises(McpConfigError, match="mcp/gh/TOKEN"):
        entry.with_secrets({}.get)
    with pytest.raises(McpConfigError, match="No MCP server named 'x'"):
        config.server("x")
