"""Checks every request body needs before any dialect's decoder sees it.

Pydantic checks types, but not what makes the layers below fail with a 500: a NUL
character (Python refuses it in a file path, so a model name with one blew up), a lone
UTF-16 surrogate (``"\\ud800"`` decodes, then cannot be encoded as UTF-8 for the
tokenizer), nesting deep enough for ``json.loads`` or pydantic to hit the recursion
limit, and JSON schemas big enough to take seconds to compile into a grammar. These
checks live here, under the shared body parser, so every route and every dialect gets
them, and each failure is an ``ApiError``/``InvalidRequestError`` (a 400 in the
dialect's own error shape).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Collection, Iterator
from typing import Any
from urllib.parse import unquote_to_bytes

import numpy as np
from starlette.types import ASGIApp, Receive, Scope, Send

from hearth.engine.grammar import (
    SCHEMA_LIMITS,
    SchemaTooComplexError,
    check_schema,
    compile_grammar,
    relax_upper_bounds,
)
from hearth.server.errors import ApiError, json_error

log = logging.getLogger(__name__)

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects in a body. Real bodies stay far below it: an
OpenAI strict schema may nest objects 10 levels (about 25 JSON levels, plus 4 for
``response_format.json_schema.schema``); the deepest chat message is 5 levels."""

_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP_OF_BYTE = np.zeros(256, dtype=np.int8)  # +1 opens a level, -1 closes one
_STEP_OF_BYTE[list(b"[{")] = 1
_STEP_OF_BYTE[list(b"]}")] = -1
_QUOTE = ord('"')
_CHUNK = 1 << 20
_SUSPECT = re.compile(r"\\u|[\ud800-\udfff]")  # how a NUL or lone surrogate gets in
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MAX_PATH_CHARS = 200

# Where JSON schemas sit in the dialects' bodies. Output schemas are compiled into a
# grammar ahead (in a worker thread); tool schemas only become a grammar when a call is
# forced, and are held to the same limits.
_OUTPUT_SCHEMAS: tuple[tuple[str, ...], ...] = (
    ("response_format", "json_schema", "schema"),  # OpenAI chat / completions
    ("response_format", "schema"),  # llama-server's form
    ("format",),  # Ollama
    ("text", "format", "schema"),  # OpenAI Responses
)
_TOOL_SCHEMAS: tuple[tuple[str, ...], ...] = (
    ("function", "parameters"),  # OpenAI chat, Ollama
    ("parameters",),  # OpenAI Responses
    ("input_schema",),  # Anthropic
)


def decode_json(raw: bytes) -> Any:
    """Parse a body, refusing what the rest of the server cannot take (see the module
    docstring). Blocking and linear in the body's size: large bodies go to a thread."""
    try:
        text = raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise ApiError(
            400, f"The request body is not valid UTF-8: {exc}", code="invalid_json"
        ) from None
    if _too_deep(raw):
        raise _deep()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ApiError(
            400, f"The request body is not valid JSON: {exc}", code="invalid_json"
        ) from None
    except RecursionError:  # unreachable after _too_deep; kept as the last line of defence
        raise _deep() from None
    if _SUSPECT.search(text):
        check_strings(value)
    return value


def _too_deep(raw: bytes) -> bool:
    """Nesting on the raw bytes, before parsing, without recursion. Escapes go first
    (a UTF-8 sequence never holds a quote or backslash byte; ``\\\\`` pairs before
    ``\\"``), then a bracket counts only outside strings, where the quotes before it
    are even in number; numpy does the running sums, in chunks, with no Python work per
    byte: a 32 MB body may hold millions of brackets or strings."""
    if len(raw.translate(None, _NOT_BRACKETS)) <= MAX_DEPTH:
        return False  # too few brackets to nest that deep, strings or not
    data = np.frombuffer(raw.replace(b"\\\\", b"").replace(b'\\"', b""), dtype=np.uint8)
    depth = quotes = 0
    for start in range(0, len(data), _CHUNK):
        chunk = data[start : start + _CHUNK]
        is_quote = chunk == _QUOTE
        outside = (np.cumsum(is_quote, dtype=np.int64) + quotes) % 2 == 0
        running = np.cumsum(_STEP_OF_BYTE[chunk] * outside, dtype=np.int64) + depth
        if int(running.max()) > MAX_DEPTH:
            return True
        depth, quotes = int(running[-1]), quotes + int(is_quote.sum())
    return False


def _deep() -> ApiError:
    return ApiError(
        400,
        f"The request body is nested deeper than {MAX_DEPTH} levels.",
        code="invalid_json",
    )


def check_strings(value: Any) -> None:
    """Refuse a NUL character or a lone surrogate in any string or key, naming the field
    (``messages[0].content contains a NUL character.``). Iterative: no depth limit."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            _check_text(node, path or "The request body")
        elif isinstance(node, dict):
            for key, item in reversed(node.items()):
                _check_text(key, f"A key in {path or 'the request body'}")
                if isinstance(item, str | dict | list):
                    stack.append((f"{path}.{key}" if path else key, item))
        elif isinstance(node, list):
            stack.extend(
                (f"{path}[{i}]", item)
                for i, item in reversed(list(enumerate(node)))
                if isinstance(item, str | dict | list)
            )


def _check_text(text: str, where: str) -> None:
    if "\x00" in text:
        raise _bad_string(where, "a NUL character")
    if not text.isascii() and _SURROGATE.search(text):
        raise _bad_string(where, "a lone UTF-16 surrogate")


def _bad_string(where: str, what: str) -> ApiError:
    if len(where) > _MAX_PATH_CHARS:
        where = where[:_MAX_PATH_CHARS] + "..."
    return ApiError(400, f"{where} contains {what}.", code="invalid_value", param=where)


async def check_schemas(body: dict[str, Any], fields: Collection[str]) -> None:
    """Hold every JSON schema in ``body`` to the grammar limits, and compile the output
    schema now, in a worker thread: the request path later finds it in the converter's
    cache instead of compiling it on the event loop. ``fields`` are the top-level names
    the route's request model knows; schemas under other names are never used."""
    for where, schema in _output_schemas(body, fields):
        await compile_grammar(schema, where)
    tools = list(_tool_schemas(body, fields))
    if tools:
        await asyncio.to_thread(_check_tool_schemas, tools)


def _check_tool_schemas(tools: list[tuple[str, Any]]) -> None:
    """Each tool's schema, and all of them together: a forced call turns every offered
    tool into one grammar (with upper bounds past the limits dropped, see
    relax_upper_bounds: agents' tools have them)."""
    texts = [check_schema(relax_upper_bounds(schema), where) for where, schema in tools]
    total = sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)
    if total > SCHEMA_LIMITS.max_tools_bytes:
        raise SchemaTooComplexError(
            f"tools: the tools' schemas are {total} bytes together; "
            f"the limit is {SCHEMA_LIMITS.max_tools_bytes}.",
            param="tools",
        )


def _output_schemas(body: dict[str, Any], fields: Collection[str]) -> Iterator[tuple[str, Any]]:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "text":
        return
    for path in _OUTPUT_SCHEMAS:
        if path[0] in fields:
            schema = _at(body, path)
            if isinstance(schema, dict):
                yield ".".join(path), schema


def _tool_schemas(body: dict[str, Any], fields: Collection[str]) -> Iterator[tuple[str, Any]]:
    tools = body.get("tools") if "tools" in fields else None
    if not isinstance(tools, list):
        return
    for i, tool in enumerate(tools):
        for path in _TOOL_SCHEMAS:
            schema = _at(tool, path)
            if isinstance(schema, dict):
                yield f"tools[{i}].{'.'.join(path)}", schema


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


class UrlGuardMiddleware:
    """A NUL in the URL path or query (``/v1/models/a%00b``) is a 400 before routing:
    path parameters reach file-system lookups, where Python raises on NUL."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = _url_problem(scope)
            if problem is not None:
                await json_error(ApiError(400, problem), scope["path"])(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _url_problem(scope: Scope) -> str | None:
    if "\x00" in scope["path"]:
        return "The URL path contains a NUL character."
    if b"\x00" in unquote_to_bytes(scope.get("query_string", b"")):
        return "The URL query contains a NUL character."
    return None
