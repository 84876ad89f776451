"""The worker client puts a streamed tool call together from OpenAI's delta pieces."""

from __future__ import annotations

import json
from typing import Any

from hearth.supervisor.client_types import StreamedToolCall, finish_stats, parse_chunk


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def test_pieces_by_index_make_whole_calls_in_order():
    stats: dict[str, Any] = {}
    pieces = [
        {"content": "Let me look."},
        {"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                         "function": {"name": "get_time", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"tz": '}}]},
        {"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "add",
                                                                 "arguments": "{}"}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"UTC"}'}}]},
    ]  # fmt: skip
    texts = [parse_chunk(_chunk(d), stats) for d in pieces]
    parse_chunk(_chunk({}, "tool_calls"), stats)
    assert texts[0] == "Let me look." and texts[1:] == ["", "", "", ""]
    done = finish_stats(stats)
    assert done.finish_reason == "tool_calls"
    assert done.tool_calls == (
        StreamedToolCall("call_a", "get_time", '{"tz": "UTC"}'),
        StreamedToolCall("call_b", "add", "{}"),
    )


def test_a_plain_reply_has_no_calls():
    stats: dict[str, Any] = {}
    parse_chunk(_chunk({"content": "hi"}, "stop"), stats)
    assert finish_stats(stats).tool_calls == ()
