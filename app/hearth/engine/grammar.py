"""Structured output: JSON mode and JSON Schema turned into llama.cpp GBNF grammars.

llama-cpp-python's chat handlers ignore OpenAI's ``json_schema`` response format, so
Hearth converts the schema itself and enforces it with a grammar sampler.
"""

from __future__ import annotations

import json
from typing import Any

import llama_cpp
from llama_cpp import llama_grammar

from hearth.core.errors import InvalidRequestError

JSON_OBJECT_GRAMMAR = llama_grammar.JSON_GBNF


def grammar_for_schema(schema: dict[str, Any]) -> str:
    """GBNF for a JSON Schema; unsupported constructs are a clear 400."""
    try:
        return str(llama_grammar.json_schema_to_gbnf(json.dumps(schema)))
    except Exception as exc:  # the converter raises plain Exceptions for bad schemas
        raise InvalidRequestError(
            f"This JSON schema cannot be turned into a grammar: {exc}",
            param="response_format",
        ) from exc


def check_grammar(vocab: llama_cpp.llama_vocab_p, grammar: str) -> None:
    """Parse once up front, so a bad grammar fails the request, not the decode loop."""
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    if not sampler:
        raise InvalidRequestError("The grammar does not parse.", param="response_format")
    llama_cpp.llama_sampler_free(sampler)
