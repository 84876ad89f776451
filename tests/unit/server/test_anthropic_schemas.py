"""Anthropic content blocks become the chat messages every dialect shares."""

from __future__ import annotations

import json

import pytest

from hearth.core.errors import ContextOverflowError, InvalidRequestError
from hearth.core.generation import ChatMessage, ToolCall
from hearth.server.anthropic_format import overflow_message
from hearth.server.anthropic_schemas import MessagesRequest


def _request(messages: list[dict], **extra: object) -> MessagesRequest:
    return MessagesRequest.model_validate(
        {"model": "m", "max_tokens": 8, "messages": messages, **extra}
    )


def test_blocks_become_chat_messages_with_tool_turns() -> None:
    body = _request(
        [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Oslo"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": [{"type": "text", "text": "3 C"}]},
                {"type": "text", "text": "And tomorrow?"},
            ]},
        ],
        system=[{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
    )  # fmt: skip
    assert body.chat_messages() == [
        ChatMessage("system", "Be brief.\n\nBe kind."),
        ChatMessage("user", "Weather?"),
        ChatMessage(
            "assistant", "Let me look.", (ToolCall("toolu_1", "w", json.dumps({"city": "Oslo"})),)
        ),
        ChatMessage("tool", "3 C", tool_call_id="toolu_1"),
        ChatMessage("user", "And tomorrow?"),
    ]


def test_image_urls_are_refused_and_documents_by_name() -> None:
    image = {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
    body = _request([{"role": "user", "content": [image]}])
    with pytest.raises(InvalidRequestError, match="not fetched"):
        body.chat_messages()
    document = {"type": "document", "source": {"type": "text", "data": "x"}}
    body = _request([{"role": "user", "content": [document]}])
    with pytest.raises(InvalidRequestError, match="Document blocks are not supported"):
        body.chat_messages()


def test_sampling_and_required_max_tokens() -> None:
    params = _request([{"role": "user", "content": "x"}], stop_sequences=["\n\n", ""],
                      temperature=0, top_k=5).to_sampling()  # fmt: skip
    assert (params.max_tokens, params.stop, params.temperature, params.top_k) == (
        8, ("\n\n",), 0.0, 5
    )  # fmt: skip
    with pytest.raises(ValueError, match="max_tokens"):
        MessagesRequest.model_validate(
            {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        )


def test_overflow_in_the_wording_agents_recognise() -> None:
    assert overflow_message(ContextOverflowError(3000, 10, 2048)) == (
        "prompt is too long: 3000 tokens > 2048 maximum"
    )
    assert overflow_message(ContextOverflowError(2000, 100, 2048)).startswith(
        "input length and `max_tokens` exceed context limit: 2000 + 100 > 2048"
    )
