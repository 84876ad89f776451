"""The MCP host against real servers: ``mcp-server-time`` from PyPI over stdio, and a
server written with the SDK (``tests/mcp_servers/toy_server.py``) over stdio and over
streamable HTTP. Calls time out, servers crash or never start, and the host says so and
goes on; ``hearth mcp ls`` lists what starts and names what doesn't."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hearth.tools import McpHost, ServerState, ToolCallError, parse_config
from mcp_testing import TOY, mcp_http_server

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


def host_for(
    servers: dict[str, object], tmp_path: Path, start_timeout: float = 60, **kwargs: Any
) -> McpHost:
    config = parse_config({"mcpServers": servers})
    return McpHost(config, log_dir=tmp_path / "logs", start_timeout=start_timeout, **kwargs)


def test_the_time_server_from_pypi_lists_and_answers(tmp_path: Path):
    async def scenario() -> None:
        host = host_for({"time": {"command": TIME_SERVER, "args": ["--local-timezone", "UTC"]}},
                        tmp_path)  # fmt: skip
        try:
            tools = {t.name: t for t in await host.tools("time")}
            assert {"get_current_time", "convert_time"} <= set(tools)
            assert tools["get_current_time"].input_schema["required"] == ["timezone"]
            assert host.status("time").state is ServerState.RUNNING
            result = await host.call("time", "get_current_time", {"timezone": "Asia/Tokyo"})
            assert not result.is_error and result.seconds > 0
            assert json.loads(result.text)["timezone"] == "Asia/Tokyo"
            assert result.structured is not None and result.structured["timezone"] == "Asia/Tokyo"
            bad = await host.call("time", "get_current_time", {"timezone": "Not/AZone"})
            assert bad.is_error and "Not/AZone" in bad.text
        finally:
            await host.close()
        assert host.status("time").state is ServerState.STOPPED

    asyncio.run(scenario())


def test_a_stdio_child_gets_only_the_environment_its_entry_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HEARTH_TEST_PRIVATE", "the app's secret")

    async def scenario() -> None:
        host = host_for({"toy": {"command": sys.executable, "args": [TOY],
                                 "env": {"GIVEN": "yes"}}}, tmp_path)  # fmt: skip
        try:
            assert (await host.call("toy", "env", {"name": "GIVEN"})).text == "yes"
            private = await host.call("toy", "env", {"name": "HEARTH_TEST_PRIVATE"})
            assert private.text == "<unset>"
            assert (await host.call("toy", "add", {"a": 2, "b": 40})).text == "42"
        finally:
            await host.close()

    asyncio.run(scenario())


def test_a_hung_tool_times_out_and_the_server_goes_on(tmp_path: Path):
    async def scenario() -> None:
        host = host_for({"toy": {"command": sys.executable, "args": [TOY]}}, tmp_path)
        try:
            await host.tools("toy")
            with pytest.raises(ToolCallError, match="did not answer within 1 s"):
                await host.call("toy", "nap", {"seconds": 30}, timeout=1)
            answer = await host.call("toy", "add", {"a": 1, "b": 1}, timeout=20)
            assert answer.text == "2"
            failed = await host.call("toy", "fail", {"message": "no such file"})
            assert failed.is_error and "no such file" in failed.text
        finally:
            await host.close()

    asyncio.run(scenario())


def test_a_crashed_server_is_reported_and_started_again_on_the_next_call(tmp_path: Path):
    changes: list[ServerState] = []

    async def scenario() -> None:
        host = host_for({"toy": {"command": sys.executable, "args": [TOY]}}, tmp_path,
                        on_change=lambda s: changes.append(s.state))  # fmt: skip
        try:
            with pytest.raises(ToolCallError, match=r"closed the connection|crashed|exited"):
                await host.call("toy", "die", {})
            assert host.status("toy").state is ServerState.FAILED
            assert host.status("toy").error
            assert (await host.call("toy", "add", {"a": 3, "b": 4})).text == "7"
            assert host.status("toy").state is ServerState.RUNNING
        finally:
            await host.close()

    asyncio.run(scenario())
    assert ServerState.FAILED in changes and changes.count(ServerState.RUNNING) >= 2


def test_servers_that_never_start_say_why(tmp_path: Path):
    quits = "import sys; sys.stderr.write('missing API_TOKEN\\n'); sys.exit(2)"

    async def scenario() -> None:
        host = host_for({
            "nope": {"command": str(tmp_path / "no-such-command")},
            "quits": {"command": sys.executable, "args": ["-c", quits]},
            "silent": {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]},
        }, tmp_path, start_timeout=3)  # fmt: skip
        try:
            with pytest.raises(ToolCallError, match="command was not found"):
                await host.tools("nope")
            with pytest.raises(ToolCallError, match="missing API_TOKEN"):
                await host.tools("quits")
            with pytest.raises(ToolCallError, match="did not start within 3 s"):
                await host.tools("silent")
            assert {s.name: s.state for s in host.statuses()} == dict.fromkeys(
                ("nope", "quits", "silent"), ServerState.FAILED
            )
        finally:
            await host.close()

    asyncio.run(scenario())


@pytest.fixture
def toy_http() -> Iterator[str]:
    with mcp_http_server(TOY) as url:
        yield url


def test_a_streamable_http_server_lists_and_answers(tmp_path: Path, toy_http: str):
    async def scenario() -> None:
        host = host_for({"web": {"url": toy_http, "headers": {"X-Trace": "1"}}}, tmp_path)
        try:
            names = {t.name for t in await host.tools("web")}
            assert {"add", "nap", "die", "env"} <= names
            assert (await host.call("web", "add", {"a": 20, "b": 22})).text == "42"
        finally:
            await host.close()

    asyncio.run(scenario())


def test_hearth_mcp_ls_lists_tools_and_names_what_fails(tmp_path: Path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "toy": {"command": sys.executable, "args": [TOY]},
        "broken": {"command": str(tmp_path / "missing-binary")},
        "resting": {"command": "x", "disabled": True},
    }}))  # fmt: skip
    env = {**os.environ, "HEARTH_CONFIG_DIR": str(tmp_path / "cfg"),
           "HEARTH_DATA_DIR": str(tmp_path / "data")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "hearth", "mcp", "ls", "--config", str(config)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # one server failed
    lines = done.stdout.splitlines()
    assert any(line.startswith("toy  5 tools") for line in lines), done.stdout
    assert any(line.strip().startswith("add") and "Add two whole numbers." in line
               for line in lines), done.stdout  # fmt: skip
    assert "A second paragraph" not in done.stdout  # one line per tool
    assert any(line.startswith("broken  FAILED") for line in lines), done.stdout
    assert "command was not found" in done.stdout
    assert "resting  (turned off)" in done.stdout


def test_hearth_mcp_ls_with_nothing_configured(tmp_path: Path):
    env = {**os.environ, "HEARTH_CONFIG_DIR": str(tmp_path / "cfg")}
    done = subprocess.run([sys.executable, "-m", "hearth", "mcp", "ls"],
                          capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "No MCP servers are configured" in done.stdout
    assert str(tmp_path / "cfg" / "mcp.json") in done.stdout


def test_hearth_mcp_ls_resolves_secrets_and_never_prints_them(tmp_path: Path):
    from hearth.config.secret_stores import FileStore
    from hearth.tools.mcp_file import McpFile

    cfg = tmp_path / "cfg"
    store = FileStore(cfg / "secrets.json")  # the file store HEARTH_SECRET_STORE=file reads
    config = McpFile(tmp_path / "mcp.json", lambda: store)
    config.save({"mcpServers": {
        "toy": {"command": sys.executable, "args": [TOY], "env": {"TOY_TOKEN": "shh-4242"}},
        "keyed": {"command": sys.executable, "args": [TOY], "env": {"OTHER_TOKEN": "gone"}},
    }})  # fmt: skip
    store.delete("mcp/keyed/env/OTHER_TOKEN")
    env = {**os.environ, "HEARTH_CONFIG_DIR": str(cfg), "HEARTH_DATA_DIR": str(tmp_path / "d"),
           "HEARTH_SECRET_STORE": "file"}  # fmt: skip
    command = [sys.executable, "-m", "hearth", "mcp", "ls", "--config", str(config.path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr  # "keyed" can't start
    assert "shh-4242" not in done.stdout + done.stderr
    assert "toy  5 tools" in done.stdout
    assert "  env TOY_TOKEN: in the secret store (mcp/toy/env/TOY_TOKEN)" in done.stdout
    assert "keyed  FAILED" in done.stdout and "is not in the secret store" in done.stdout
    assert "  env OTHER_TOKEN: NOT in the secret store" in done.stdout
    as_json = subprocess.run([*command, "--json"], capture_output=True, text=True, env=env,
                             timeout=120)  # fmt: skip
    assert "shh-4242" not in as_json.stdout
    rows = {row["server"]: row for row in json.loads(as_json.stdout)}
    assert rows["toy"]["secrets"] == [{"in": "env", "key": "TOY_TOKEN",
                                      "secret": "mcp/toy/env/TOY_TOKEN", "state": "stored"}]
    assert rows["keyed"]["secrets"][0]["state"] == "missing"
