"""The remote engines' wire codecs: requests as vLLM, llama-server and Ollama take them,
and their streams (in the shapes those servers send) back as the pipeline's events."""

from __future__ import annotations

import json

from hearth.core.generation import (
    ChatMessage,
    FinishReason,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallsMade,
    ToolSpec,
)
from hearth.core.sampling import SamplingParams
from hearth.server.pipeline import (
    ChatPrompt,
    FillInMiddle,
    OutputFormat,
    PipelineRequest,
    TextPrompt,
    ToolChoice,
)
from hearth.server.remote import ollama_wire, openai_wire
from hearth.server.remote.probe import (
    ollama_context_length,
    parse_ollama_tags,
    parse_openai_models,
)
from hearth.server.remote.wire import StreamEnd, StreamError, WireEvent

GREEDY = SamplingParams(temperature=0.0, max_tokens=16, seed=3, stop=("END",))
TOOL = ToolSpec("get_weather", "Weather", {"type": "object", "properties": {}})
CALL = ToolCall("call_1", "get_weather", '{"city": "Paris"}')
HISTORY = (
    ChatMessage("user", "Weather?"),
    ChatMessage("assistant", "", tool_calls=(CALL,)),
    ChatMessage("tool", "sunny", tool_call_id="call_1"),
)


def sse_lines(*chunks: dict[str, object] | str) -> list[str]:
    return [f"data: {c if isinstance(c, str) else json.dumps(c)}" for c in chunks]


def feed_all(decoder: openai_wire.SseDecoder | ollama_wire.NdjsonDecoder,
             lines: list[str]) -> list[WireEvent]:  # fmt: skip
    events: list[WireEvent] = []
    for line in lines:
        events += decoder.feed(line.encode())
    return events


def test_a_chat_request_in_openai_form() -> None:
    prompt = ChatPrompt(HISTORY, (TOOL,), ToolChoice("named", "get_weather"),
                        {"enable_thinking": False})  # fmt: skip
    request = PipelineRequest("gpu/qwen", prompt, GREEDY, OutputFormat("json"))
    path, body = openai_wire.request_body(request, "qwen")
    assert path == "/v1/chat/completions"
    assert body["model"] == "qwen" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.0 and body["max_tokens"] == 16 and body["seed"] == 3
    assert body["stop"] == ["END"] and "repetition_penalty" not in body
    assert body["response_format"] == {"type": "json_object"}
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assistant, tool = body["messages"][1], body["messages"][2]
    assert assistant["tool_calls"][0]["function"] == {"name": "get_weather",
                                                      "arguments": '{"city": "Paris"}'}  # fmt: skip
    assert tool == {"role": "tool", "content": "sunny", "tool_call_id": "call_1"}


def test_text_and_fim_prompts_use_completions() -> None:
    path, body = openai_wire.request_body(PipelineRequest("m", TextPrompt("Once"), GREEDY), "m")
    assert path == "/v1/completions" and body["prompt"] == "Once"
    path, body = openai_wire.request_body(PipelineRequest("m", FillInMiddle("a", "b"), GREEDY), "m")
    assert path == "/v1/completions" and (body["prompt"], body["suffix"]) == ("a", "b")


def test_an_openai_stream_with_reasoning_tool_calls_and_usage_at_the_end() -> None:
    lines = sse_lines(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "thinking"}}]},
        {"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c9",
            "type": "function", "function": {"name": "get_weather", "arguments": "{\"ci"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
            "function": {"arguments": "ty\": \"Oslo\"}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 5,
                                  "prompt_tokens_details": {"cached_tokens": 4}}},
        "[DONE]",
    )  # fmt: skip
    events = feed_all(openai_wire.SseDecoder(), lines)
    assert events[0] == ReasoningDelta("thinking") and events[1] == TextDelta("Hi")
    assert events[2] == ToolCallsMade((ToolCall("c9", "get_weather", '{"city": "Oslo"}'),))
    end = events[3]
    assert isinstance(end, StreamEnd) and end.reason is FinishReason.TOOL_CALLS
    assert (end.prompt_tokens, end.completion_tokens, end.cached_tokens) == (9, 5, 4)
    assert len(events) == 4


def test_an_openai_stream_ends_at_done_only_not_at_its_finish_reason() -> None:
    finished = sse_lines({"choices": [{"index": 0, "text": "x", "finish_reason": "length",
                                       "stop_reason": None}]})  # fmt: skip
    decoder = openai_wire.SseDecoder()  # a stream closed here was cut off before [DONE]
    assert feed_all(decoder, finished) == [TextDelta("x")] and not decoder.ended
    end = decoder.feed(b"data: [DONE]")
    assert decoder.ended and isinstance(end[0], StreamEnd)
    assert end[0].reason is FinishReason.LENGTH


def test_an_error_inside_an_openai_stream() -> None:
    events = feed_all(openai_wire.SseDecoder(), sse_lines({"error": {"message": "boom"}}))
    assert events == [StreamError("boom")]


def test_vllm_names_the_stop_string_that_ended_it() -> None:
    choice = {"index": 0, "delta": {"content": "a"}, "finish_reason": "stop", "stop_reason": "END"}
    lines = sse_lines({"choices": [choice]}, "[DONE]")
    end = feed_all(openai_wire.SseDecoder(), lines)[-1]
    assert isinstance(end, StreamEnd) and end.stop_sequence == "END"


def test_a_chat_request_in_ollama_form() -> None:
    prompt = ChatPrompt(HISTORY, (TOOL,), template_kwargs={"enable_thinking": True})
    request = PipelineRequest("box/llama3", prompt, GREEDY, OutputFormat("json_schema",
                              {"type": "object"}), keep_alive=300.0)  # fmt: skip
    path, body = ollama_wire.request_body(request, "llama3:8b")
    assert path == "/api/chat" and body["model"] == "llama3:8b" and body["stream"] is True
    assert body["options"]["num_predict"] == 16 and body["options"]["temperature"] == 0.0
    assert body["options"]["stop"] == ["END"] and body["options"]["seed"] == 3
    assert body["format"] == {"type": "object"} and body["keep_alive"] == "300s"
    assert body["think"] is True
    assert body["messages"][1]["tool_calls"] == [
        {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    ]
    assert body["messages"][2]["tool_name"] == "get_weather"


def test_an_ollama_stream_with_thinking_and_a_tool_call() -> None:
    lines = [
        json.dumps({"message": {"role": "assistant", "content": "", "thinking": "hm"},
                    "done": False}),
        json.dumps({"message": {"role": "assistant", "content": "ok"}, "done": False}),
        json.dumps({"message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]}, "done": False}),
        json.dumps({"message": {"role": "assistant", "content": ""}, "done": True,
                    "done_reason": "stop", "prompt_eval_count": 7, "eval_count": 3,
                    "eval_duration": 1_500_000_000}),
    ]  # fmt: skip
    events = feed_all(ollama_wire.NdjsonDecoder(), lines)
    assert events[0] == ReasoningDelta("hm") and events[1] == TextDelta("ok")
    made = events[2]
    assert isinstance(made, ToolCallsMade) and made.calls[0].name == "get_weather"
    assert json.loads(made.calls[0].arguments) == {"city": "Rome"}
    assert made.calls[0].id.startswith("call_")
    end = events[3]
    assert isinstance(end, StreamEnd) and end.reason is FinishReason.TOOL_CALLS
    assert (end.prompt_tokens, end.completion_tokens) == (7, 3)
    assert end.decode_tokens_per_s == 2.0


def test_an_ollama_stream_cut_before_done_has_no_end() -> None:
    decoder = ollama_wire.NdjsonDecoder()
    events = feed_all(decoder, [json.dumps({"response": "par", "done": False})])
    assert events == [TextDelta("par")] and not decoder.ended
    assert feed_all(ollama_wire.NdjsonDecoder(), ['{"error": "model gone"}']) == [
        StreamError("model gone")
    ]


def test_model_lists_and_context_lengths_as_engines_give_them() -> None:
    vllm = {"data": [{"id": "Qwen/Qwen3-32B", "max_model_len": 32768}, {"id": 5}, "x"]}
    (model,) = parse_openai_models("gpu", vllm)
    assert model.namespaced == "gpu/Qwen/Qwen3-32B" and model.context_length == 32768
    hearth = {"data": [{"id": "tiny", "meta": {"n_ctx": 1024, "n_ctx_train": 4096}}]}
    assert parse_openai_models("h", hearth)[0].context_length == 1024
    tags = {"models": [{"name": "llama3:latest"}, {"name": "qwen3:32b"}, {}]}
    assert [m.id for m in parse_ollama_tags("box", tags)] == ["llama3", "qwen3:32b"]
    show = {"model_info": {"llama.context_length": 131072}, "parameters": 'stop "x"'}
    assert ollama_context_length(show) == 131072
    assert ollama_context_length({"parameters": "num_ctx 8192\nstop x"}) == 8192
    assert ollama_context_length("junk") is None


def test_error_bodies_in_every_shape_become_one_bounded_message() -> None:
    assert openai_wire.error_message(b'{"error": {"message": "bad key"}}') == "bad key"
    assert openai_wire.error_message(b'{"error": "model not found"}') == "model not found"
    assert openai_wire.error_message(b'{"detail": "Not Found"}') == "Not Found"
    assert openai_wire.error_message(b"<html>502</html>") == "<html>502</html>"
    assert len(openai_wire.error_message(b"x" * 5000)) == 500
