"""Importing Claude Desktop's, Cursor's and LM Studio's servers from files written here,
at each app's place on each OS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hearth.config.secret_stores import FileStore
from hearth.tools.mcp_file import McpFile
from hearth.tools.mcp_import import (
    CLAUDE_DESKTOP,
    CURSOR,
    LM_STUDIO,
    candidate_paths,
    find_sources,
    offer_from,
    offers,
)


def write(path: Path, servers: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.mark.parametrize(
    ("system", "claude"),
    [
        ("Darwin", "Library/Application Support/Claude/claude_desktop_config.json"),
        ("Linux", ".config/Claude/claude_desktop_config.json"),
        ("Windows", "AppData/Roaming/Claude/claude_desktop_config.json"),
    ],
)
def test_each_app_is_looked_for_where_it_keeps_its_file(tmp_path: Path, system: str, claude: str):
    appdata = tmp_path / "AppData" / "Roaming" if system == "Windows" else None
    paths = {s.app: s.path for s in candidate_paths(system, tmp_path, appdata)}
    assert paths == {
        CLAUDE_DESKTOP: tmp_path / claude,
        CURSOR: tmp_path / ".cursor" / "mcp.json",
        LM_STUDIO: tmp_path / ".lmstudio" / "mcp.json",
    }
    assert find_sources(system, tmp_path, appdata) == []
    write(tmp_path / ".cursor" / "mcp.json", {})
    write(tmp_path / claude, {})
    assert [s.app for s in find_sources(system, tmp_path, appdata)] == [CLAUDE_DESKTOP, CURSOR]


def test_an_offer_skips_names_already_here_and_says_what_it_cannot_use(tmp_path: Path):
    write(tmp_path / ".lmstudio" / "mcp.json", {
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
        "fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "autoApprove": ["fetch"]},
        "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    })  # fmt: skip
    (source,) = find_sources("Linux", tmp_path)
    offer = offer_from(source, configured={"time"})
    assert list(offer.servers) == ["fetch"]
    assert offer.servers["fetch"]["autoApprove"] == ["fetch"]  # kept as the app wrote it
    assert offer.skipped == ("time",)
    assert "SSE" in offer.unusable["old"]
    summary = offer.summary()
    assert "LM Studio" in summary and "1 to import (fetch)" in summary
    assert "already here: time" in summary and "old (" in summary


def test_importing_moves_the_secrets_into_the_store(tmp_path: Path):
    write(tmp_path / "Library/Application Support/Claude/claude_desktop_config.json", {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_imported"}},
    })  # fmt: skip
    store = FileStore(tmp_path / "secrets.json")
    target = McpFile(tmp_path / "config" / "mcp.json", lambda: store)
    (offer,) = offers(configured=(), sources=find_sources("Darwin", tmp_path))
    config = target.add_all(offer.servers)
    assert [e.name for e in config.servers] == ["github"]
    assert "ghp_imported" not in target.path.read_text()
    assert store.get("mcp/github/env/GITHUB_PERSONAL_ACCESS_TOKEN") == "ghp_imported"
    assert offers(configured=["github"], sources=find_sources("Darwin", tmp_path)) == []


def test_a_broken_file_is_not_offered(tmp_path: Path):
    bad = tmp_path / ".cursor" / "mcp.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    assert offers(configured=(), sources=find_sources("Linux", tmp_path)) == []
