"""JSON schema limits, named in the message, and the off-loop, time-bounded compile."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hearth.core.errors import InvalidRequestError
from hearth.engine.grammar import (
    SCHEMA_LIMITS,
    SchemaLimits,
    SchemaTooComplexError,
    check_schema,
    compile_grammar,
    grammar_for_schema,
)


def _refusal(schema: Any, limits: SchemaLimits = SCHEMA_LIMITS) -> str:
    with pytest.raises(SchemaTooComplexError) as caught:
        grammar_for_schema(schema, "format", limits)
    assert caught.value.code == "schema_too_complex"
    return caught.value.message


def _object(n: int, value: dict[str, Any] | None = None) -> dict[str, Any]:
    props = {f"p{i}": value or {"type": "string"} for i in range(n)}
    return {"type": "object", "properties": props}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"enum": list(range(1025))}, "format.enum has 1025 values; the limit is 1024."),
        ({"anyOf": [{"const": i} for i in range(2000)]},
         "format.anyOf has 2000 entries; the limit is 1024."),
        (_object(257), "format.properties has 257 entries; the limit is 256."),
        ({"type": "array", "items": {"type": "string", "maxLength": 5000}},
         "format.items.maxLength is 5000; the limit is 1000."),
        ({"type": "array", "items": {}, "minItems": 1001},
         "format.minItems is 1001; the limit is 1000."),
        (_object(1, {"type": "string", "pattern": "^(ab){2,3000}$"}),
         "format.properties.p0.pattern repeats 3000 times; the limit is 1000."),
        ({"anyOf": [{"type": "string"}, {"enum": list(range(1100))}]},
         "format.anyOf[1].enum has 1100 values; the limit is 1024."),
    ],
)  # fmt: skip
def test_each_limit_names_the_place_and_the_number(schema, message):
    assert _refusal(schema) == message


def test_size_limits():
    big = _object(100, {"type": "string", "description": "é" * 1000})
    message = _refusal(big)
    assert message.startswith("format is ") and message.endswith(" bytes; the limit is 131072.")
    size = int(message.split()[2])
    assert size > 200_000  # counted in UTF-8 bytes, not characters
    small_grammar = SchemaLimits(max_grammar_bytes=2000)
    message = _refusal(_object(100), small_grammar)
    assert message.startswith("format makes a grammar of ")
    assert message.endswith(" bytes; the limit is 2000.")


def test_values_inside_enum_const_and_default_are_data_not_schemas():
    data = {"enum": [{"enum": list(range(5000))}], "default": {"maxLength": 10**9}}
    check_schema(data, "format")


def test_allowed_shapes_still_compile():
    assert "root ::=" in grammar_for_schema({"enum": list(range(1024))})
    assert "root ::=" in grammar_for_schema(_object(256))
    assert "root ::=" in grammar_for_schema({"type": "string", "maxLength": 1000})


def test_compile_grammar_runs_off_the_loop_and_matches_the_sync_result():
    schema = _object(200)

    async def compile_while_ticking() -> tuple[str, int]:
        ticks = 0
        task = asyncio.create_task(compile_grammar(schema, "format"))
        while not task.done():
            ticks += 1
            await asyncio.sleep(0)
        return await task, ticks

    grammar, ticks = asyncio.run(compile_while_ticking())
    assert ticks > 1  # the loop kept running while the schema compiled
    assert grammar == grammar_for_schema(schema)


def test_compile_grammar_has_a_time_bound():
    slow = _object(256, {"type": "string", "description": "unique-to-this-test"})
    hurried = SchemaLimits(compile_timeout_s=0.001)
    with pytest.raises(SchemaTooComplexError, match=r"^format took longer than 0\.001 s"):
        asyncio.run(compile_grammar(slow, "format", hurried))


def test_unsupported_schema_is_a_plain_400():
    with pytest.raises(InvalidRequestError, match="cannot be turned into a grammar") as caught:
        grammar_for_schema({"type": "no-such-type"}, "format")
    assert not isinstance(caught.value, SchemaTooComplexError)
    assert caught.value.param == "format"
