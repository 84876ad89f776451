"""The chat's tool loop (tools/chat_loop.py) on the real MCP host and the SDK's toy
server: approval and standing permissions, results the model sees, errors that become
results (denied, unknown tool, bad arguments, timeout, crash), the step limit, Stop
during a call (kept as stopped, and cancelled at the server), and the permissions file
touched off the loop's thread. The model is a list of scripted steps: the UI tests drive
a real one."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hearth.chats import ApprovedBy, ToolCallRecord, ToolOutcome
from hearth.tools import McpHost, Permission, ToolPermissions, parse_config
from hearth.tools.chat_loop import Approval, StepReply, ToolCatalog, ToolLoop, ToolRequest, replay
from mcp_testing import CANCEL, TOY


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: str


class Model:
    """Answers each step from a script; records what it was sent."""

    def __init__(self, *steps: StepReply) -> None:
        self.steps = list(steps)
        self.seen: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []

    async def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> StepReply:
        self.seen.append(([dict(m) for m in messages], tools))
        return self.steps.pop(0) if self.steps else StepReply("done")


class Asker:
    def __init__(self, *answers: Approval) -> None:
        self.answers = list(answers)
        self.asked: list[ToolRequest] = []

    async def __call__(self, request: ToolRequest) -> Approval:
        self.asked.append(request)
        return self.answers.pop(0)


async def _run(
    tmp_path: Path,
    model: Model,
    asker: Asker,
    permissions: ToolPermissions | None = None,
    **kwargs: Any,
):
    host = McpHost(
        parse_config({"mcpServers": {"toy": {"command": sys.executable, "args": [TOY]}}}),
        log_dir=tmp_path / "logs",
        start_timeout=60,
    )
    kept: list[ToolCallRecord] = []
    try:
        catalog = ToolCatalog(await host.tools("toy"))
        permissions = permissions or ToolPermissions(tmp_path / "p.json")
        loop = ToolLoop(host, permissions, asker, keep=kept.append, **kwargs)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
        outcome = await loop.run(messages, model, catalog)
        return outcome, kept, messages, catalog
    finally:
        await host.close()


def test_approved_call_result_goes_back_to_the_model_and_is_kept(tmp_path: Path):
    model = Model(StepReply("Adding. ", [Call("c1", "add", '{"a": 2, "b": 40}')]), StepReply("42"))
    asker = Asker(Approval.ONCE)
    outcome, kept, messages, catalog = asyncio.run(_run(tmp_path, model, asker))
    assert [(r.server, r.tool, r.arguments) for r in asker.asked] == [
        ("toy", "add", '{"a": 2, "b": 40}')
    ]
    assert asker.asked[0].pretty_arguments == '{\n  "a": 2,\n  "b": 40\n}'
    (record,) = kept
    assert outcome.calls == kept and not outcome.limited
    assert (record.outcome, record.result, record.step, record.offset) == (
        ToolOutcome.OK, "42", 0, len("Adding. ")
    )  # fmt: skip
    assert record.seconds is not None and record.seconds > 0
    second_messages, second_tools = model.seen[1]
    assert second_tools is not None and {t["function"]["name"] for t in second_tools} >= {"add"}
    assert second_messages[-2]["tool_calls"][0]["function"]["name"] == "add"
    assert second_messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "42"}
    # Kept as one reply, it is sent again as the same messages.
    assert replay("Adding. 42", kept, catalog) == [*messages[1:], {"role": "assistant",
                                                                   "content": "42"}]  # fmt: skip


def test_deny_always_allow_and_the_errors_the_model_is_told(tmp_path: Path):
    model = Model(
        StepReply("", [
            Call("d", "add", '{"a": 1, "b": 1}'),
            Call("a", "add", '{"a": 1, "b": 2}'),
            Call("n", "add", '{"a": 3, "b": 4}'),  # always allowed now: not asked
            Call("u", "nope", "{}"),
            Call("j", "add", "[1, 2]"),
            Call("f", "fail", '{"message": "broken on purpose"}'),
        ]),
    )  # fmt: skip
    asker = Asker(Approval.DENY, Approval.ALWAYS, Approval.ONCE)
    _outcome, kept, _messages, _catalog = asyncio.run(_run(tmp_path, model, asker))
    assert [r.tool for r in asker.asked] == ["add", "add", "fail"]  # add: always, after
    assert [r.outcome for r in kept] == [
        ToolOutcome.DENIED, ToolOutcome.OK, ToolOutcome.OK, ToolOutcome.ERROR,
        ToolOutcome.ERROR, ToolOutcome.ERROR,
    ]  # fmt: skip
    assert [r.approval for r in kept] == [
        ApprovedBy.DENIED, ApprovedBy.ALWAYS, ApprovedBy.STANDING, None,  # nope: not asked
        ApprovedBy.STANDING, ApprovedBy.ONCE,
    ]  # fmt: skip
    assert kept[0].result == "The user denied this tool call."
    assert [kept[1].result, kept[2].result] == ["3", "7"]
    assert "no tool named 'nope'" in kept[3].result and "add" in kept[3].result
    assert "not a JSON object" in kept[4].result
    assert "broken on purpose" in kept[5].result
    assert ToolPermissions(tmp_path / "p.json").allows("toy", "add")
    assert [m["content"] for m in model.seen[1][0] if m["role"] == "tool"] == [
        r.result for r in kept
    ]


def test_a_timeout_and_a_crash_are_results_and_the_turn_goes_on(tmp_path: Path):
    model = Model(
        StepReply("", [Call("t", "nap", '{"seconds": 30}')]),
        StepReply("", [Call("x", "die", "{}")]),
        StepReply("", [Call("ok", "add", '{"a": 5, "b": 5}')]),  # started again
        StepReply("All done."),
    )
    asker = Asker(*[Approval.ONCE] * 3)
    outcome, kept, _m, _c = asyncio.run(_run(tmp_path, model, asker, call_timeout=1.0))
    timeout, crash, again = kept
    assert timeout.outcome is ToolOutcome.ERROR and "did not answer within 1 s" in timeout.result
    assert crash.outcome is ToolOutcome.ERROR and "crashed" in crash.result
    assert (again.outcome, again.result) == (ToolOutcome.OK, "10")
    assert len(model.seen) == 4 and not outcome.limited


def test_the_step_limit_ends_with_an_answer_without_tools(tmp_path: Path):
    calls = [StepReply("", [Call(f"c{i}", "add", '{"a": 1, "b": 1}')]) for i in range(5)]
    model = Model(*calls)
    asker = Asker(Approval.ALWAYS)
    outcome, kept, _m, _c = asyncio.run(_run(tmp_path, model, asker, step_limit=2))
    assert len(kept) == 2 and outcome.limited
    assert [tools is None for _msgs, tools in model.seen] == [False, False, True]


def test_stop_during_a_tool_call_keeps_it_as_stopped(tmp_path: Path):
    model = Model(StepReply("", [Call("n", "nap", '{"seconds": 20}')]))
    kept: list[ToolCallRecord] = []

    async def scenario() -> None:
        host = McpHost(
            parse_config({"mcpServers": {"toy": {"command": sys.executable, "args": [TOY]}}}),
            log_dir=tmp_path / "logs",
            start_timeout=60,
        )
        running = asyncio.Event()

        def status(text: str) -> None:
            if text.startswith("Running nap"):
                running.set()

        try:
            catalog = ToolCatalog(await host.tools("toy"))
            loop = ToolLoop(host, ToolPermissions(tmp_path / "p.json"), Asker(Approval.ONCE),
                            keep=kept.append, status=status)  # fmt: skip
            task = asyncio.create_task(loop.run([], model, catalog))
            await running.wait()
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            else:
                raise AssertionError("the loop went on after Stop")
        finally:
            await host.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    (record,) = kept
    assert record.outcome is ToolOutcome.STOPPED and len(model.seen) == 1


def test_a_tool_name_two_servers_share_is_told_apart():
    from hearth.tools import ToolInfo

    catalog = ToolCatalog([ToolInfo("a", "run", "", {}), ToolInfo("b.x", "run", "", {}),
                           ToolInfo("a", "only", "", {})])  # fmt: skip
    names = [spec["function"]["name"] for spec in catalog.specs()]
    assert names == ["a_run", "b_x_run", "only"]
    assert catalog.resolve("b_x_run") == ToolInfo("b.x", "run", "", {})
    assert json.loads(json.dumps(catalog.specs()))[2]["function"]["parameters"]["type"] == "object"


class WatchedPermissions(ToolPermissions):
    """Notes the thread each read and write of the permissions file came from."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.threads: list[threading.Thread] = []

    def entries(self) -> list[Permission]:
        self.threads.append(threading.current_thread())
        return super().entries()

    def allow(self, server: str, tool: str) -> Permission:
        self.threads.append(threading.current_thread())
        return super().allow(server, tool)


def test_permissions_are_read_and_written_off_the_loops_thread(tmp_path: Path):
    """The loop runs on the GUI's thread in the app: the file is touched off it."""
    model = Model(StepReply("", [Call("a", "add", '{"a": 1, "b": 2}'),
                                 Call("b", "add", '{"a": 2, "b": 2}')]))  # fmt: skip
    permissions = WatchedPermissions(tmp_path / "p.json")
    _o, kept, _m, _c = asyncio.run(_run(tmp_path, model, Asker(Approval.ALWAYS), permissions))
    assert [r.result for r in kept] == ["3", "4"]
    assert len(permissions.threads) >= 3  # allows, allow, then allows again
    assert threading.main_thread() not in permissions.threads


def test_stop_during_a_tool_call_cancels_it_at_the_server(tmp_path: Path):
    """Stop in the chat reaches the MCP server (``notifications/cancelled``), and the
    next turn's call on the same server works."""
    marker = tmp_path / "linger.txt"
    arguments = json.dumps({"marker": str(marker), "seconds": 3600})
    model = Model(StepReply("", [Call("l", "linger", arguments)]))

    def said(word: str) -> bool:
        return marker.exists() and word in marker.read_text(encoding="utf-8").split()

    async def until(word: str) -> None:
        deadline = time.monotonic() + 60
        while not said(word):
            assert time.monotonic() < deadline, f"the server never wrote {word!r}"
            await asyncio.sleep(0.01)

    async def scenario() -> None:
        config = {"mcpServers": {"slow": {"command": sys.executable, "args": [CANCEL]}}}
        host = McpHost(parse_config(config), log_dir=tmp_path / "logs", start_timeout=60)
        try:
            catalog = ToolCatalog(await host.tools("slow"))
            loop = ToolLoop(host, ToolPermissions(tmp_path / "p.json"), Asker(Approval.ONCE),
                            keep=kept.append, call_timeout=3600)  # fmt: skip
            task = asyncio.create_task(loop.run([], model, catalog))
            await until("started")
            task.cancel()  # Stop
            with pytest.raises(asyncio.CancelledError):
                await task
            await until("cancelled")
            answer = await host.call("slow", "echo", {"text": "next turn"})
            assert answer.text == "next turn"
        finally:
            await host.close()

    kept: list[ToolCallRecord] = []
    asyncio.run(asyncio.wait_for(scenario(), 120))
    (record,) = kept
    assert record.outcome is ToolOutcome.STOPPED
    assert "finished" not in marker.read_text(encoding="utf-8")
