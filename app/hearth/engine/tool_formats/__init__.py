"""The registry of tool-call formats: each family's call markers and its parser.

Which format a model speaks is read off its chat template by the shared table in
``core/chat_formats.py`` (the GUI names it too); this side adds what only the worker
needs: where a call starts in a streamed reply, how to parse it, which tokens to keep.
"""

from __future__ import annotations

from collections.abc import Collection

from hearth.core.chat_formats import GEMMA4_CALL, detect_tool_format
from hearth.engine.tool_formats import json_formats as j
from hearth.engine.tool_formats import token_formats as t
from hearth.engine.tool_formats import xml_formats as x
from hearth.engine.tool_formats.base import (
    DSML,
    FormatSpec,
    ParsedOutput,
    Schemas,
    ToolFormat,
    ds_token,
)
from hearth.engine.tool_formats.gemma4 import GEMMA4_END, parse_gemma4

F = ToolFormat
REGISTRY: tuple[FormatSpec, ...] = (
    FormatSpec(F.HARMONY, ("<|channel|>", "<|start|>"), t.parse_harmony),
    FormatSpec(F.GEMMA4, (GEMMA4_CALL,), parse_gemma4),
    FormatSpec(F.SEED_OSS, ("<seed:tool_call>",), x.parse_seed_oss),
    FormatSpec(F.MINIMAX, ("<minimax:tool_call>",), x.parse_minimax),
    FormatSpec(F.DEEPSEEK_DSML, (f"<{DSML}",), x.parse_deepseek_dsml),
    FormatSpec(F.DEEPSEEK, (t.DS_CALLS_BEGIN, ds_token("tool_call_begin")), t.parse_deepseek),
    FormatSpec(F.KIMI, ("<|tool_calls_section_begin|>", "<|tool_call_begin|>"), t.parse_kimi),
    FormatSpec(F.GLM, ("<tool_call>",), x.parse_glm),
    FormatSpec(F.QWEN3_CODER, ("<tool_call>",), x.parse_qwen3_coder),
    FormatSpec(F.COMMAND_R, ("<|START_ACTION|>", "<|START_THINKING|>"), j.parse_command_r),
    FormatSpec(F.LFM2, ("<|tool_call_start|>",), t.parse_lfm2),
    FormatSpec(F.NEMOTRON, ("<TOOLCALL>",), j.parse_nemotron),
    FormatSpec(F.APRIEL, ("<tool_calls>",), j.parse_apriel),
    FormatSpec(F.PHI4, ("<|tool_call|>",), j.parse_phi4),
    FormatSpec(F.MISTRAL, (j.MISTRAL_MARK,), j.parse_mistral),
    FormatSpec(F.HERMES, (j.HERMES_OPEN,), j.parse_hermes),
    FormatSpec(F.LLAMA3, ("{", j.LLAMA3_MARK), j.parse_llama3),
)  # fmt: skip
BY_FORMAT = {spec.fmt: spec for spec in REGISTRY}

# Special tokens each format's parser must see as text. llama.cpp drops control tokens
# from detokenized output unless asked to render them, so the engine must keep these.
PRESERVED: dict[ToolFormat, tuple[str, ...]] = {
    F.HARMONY: ("<|start|>", "<|channel|>", "<|constrain|>", "<|message|>", "<|end|>",
                "<|call|>", "<|return|>"),
    F.GEMMA4: (GEMMA4_CALL, GEMMA4_END),
    F.SEED_OSS: ("<seed:tool_call>", "</seed:tool_call>"),
    F.MINIMAX: ("<minimax:tool_call>", "</minimax:tool_call>"),
    F.DEEPSEEK_DSML: (),
    F.DEEPSEEK: tuple(ds_token(n) for n in ("tool_calls_begin", "tool_calls_end",
                                            "tool_call_begin", "tool_call_end", "tool_sep")),
    F.KIMI: ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
             "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"),
    F.GLM: ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
            "</arg_value>"),
    F.QWEN3_CODER: ("<tool_call>", "</tool_call>"),
    F.COMMAND_R: ("<|START_ACTION|>", "<|END_ACTION|>", "<|START_THINKING|>",
                  "<|END_THINKING|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"),
    F.LFM2: ("<|tool_call_start|>", "<|tool_call_end|>"),
    F.NEMOTRON: ("<TOOLCALL>", "</TOOLCALL>"),
    F.APRIEL: ("<tool_calls>", "</tool_calls>"),
    F.PHI4: ("<|tool_call|>", "<|/tool_call|>"),
    F.MISTRAL: (j.MISTRAL_MARK, "[ARGS]", "[CALL_ID]"),
    F.HERMES: (j.HERMES_OPEN, j.HERMES_CLOSE),
    F.LLAMA3: (j.LLAMA3_MARK,),
}  # fmt: skip


def detect(template: str | None, vocab: Collection[str] = ()) -> ToolFormat:
    """The format a model's chat template (or failing that, its special tokens) uses."""
    return detect_tool_format(template, vocab)


def preserved_tokens(fmt: ToolFormat) -> tuple[str, ...]:
    return PRESERVED[fmt]


def spec_for(fmt: ToolFormat) -> FormatSpec:
    return BY_FORMAT[fmt]


def parse(text: str, fmt: ToolFormat, schemas: Schemas | None = None) -> ParsedOutput:
    return BY_FORMAT[fmt].parse(text, schemas or {})


__all__ = ["REGISTRY", "FormatSpec", "ParsedOutput", "Schemas", "ToolFormat", "detect",
           "parse", "preserved_tokens", "spec_for"]  # fmt: skip
