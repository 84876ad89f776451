"""The chat's tool loop: model, tool, model, up to a step limit, with Stop at every step.

Qt-free: the chat hands it a way to run one model step (streaming into the view), a way
to ask the user (the approval dialog) and a way to keep each call (the store). A turn:

1. the model answers, offered the chosen tools; no calls: that answer ends the turn;
2. each call is approved (a standing permission, or the user: Deny, Allow once, Always
   allow this tool of this server), run on the MCP host with a timeout, and its result
   given back as a ``tool`` message. Denied, timed out, crashed, unknown: the model is
   told so in the result, and the turn goes on;
3. back to 1; after ``step_limit`` rounds of calls the model is asked once more with no
   tools, so the turn ends with an answer.

Stop is the task's cancellation: it lands in whichever await is running (the model's
stream, the approval, the tool call); a call cut short is kept as ``stopped``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from hearth.chats.models import ApprovedBy, ToolCallRecord, ToolOutcome
from hearth.tools.mcp_config import McpConfigError
from hearth.tools.mcp_host import ToolCallError, ToolInfo, ToolResult
from hearth.tools.off_loop import off_loop
from hearth.tools.permissions import ToolPermissions, ToolPermissionsError

log = logging.getLogger(__name__)

STEP_LIMIT = 10
CALL_TIMEOUT_S = 30.0
_NAME = re.compile(r"[^A-Za-z0-9_-]")


class Approval(str, Enum):
    DENY = "deny"
    ONCE = "once"
    ALWAYS = "always"  # this tool of this server, from now on


class RequestedCall(Protocol):
    """A call the model made (the worker client's ``StreamedToolCall`` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> str: ...


@dataclass(frozen=True)
class StepReply:
    """One model step: its answer's text and the calls it made."""

    text: str
    calls: Sequence[RequestedCall] = ()


@dataclass(frozen=True)
class ToolRequest:
    """What the approval dialog shows: the server, the tool, the full arguments."""

    server: str
    tool: str
    arguments: str  # as the model wrote them
    parsed: dict[str, Any] | None  # None when they are not a JSON object

    @property
    def pretty_arguments(self) -> str:
        if self.parsed is None:
            return self.arguments
        return json.dumps(self.parsed, indent=2, ensure_ascii=False)


class ToolHost(Protocol):
    """What the loop uses of ``McpHost``."""

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any], timeout: float | None = None
    ) -> ToolResult: ...


ModelStep = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], Awaitable[StepReply]]
Approver = Callable[[ToolRequest], Awaitable[Approval]]


class ToolCatalog:
    """The tools offered to the model, each under one function name (the tool's own, or
    ``server_tool`` when two servers have a tool of that name)."""

    def __init__(self, tools: Sequence[ToolInfo]) -> None:
        counts: dict[str, int] = {}
        for info in tools:
            counts[info.name] = counts.get(info.name, 0) + 1
        self._by_name: dict[str, ToolInfo] = {}
        for info in tools:
            name = info.name if counts[info.name] == 1 else f"{info.server}_{info.name}"
            self._by_name[_NAME.sub("_", name)[:64]] = info

    def __bool__(self) -> bool:
        return bool(self._by_name)

    @property
    def tools(self) -> list[ToolInfo]:
        return list(self._by_name.values())

    def resolve(self, name: str) -> ToolInfo | None:
        return self._by_name.get(name)

    def name_for(self, server: str, tool: str) -> str:
        for name, info in self._by_name.items():
            if (info.server, info.name) == (server, tool):
                return name
        return _NAME.sub("_", tool)[:64]

    def specs(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` list."""
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": info.description,
                    "parameters": info.input_schema or {"type": "object", "properties": {}},
                },
            }
            for name, info in self._by_name.items()
        ]

    def schema_chars(self) -> int:
        """The size of the tools' JSON, for the context warning (about 4 chars a token)."""
        return len(json.dumps(self.specs(), ensure_ascii=False))


def replay(
    content: str, calls: Sequence[ToolCallRecord], catalog: ToolCatalog
) -> list[dict[str, Any]]:
    """A kept reply with tool calls as the OpenAI messages the model saw: per step, the
    assistant's text with its calls, then one ``tool`` message per call; then the rest."""
    if not calls:
        return [{"role": "assistant", "content": content}]
    out: list[dict[str, Any]] = []
    steps: dict[int, list[ToolCallRecord]] = {}
    for call in calls:
        steps.setdefault(call.step, []).append(call)
    start = 0
    for group in (steps[k] for k in sorted(steps)):
        offset = group[0].offset
        out.append(
            {
                "role": "assistant",
                "content": content[start:offset],
                "tool_calls": [_wire_call(c, catalog) for c in group],
            }
        )
        out.extend({"role": "tool", "tool_call_id": c.call_id, "content": c.result} for c in group)
        start = offset
    out.append({"role": "assistant", "content": content[start:]})
    return out


def _wire_call(call: ToolCallRecord, catalog: ToolCatalog) -> dict[str, Any]:
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": catalog.name_for(call.server, call.tool), "arguments": call.arguments},
    }


@dataclass
class LoopOutcome:
    """How the turn ended: the calls made, and whether the step limit was reached."""

    calls: list[ToolCallRecord]
    limited: bool = False


class ToolLoop:
    def __init__(
        self,
        host: ToolHost,
        permissions: ToolPermissions,
        approve: Approver,
        *,
        step_limit: int = STEP_LIMIT,
        call_timeout: float = CALL_TIMEOUT_S,
        keep: Callable[[ToolCallRecord], None] | None = None,
        status: Callable[[str], None] | None = None,
    ) -> None:
        self.host = host
        self.permissions = permissions
        self.approve = approve
        self.step_limit = step_limit
        self.call_timeout = call_timeout
        self._keep = keep or (lambda _record: None)
        self._status = status or (lambda _text: None)

    async def run(
        self, messages: list[dict[str, Any]], step: ModelStep, catalog: ToolCatalog
    ) -> LoopOutcome:
        """Run the turn from ``messages`` (appended to as it goes)."""
        outcome = LoopOutcome([])
        offset = 0
        for index in range(self.step_limit + 1):
            last = index == self.step_limit
            reply = await step(messages, None if last or not catalog else catalog.specs())
            offset += len(reply.text)
            if not reply.calls or last:
                outcome.limited = last and index > 0
                return outcome
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.text,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in reply.calls
                    ],
                }
            )
            for call in reply.calls:
                record = await self._one(call, catalog, index, offset)
                outcome.calls.append(record)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": record.result})
        return outcome  # not reached: the last step returns

    async def _one(
        self, call: RequestedCall, catalog: ToolCatalog, step: int, offset: int
    ) -> ToolCallRecord:
        info = catalog.resolve(call.name)
        server, tool = (info.server, info.name) if info else ("", call.name)

        approval: ApprovedBy | None = None

        def record(outcome: ToolOutcome, result: str, seconds: float | None) -> ToolCallRecord:
            kept = ToolCallRecord(
                step, offset, call.id, server, tool, call.arguments, result, outcome, seconds,
                approval,
            )  # fmt: skip
            self._keep(kept)
            return kept

        if info is None:
            known = ", ".join(catalog.name_for(t.server, t.name) for t in catalog.tools)
            return record(
                ToolOutcome.ERROR,
                f"Error: there is no tool named {call.name!r}. The tools are: {known or 'none'}.",
                None,
            )
        parsed = _arguments(call.arguments)
        request = ToolRequest(server, tool, call.arguments, parsed)
        began = time.perf_counter()
        try:
            approval = await self._approved(request)
            if approval is ApprovedBy.DENIED:
                return record(ToolOutcome.DENIED, "The user denied this tool call.", None)
            if parsed is None:
                return record(
                    ToolOutcome.ERROR,
                    "Error: the arguments are not a JSON object: " + call.arguments[:500],
                    None,
                )
            self._status(f"Running {tool} ({server})…")
            began = time.perf_counter()
            result = await self.host.call(server, tool, parsed, self.call_timeout)
        except asyncio.CancelledError:
            record(ToolOutcome.STOPPED, "Stopped by the user.", time.perf_counter() - began)
            raise
        except (ToolCallError, McpConfigError) as exc:
            return record(ToolOutcome.ERROR, f"Error: {exc}", time.perf_counter() - began)
        except TimeoutError:
            return record(
                ToolOutcome.ERROR,
                f"Error: the tool did not answer within {self.call_timeout:g} s.",
                time.perf_counter() - began,
            )
        except Exception as exc:  # whatever the server did, the chat goes on
            log.exception("tool %s of %s failed", tool, server)
            return record(ToolOutcome.ERROR, f"Error: {exc}", time.perf_counter() - began)
        outcome = ToolOutcome.ERROR if result.is_error else ToolOutcome.OK
        return record(outcome, result.text, result.seconds)

    async def _approved(self, request: ToolRequest) -> ApprovedBy:
        """A standing permission, or the user's choice. The permissions file is read and
        written on a worker thread: the loop runs on the GUI's."""
        if await off_loop(self.permissions.allows, request.server, request.tool):
            return ApprovedBy.STANDING
        self._status(f"Waiting for approval: {request.tool} ({request.server})")
        choice = await self.approve(request)
        if choice is Approval.ALWAYS:
            try:
                await off_loop(self.permissions.allow, request.server, request.tool)
            except ToolPermissionsError as exc:  # allowed this once; said in the log
                log.warning("%s", exc)
        return {
            Approval.DENY: ApprovedBy.DENIED,
            Approval.ONCE: ApprovedBy.ONCE,
            Approval.ALWAYS: ApprovedBy.ALWAYS,
        }[choice]


def _arguments(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
