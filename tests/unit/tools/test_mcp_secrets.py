"""Secrets never in ``mcp.json``: every save moves them into the secret store (a real
file store here) and leaves ``hearth-secret:NAME`` in the file; what the file no longer
names is deleted; a reference the store lacks keeps only that server from starting."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from hearth.config.secret_stores import FileStore
from hearth.tools import McpConfigError, McpHost, ServerState, ToolCallError
from hearth.tools.mcp_file import McpFile
from hearth.tools.mcp_secrets import looks_secret, missing, plain_secrets, seal_entry
from mcp_testing import TOY


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "secrets.json")


@pytest.fixture
def mcp_file(tmp_path: Path, store: FileStore) -> McpFile:
    return McpFile(tmp_path / "mcp.json", lambda: store)


@pytest.mark.parametrize(
    "name", ["GITHUB_PERSONAL_ACCESS_TOKEN", "BRAVE_API_KEY", "DB_PASSWORD", "OPENAI_KEY",
             "AWS_SECRET_ACCESS_KEY", "GITLAB_PAT", "client_secret", "SLACK_BOT_TOKEN"],
)  # fmt: skip
def test_names_that_say_secret(name: str):
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["TZ", "PWD", "KEYBOARD_LAYOUT", "PATH", "LOG_LEVEL", "MONKEY"])
def test_names_that_do_not(name: str):
    assert not looks_secret(name)


def test_a_save_moves_env_secrets_and_every_header_into_the_store(
    mcp_file: McpFile, store: FileStore
):
    mcp_file.save({"mcpServers": {
        "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_abc123", "TZ": "UTC",
                                            "ORG": "acme"}},
        "docs": {"url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer xyz 9"}},
    }}, marked={"gh": {"ORG"}})  # fmt: skip
    text = mcp_file.path.read_text()
    for value in ("ghp_abc123", "Bearer xyz 9", "acme"):
        assert value not in text
    servers = json.loads(text)["mcpServers"]
    assert servers["gh"]["env"] == {
        "GITHUB_TOKEN": "hearth-secret:mcp/gh/env/GITHUB_TOKEN", "TZ": "UTC",
        "ORG": "hearth-secret:mcp/gh/env/ORG",
    }  # fmt: skip
    auth = "hearth-secret:mcp/docs/headers/Authorization"
    assert servers["docs"]["headers"] == {"Authorization": auth}
    assert store.get("mcp/gh/env/GITHUB_TOKEN") == "ghp_abc123"
    assert store.get("mcp/docs/headers/Authorization") == "Bearer xyz 9"
    resolved = mcp_file.save(json.loads(text)).server("docs").with_secrets(store.get)
    assert dict(resolved.headers) == {"Authorization": "Bearer xyz 9"}


def test_the_json_view_cannot_leave_a_key_in_the_file(mcp_file: McpFile, store: FileStore):
    mcp_file.save_text('{"mcpServers": {"s": {"command": "x", "env": {"API_KEY": "k-1"}}}}')
    assert "k-1" not in mcp_file.text()
    assert store.get("mcp/s/env/API_KEY") == "k-1"


def test_a_refused_save_stores_nothing_and_writes_nothing(mcp_file: McpFile, store: FileStore):
    with pytest.raises(McpConfigError, match=r"line 1, column"):
        mcp_file.save_text('{"mcpServers": {"s": }')
    with pytest.raises(McpConfigError, match='needs a "command"'):
        mcp_file.save({"mcpServers": {"s": {"env": {"API_KEY": "k-1"}}}})
    assert not mcp_file.path.exists() and store.get("mcp/s/env/API_KEY") is None


def test_removing_a_server_or_a_header_deletes_its_secret(mcp_file: McpFile, store: FileStore):
    mcp_file.put("a", {"command": "x", "env": {"A_TOKEN": "t1"}})
    mcp_file.put("b", {"url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": "k", "X-Other": "o"}})
    mcp_file.remove("a")
    assert store.get("mcp/a/env/A_TOKEN") is None
    raw = mcp_file.servers()["b"]
    del raw["headers"]["X-Other"]
    mcp_file.put("b", raw, replacing="b")
    assert store.get("mcp/b/headers/X-Other") is None
    assert store.get("mcp/b/headers/X-Key") == "k"


def test_a_renamed_server_keeps_its_secret_and_its_place(mcp_file: McpFile, store: FileStore):
    mcp_file.put("first", {"command": "x"})
    mcp_file.put("old", {"command": "x", "env": {"A_TOKEN": "t1"}})
    mcp_file.put("last", {"command": "x"})
    raw = mcp_file.servers()["old"]
    config = mcp_file.put("new", raw, replacing="old")
    assert [e.name for e in config.servers] == ["first", "new", "last"]
    assert dict(config.server("new").with_secrets(store.get).env) == {"A_TOKEN": "t1"}
    with pytest.raises(McpConfigError, match="already an MCP server named 'first'"):
        mcp_file.put("first", {"command": "y"})


def test_seal_leaves_references_and_plain_values_alone(store: FileStore):
    raw = {"command": "x", "env": {"A_TOKEN": "hearth-secret:elsewhere", "TZ": "UTC"}, "k": 1}
    assert seal_entry("s", raw, store) == raw
    assert missing(raw, store) == ["elsewhere"]


def test_a_missing_secret_keeps_the_server_from_starting_and_its_row_says_so(
    mcp_file: McpFile, store: FileStore, tmp_path: Path
):
    config = mcp_file.put("toy", {"command": sys.executable, "args": [TOY],
                                  "env": {"TOY_TOKEN": "shh"}})  # fmt: skip
    store.delete("mcp/toy/env/TOY_TOKEN")

    async def scenario() -> None:
        host = McpHost(config, secrets=store.get, log_dir=tmp_path / "logs", start_timeout=60)
        try:
            with pytest.raises(ToolCallError, match="not in the secret store"):
                await host.tools("toy")
            status = host.status("toy")
            assert status.state is ServerState.FAILED
            assert status.error and "mcp/toy/env/TOY_TOKEN" in status.error
        finally:
            await host.close()

    asyncio.run(scenario())


def test_a_stored_secret_reaches_the_child_and_not_the_file(
    mcp_file: McpFile, store: FileStore, tmp_path: Path
):
    config = mcp_file.put("toy", {"command": sys.executable, "args": [TOY],
                                  "env": {"TOY_TOKEN": "shh-42"}})  # fmt: skip
    assert "shh-42" not in mcp_file.path.read_text()

    async def scenario() -> None:
        host = McpHost(config, secrets=store.get, log_dir=tmp_path / "logs", start_timeout=60)
        try:
            assert (await host.call("toy", "env", {"name": "TOY_TOKEN"})).text == "shh-42"
        finally:
            await host.close()

    asyncio.run(scenario())


def test_plain_secrets_names_what_a_save_would_move():
    servers = {
        "gh": {"command": "x", "env": {"GITHUB_TOKEN": "t", "TZ": "UTC", "A_KEY": ""}},
        "docs": {"url": "http://h/mcp", "headers": {"X-Key": "hearth-secret:n", "Auth": "a"}},
        "odd": "not an object",
    }
    assert plain_secrets(servers) == ["gh: GITHUB_TOKEN", "docs: Auth"]
