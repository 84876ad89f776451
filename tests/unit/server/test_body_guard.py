"""The shared body checks: nesting on raw text, NUL and lone surrogates with the field
path, schema limits located in every dialect's body, NUL in the URL."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hearth.core.errors import InvalidRequestError
from hearth.server.body_guard import (
    MAX_DEPTH,
    UrlGuardMiddleware,
    check_schemas,
    check_strings,
    decode_json,
)
from hearth.server.errors import ApiError


def _refused(raw: bytes) -> ApiError:
    with pytest.raises(ApiError) as caught:
        decode_json(raw)
    assert caught.value.status == 400
    return caught.value


def _nested(depth: int) -> bytes:
    return b'{"a": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def test_a_plain_body_decodes():
    body = {"messages": [{"role": "user", "content": "héllo \U0001f600"}], "n": [1, 2.5, None]}
    assert decode_json(json.dumps(body).encode()) == body
    assert decode_json(b"\xef\xbb\xbf" + json.dumps(body).encode()) == body  # a BOM is fine


def test_nesting_up_to_the_limit_passes_and_one_more_is_refused():
    assert decode_json(_nested(MAX_DEPTH))["a"] is not None
    error = _refused(_nested(MAX_DEPTH + 1))
    assert error.message == f"The request body is nested deeper than {MAX_DEPTH} levels."
    assert error.code == "invalid_json"


def test_very_deep_nesting_is_refused_without_recursion():
    error = _refused(b"[" * 1_000_000 + b"]" * 1_000_000)
    assert "nested deeper" in error.message


def test_brackets_inside_strings_do_not_count():
    text = '[{"x": "' + "[{" * 500 + '\\"]"}]'
    assert decode_json(text.encode()) == [{"x": "[{" * 500 + '"]'}]


def test_an_escaped_backslash_ends_its_string_so_later_brackets_count():
    deep = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert "nested deeper" in _refused(b'["a\\\\", ' + deep + b"]").message
    escaped_quote = b'["a\\", ' + b"[" * 70 + b'"]'  # one string: a", [[[...
    assert decode_json(escaped_quote) == ['a", ' + "[" * 70]


def test_many_strings_before_the_deep_part_do_not_hide_it():
    strings = b'"[{",' * 300_000
    assert "nested deeper" in _refused(b"[" + strings + _nested(MAX_DEPTH) + b"]").message
    assert len(decode_json(b"[" + strings + _nested(MAX_DEPTH - 1) + b"]")) == 300_001


def _strict_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"child": schema}, "required": ["child"],
                  "additionalProperties": False}  # fmt: skip
    return schema


def test_a_deep_but_real_schema_fits_with_room_to_spare():
    """OpenAI's structured outputs allow 10 levels of object nesting; 20 still fit."""
    fmt = {"type": "json_schema", "json_schema": {"name": "s", "schema": _strict_schema(20)}}
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}],
            "response_format": fmt}  # fmt: skip
    assert decode_json(json.dumps(body).encode())["response_format"] == fmt


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "a\x00b"}, "model contains a NUL character."),
        ({"messages": [{"content": "ok"}, {"content": [{"text": "\x00"}]}]},
         "messages[1].content[0].text contains a NUL character."),
        ({"options": {"st\x00op": 1}}, "A key in options contains a NUL character."),
        ({"k\x00": 1}, "A key in the request body contains a NUL character."),
        ({"stop": ["fine", "lone \ud800 high"]}, "stop[1] contains a lone UTF-16 surrogate."),
        ({"x": "\udc00\ud800"}, "x contains a lone UTF-16 surrogate."),
    ],
)  # fmt: skip
def test_nul_and_lone_surrogates_name_the_field(body, message):
    raw = json.dumps(body).encode()  # ensure_ascii: NUL and surrogates travel as \u escapes
    error = _refused(raw)
    assert error.message == message
    assert error.code == "invalid_value"


def test_raw_utf8_surrogate_bytes_and_bad_utf8():
    assert _refused(b'{"x": "\xed\xa0\x80"}').message == "x contains a lone UTF-16 surrogate."
    assert "not valid UTF-8" in _refused(b'{"x": "\xff"}').message
    assert "not valid JSON" in _refused(b'{"x": ').message


def test_check_strings_on_a_huge_flat_list_is_iterative():
    check_strings([["ok"] * 10] * 100_000)
    with pytest.raises(ApiError, match=r"^\[99999\]\[9\] contains a NUL"):
        check_strings([["ok"] * 10] * 99_999 + [["ok"] * 9 + ["\x00"]])


def _schema_error(body: dict[str, Any], fields: set[str]) -> InvalidRequestError:
    with pytest.raises(InvalidRequestError) as caught:
        asyncio.run(check_schemas(body, fields))
    return caught.value


BIG_ENUM = {"type": "string", "enum": [str(i) for i in range(5000)]}


def test_schema_limits_are_checked_where_each_dialect_puts_schemas():
    openai = {"response_format": {"type": "json_schema", "json_schema": {"schema": BIG_ENUM}}}
    error = _schema_error(openai, {"response_format"})
    assert error.message == (
        "response_format.json_schema.schema.enum has 5000 values; the limit is 1024."
    )
    assert error.code == "schema_too_complex"
    assert error.param == "response_format.json_schema.schema"
    assert _schema_error({"format": BIG_ENUM}, {"format"}).message.startswith("format.enum ")
    responses = {"text": {"format": {"type": "json_schema", "schema": BIG_ENUM}}}
    assert _schema_error(responses, {"text"}).message.startswith("text.format.schema.enum ")
    tools = {"tools": [{"function": {"parameters": {}}}, {"name": "t", "input_schema": BIG_ENUM}]}
    assert _schema_error(tools, {"tools"}).message.startswith("tools[1].input_schema.enum ")


def test_tool_schemas_are_also_limited_together():
    schema = {
        "type": "object",
        "properties": {"p": {"type": "string", "description": "x" * 60_000}},
    }
    tools = {"tools": [{"function": {"parameters": schema}} for _ in range(9)]}
    error = _schema_error(tools, {"tools"})
    assert error.message.startswith("tools: the tools' schemas are ")
    assert error.message.endswith(" bytes together; the limit is 524288.")
    assert error.param == "tools"
    asyncio.run(check_schemas({"tools": tools["tools"][:8]}, {"tools"}))


def test_schemas_the_request_model_does_not_use_are_left_alone():
    asyncio.run(check_schemas({"format": BIG_ENUM, "tools": [{"parameters": BIG_ENUM}]}, set()))
    text = {"response_format": {"type": "text", "json_schema": {"schema": BIG_ENUM}}}
    asyncio.run(check_schemas(text, {"response_format"}))
    asyncio.run(check_schemas({"format": "json"}, {"format"}))


def test_a_bad_schema_is_a_400_before_the_route_runs():
    error = _schema_error({"format": {"type": "no-such-type"}}, {"format"})
    assert "cannot be turned into a grammar" in error.message
    assert error.param == "format"


def test_nul_in_url_path_or_query_is_a_400_in_the_dialects_shape():
    app = FastAPI()

    @app.get("/v1/models/{name:path}")
    async def model(name: str) -> dict[str, str]:
        return {"name": name}

    @app.get("/api/tags")
    async def tags() -> dict[str, str]:
        return {}

    app.add_middleware(UrlGuardMiddleware)
    with TestClient(app) as client:
        assert client.get("/v1/models/fine").json() == {"name": "fine"}
        response = client.get("/v1/models/a%00b")
        assert response.status_code == 400
        assert response.json()["error"]["message"] == "The URL path contains a NUL character."
        response = client.get("/api/tags?x=%00")
        assert response.status_code == 400
        assert response.json() == {"error": "The URL query contains a NUL character."}
