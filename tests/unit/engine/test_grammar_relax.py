"""Tools' parameter schemas: upper bounds past the grammar's limit are dropped."""

from __future__ import annotations

import pytest

from hearth.engine.grammar import SchemaTooComplexError, check_schema, relax_upper_bounds


def test_large_upper_bounds_go_and_the_rest_stays():
    schema = {
        "type": "object",
        "properties": {
            "script": {"type": "string", "maxLength": 524288, "minLength": 1},
            "files": {"type": "array", "items": {"type": "string"}, "maxItems": 5000},
            "name": {"type": "string", "maxLength": 64},
        },
        "default": {"maxLength": 10**9},  # data, not a schema: kept as is
    }
    relaxed = relax_upper_bounds(schema)
    props = relaxed["properties"]
    assert props["script"] == {"type": "string", "minLength": 1}
    assert "maxItems" not in props["files"]
    assert props["name"]["maxLength"] == 64
    assert relaxed["default"] == {"maxLength": 10**9}
    check_schema(relaxed, "tools[0]")  # now within the limits
    assert schema["properties"]["script"]["maxLength"] == 524288  # the input is untouched


def test_large_lower_bounds_are_still_refused():
    schema = {"type": "string", "minLength": 5000}
    with pytest.raises(SchemaTooComplexError):
        check_schema(relax_upper_bounds(schema), "tools[0]")
