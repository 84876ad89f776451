"""Forced calls let a reasoning model think first, in its own markers."""

from __future__ import annotations

from pathlib import Path

import llama_cpp
import pytest

from hearth.core.generation import ToolSpec
from hearth.engine.grammar import check_grammar
from hearth.engine.reasoning import SPECS, ReasoningSpec, with_reasoning
from hearth.engine.tool_calls import ToolFormat, call_grammar

WEATHER = ToolSpec(
    "get_weather", "", {"type": "object", "properties": {"city": {"type": "string"}}}
)


@pytest.fixture(scope="module")
def vocab(tiny_model_f16: Path):  # type: ignore[no-untyped-def]
    llm = llama_cpp.Llama(model_path=str(tiny_model_f16), vocab_only=True, verbose=False)
    yield llama_cpp.llama_model_get_vocab(llm.model)
    llm.close()


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_every_reasoning_prefix_parses_in_llama_cpp(vocab, spec: ReasoningSpec) -> None:  # type: ignore[no-untyped-def]
    call = call_grammar([WEATHER], ToolFormat.HERMES)
    for prompt in ("user: hi\nassistant:", f"assistant: {spec.open}"):
        grammar = with_reasoning(call, spec, prompt)
        check_grammar(vocab, grammar)
        assert grammar.count("root ::=") == 1 and "forced-call ::=" in grammar


def test_an_opened_block_must_close_and_an_unopened_one_is_optional() -> None:
    think = next(s for s in SPECS if s.name == "think")
    call = call_grammar([WEATHER], ToolFormat.HERMES)
    opened = with_reasoning(call, think, "<|im_start|>assistant\n<think>\n")
    assert opened.startswith('root ::= reasoning-body "</think>"')
    optional = with_reasoning(call, think, "<|im_start|>assistant\n")
    assert optional.startswith('root ::= ("<think>" reasoning-body "</think>"')
