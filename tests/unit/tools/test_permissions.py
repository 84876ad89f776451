"""Standing tool permissions: one tool of one server, kept on disk, revocable."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hearth.tools.permissions import Permission, ToolPermissions, ToolPermissionsError


def test_allow_is_one_tool_of_one_server_and_survives_a_restart(tmp_path: Path):
    path = tmp_path / "tool-permissions.json"
    before = time.time()
    granted = ToolPermissions(path).allow("time", "get_current_time")
    assert isinstance(granted, Permission) and granted.granted >= before

    again = ToolPermissions(path)  # a new process's view of the same file
    assert again.allows("time", "get_current_time")
    assert not again.allows("time", "convert_time")  # another tool of that server
    assert not again.allows("clock", "get_current_time")  # that tool name elsewhere
    assert again.entries() == [granted]


def test_granting_twice_keeps_one_entry_and_its_first_date(tmp_path: Path):
    perms = ToolPermissions(tmp_path / "p.json")
    first = perms.allow("s", "t")
    assert perms.allow("s", "t") == first
    assert perms.entries() == [first]


def test_revoke_asks_again_and_the_others_stay(tmp_path: Path):
    path = tmp_path / "p.json"
    perms = ToolPermissions(path)
    perms.allow("s", "a")
    perms.allow("s", "b")
    assert perms.revoke("s", "a") is True
    assert perms.revoke("s", "a") is False  # not allowed any more
    assert [(p.server, p.tool) for p in ToolPermissions(path).entries()] == [("s", "b")]
    assert not perms.allows("s", "a") and perms.allows("s", "b")


def test_a_revoke_elsewhere_holds_at_the_next_look(tmp_path: Path):
    """Settings and the chat may each hold one: the file is the only owner."""
    path = tmp_path / "p.json"
    chat, settings = ToolPermissions(path), ToolPermissions(path)
    chat.allow("s", "t")
    assert settings.allows("s", "t")
    settings.revoke("s", "t")
    assert not chat.allows("s", "t")


def test_the_file_is_plain_json_and_written_whole(tmp_path: Path):
    path = tmp_path / "cfg" / "p.json"  # the folder is made
    ToolPermissions(path).allow("srv", "tool")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == 1
    assert [(p["server"], p["tool"]) for p in data["permissions"]] == [("srv", "tool")]
    assert [p.name for p in path.parent.iterdir()] == ["p.json"]  # no temp file left


@pytest.mark.parametrize(
    "text",
    ["{not json", '{"schema_version": 99, "permissions": []}', '{"permissions": 3}', "[]"],
)
def test_a_damaged_file_allows_nothing(tmp_path: Path, text: str):
    path = tmp_path / "p.json"
    path.write_text(text, encoding="utf-8")
    perms = ToolPermissions(path)
    assert perms.entries() == []
    assert not perms.allows("s", "t")
    perms.allow("s", "t")  # and a new grant replaces it with a good file
    assert ToolPermissions(path).allows("s", "t")


@pytest.mark.skipif(os.name == "nt" or os.geteuid() == 0, reason="needs POSIX permissions")
def test_a_grant_that_cannot_be_saved_says_so(tmp_path: Path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        perms = ToolPermissions(folder / "p.json")
        with pytest.raises(ToolPermissionsError, match="Cannot save the tool permissions"):
            perms.allow("s", "t")
        assert not perms.allows("s", "t")
    finally:
        folder.chmod(0o700)
