"""Structured output: JSON mode and JSON Schema turned into llama.cpp GBNF grammars.

llama-cpp-python's chat handlers ignore OpenAI's ``json_schema`` response format, so
Hearth converts the schema itself and enforces it with a grammar sampler.

The converter and llama.cpp's grammar parser are both superlinear in some shapes of
schema (a 50,000-value enum took tens of seconds; many optional properties make the
converter quadratic, and ``maxLength``-style counts are unrolled into nested rules), so
every schema passes cheap, linear limit checks first, and the conversion itself can run
off the event loop with a time bound (``compile_grammar``). Conversions are cached by
schema text, so a schema compiled ahead in a worker thread is free when the request
path asks for it again synchronously.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from dataclasses import dataclass
from typing import Any

import llama_cpp
from llama_cpp import llama_grammar

from hearth.core.errors import InvalidRequestError

JSON_OBJECT_GRAMMAR = llama_grammar.JSON_GBNF


@dataclass(frozen=True)
class SchemaLimits:
    """Bounds that keep a schema's compile time small; measured on the converter:
    a 1,024-value enum converts and parses in about 1 ms (20,000 values: 0.8 s);
    256 optional properties take 0.07 s (1,024 overflow Python's recursion limit);
    ``maxLength`` 1,000 parses and 2,000 is refused by llama.cpp's grammar parser."""

    max_branches: int = 1024  # enum values; anyOf / oneOf / allOf / prefixItems entries
    max_properties: int = 256  # properties of one object
    max_repeat: int = 1000  # minItems / maxItems / minLength / maxLength, {n,m} in patterns
    max_schema_bytes: int = 128 * 1024  # the schema as compact JSON
    max_grammar_bytes: int = 1024 * 1024  # the GBNF text handed to llama.cpp
    max_tools_bytes: int = 512 * 1024  # all of a request's tool schemas together
    compile_timeout_s: float = 20.0


SCHEMA_LIMITS = SchemaLimits()

_BRANCH_KEYS = ("enum", "anyOf", "oneOf", "allOf", "prefixItems")
_REPEAT_KEYS = ("minItems", "maxItems", "minLength", "maxLength")
_UPPER_KEYS = ("maxItems", "maxLength")
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})  # values, not schemas
_PATTERN_REPEAT = re.compile(r"\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")


class SchemaTooComplexError(InvalidRequestError):
    """A schema or grammar is over one of the limits; the message names which."""

    code = "schema_too_complex"


def check_schema(schema: Any, where: str, limits: SchemaLimits = SCHEMA_LIMITS) -> str:
    """Check ``schema`` against the limits in one pass; return it as compact JSON text.

    ``where`` is the schema's place in the request (``response_format.json_schema.schema``),
    so the 400 says exactly which part is over which limit."""
    stack: list[tuple[str, Any]] = [(where, schema)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(node))
        elif isinstance(node, dict):
            _check_node(path, node, limits)
            stack.extend(
                (f"{path}.{key}", value)
                for key, value in node.items()
                if key not in _DATA_KEYS and isinstance(value, dict | list)
            )
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_schema_bytes:
        raise SchemaTooComplexError(
            f"{where} is {size} bytes; the limit is {limits.max_schema_bytes}.", param=where
        )
    return text


def _check_node(path: str, node: dict[str, Any], limits: SchemaLimits) -> None:
    for key in _BRANCH_KEYS:
        value = node.get(key)
        if isinstance(value, list) and len(value) > limits.max_branches:
            noun = "values" if key == "enum" else "entries"
            _over(f"{path}.{key} has {len(value)} {noun}", limits.max_branches, path)
    properties = node.get("properties")
    if isinstance(properties, dict) and len(properties) > limits.max_properties:
        _over(f"{path}.properties has {len(properties)} entries", limits.max_properties, path)
    for key in _REPEAT_KEYS:
        value = node.get(key)
        if isinstance(value, int) and value > limits.max_repeat:
            _over(f"{path}.{key} is {value}", limits.max_repeat, path)
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        for match in _PATTERN_REPEAT.finditer(pattern):
            count = max(int(n) for n in match.groups() if n)
            if count > limits.max_repeat:
                _over(f"{path}.pattern repeats {count} times", limits.max_repeat, path)


def relax_upper_bounds(schema: Any, limits: SchemaLimits = SCHEMA_LIMITS) -> Any:
    """``schema`` without the upper bounds (``maxLength``, ``maxItems``) above the repeat
    limit, for tools' parameters. Agents declare such bounds as sanity caps (Claude Code's
    tools allow 512 KiB of text); a grammar cannot unroll them, and without one a forced
    call may only be longer than the tool accepts, which the tool itself reports. Lower
    bounds stay, and stay checked: dropping one would allow what the tool refuses."""
    if isinstance(schema, list):
        return [relax_upper_bounds(item, limits) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: value if key in _DATA_KEYS else relax_upper_bounds(value, limits)
        for key, value in schema.items()
        if not (key in _UPPER_KEYS and isinstance(value, int) and value > limits.max_repeat)
    }


def _over(what: str, limit: int, path: str) -> None:
    raise SchemaTooComplexError(f"{what}; the limit is {limit}.", param=path)


def grammar_for_schema(
    schema: dict[str, Any], where: str = "response_format", limits: SchemaLimits = SCHEMA_LIMITS
) -> str:
    """GBNF for a JSON Schema; over a limit or unsupported constructs are a clear 400.

    Synchronous: cheap when ``compile_grammar`` already converted this schema."""
    return _grammar_for_text(check_schema(schema, where, limits), where, limits)


async def compile_grammar(
    schema: dict[str, Any], where: str, limits: SchemaLimits = SCHEMA_LIMITS
) -> str:
    """``grammar_for_schema`` in a worker thread, limit checks included, so a big schema
    never stalls the event loop; past ``compile_timeout_s`` the request gets a 400 (the
    thread finishes on its own and its result is cached)."""
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(grammar_for_schema, schema, where, limits), limits.compile_timeout_s
        )
    except asyncio.TimeoutError:
        raise SchemaTooComplexError(
            f"{where} took longer than {limits.compile_timeout_s:g} s to turn into a grammar; "
            "simplify the schema.",
            param=where,
        ) from None


def _grammar_for_text(text: str, where: str, limits: SchemaLimits) -> str:
    try:
        grammar = _convert(text)
    except Exception as exc:  # the converter raises plain Exceptions for bad schemas
        raise InvalidRequestError(
            f"This JSON schema cannot be turned into a grammar: {exc}", param=where
        ) from exc
    size = len(grammar.encode("utf-8", "surrogatepass"))
    if size > limits.max_grammar_bytes:
        raise SchemaTooComplexError(
            f"{where} makes a grammar of {size} bytes; the limit is {limits.max_grammar_bytes}.",
            param=where,
        )
    return grammar


@functools.lru_cache(maxsize=32)
def _convert(schema_text: str) -> str:
    """Pure in its input, so cached: clients send the same schema on every request."""
    return schema_to_gbnf(schema_text)


# llama-cpp-python's port of json-schema-to-grammar lets any character into a JSON
# string, raw tabs and \x08 included: JSON forbids them, so the call a grammar forced
# would not parse. llama.cpp's own converter writes these rules instead (its ``dot``
# for a ``pattern`` still allows them; here it may not either, being inside a string).
_PORT_RULES = {
    r'[^"\\] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])':
        r'[^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    r"[^\x0A\x0D]": r'[^"\\\x7F\x00-\x1F]',
}  # fmt: skip
_PORT_RULE = re.compile(
    r"(?m)^([A-Za-z0-9-]+) ::= (" + "|".join(re.escape(body) for body in _PORT_RULES) + r")$"
)


def schema_to_gbnf(schema_text: str, prop_order: list[str] | None = None) -> str:
    """GBNF for a JSON schema (given as JSON text) whose strings hold no raw control
    characters, as JSON requires; every schema grammar Hearth builds comes from here."""
    grammar = str(llama_grammar.json_schema_to_gbnf(schema_text, prop_order=prop_order))
    return _PORT_RULE.sub(lambda m: f"{m.group(1)} ::= {_PORT_RULES[m.group(2)]}", grammar)


def check_grammar(
    vocab: llama_cpp.llama_vocab_p, grammar: str, limits: SchemaLimits = SCHEMA_LIMITS
) -> None:
    """Parse once up front, so a bad grammar fails the request, not the decode loop.

    Blocking (llama.cpp parses it in C, without the GIL): call it from a worker thread."""
    encoded = grammar.encode("utf-8", "surrogatepass")
    if len(encoded) > limits.max_grammar_bytes:
        raise SchemaTooComplexError(
            f"The grammar is {len(encoded)} bytes; the limit is {limits.max_grammar_bytes}.",
            param="response_format",
        )
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, encoded, b"root")
    if not sampler:
        raise InvalidRequestError("The grammar does not parse.", param="response_format")
    llama_cpp.llama_sampler_free(sampler)
