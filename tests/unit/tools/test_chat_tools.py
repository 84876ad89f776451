"""The chat's view of mcp.json: read again when it changes, each chat's choice of tools,
a server that can't start named with its reason."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

from hearth.tools import ToolInfo, ToolPermissions
from hearth.tools.chat_tools import ChatTools


def _write(path: Path, servers: dict[str, object], bump: int) -> None:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + bump))  # a later edit


def test_an_edited_mcp_json_is_read_again(tmp_path: Path):
    path = tmp_path / "mcp.json"
    tools = ChatTools(path, ToolPermissions(tmp_path / "p.json"))
    assert not tools.loaded and tools.servers == []

    async def scenario() -> None:
        await tools.reload()
        assert tools.loaded and tools.servers == [] and tools.config_error is None  # no file
        _write(path, {"a": {"command": "x"}, "off": {"command": "y", "disabled": True}}, 1)
        assert tools.servers == []  # the properties never read the file: reload does
        await tools.reload()
        first = tools.host
        assert tools.servers == ["a"]
        await tools.reload()
        assert tools.host is first  # unchanged on disk: the same host (and its servers)
        tools.known["a"] = (ToolInfo("a", "t", "", {}),)
        _write(path, {"b": {"command": "x"}}, 2_000_000)
        await tools.reload()
        assert tools.servers == ["b"] and tools.host is not first
        assert "a" not in tools.known  # a removed server's tools are not offered
        path.write_text("{broken", encoding="utf-8")
        await tools.reload()
        assert tools.servers == [] and "not valid JSON" in (tools.config_error or "")
        await tools.aclose()

    asyncio.run(scenario())


def test_mcp_json_is_read_on_a_worker_thread(tmp_path: Path):
    """The chat's loop is the GUI's: the file is read off it."""
    path = tmp_path / "mcp.json"
    _write(path, {"a": {"command": "x"}}, 1)
    seen: list[threading.Thread] = []

    class Watched(ChatTools):
        @staticmethod
        def _read(path: Path, known: object):  # type: ignore[no-untyped-def]
            seen.append(threading.current_thread())
            return ChatTools._read(path, known)

    tools = Watched(path, ToolPermissions(tmp_path / "p.json"))
    asyncio.run(tools.reload())
    assert tools.servers == ["a"]
    assert seen and threading.main_thread() not in seen


def test_a_saved_chat_keeps_its_choice_and_a_new_chat_starts_with_the_last(tmp_path: Path):
    tools = ChatTools(tmp_path / "mcp.json", ToolPermissions(tmp_path / "p.json"))
    kept: dict[int, frozenset[tuple[str, str]]] = {}
    tools.on_choice = kept.__setitem__
    tools.known["s"] = (ToolInfo("s", "a", "", {}), ToolInfo("s", "b", "", {}))
    tools.toggle("s", None, True, chat=1)  # every tool of s
    assert kept == {1: {("s", "a"), ("s", "b")}}
    tools.toggle("s", "b", False, chat=None)  # a new chat, not saved yet: nothing kept
    assert list(kept) == [1]
    tools.saved(2)  # its first turn saved it
    assert kept[2] == {("s", "a")} == tools.choice
    tools.open_chat(kept[1])
    assert tools.choice == {("s", "a"), ("s", "b")}
    assert tools.schema_tokens() > 0


def test_a_server_that_cannot_start_lists_nothing_and_says_why(tmp_path: Path):
    path = tmp_path / "mcp.json"
    _write(path, {"gone": {"command": str(tmp_path / "no-such-program")}}, 1)
    tools = ChatTools(path, ToolPermissions(tmp_path / "p.json"), log_dir=tmp_path)

    async def scenario() -> tuple[ToolInfo, ...]:
        try:
            return await tools.list_tools("gone")
        finally:
            await tools.aclose()

    assert asyncio.run(scenario()) == ()
    assert "not found" in tools.errors["gone"]
