"""The registry of tool-call formats: which family a model speaks, and its parser.

The order matters: specific formats come before the generic ones they resemble
(Qwen3-Coder's ``<tool_call><function=`` before Hermes' ``<tool_call>{``).
"""

from __future__ import annotations

from collections.abc import Collection

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

F = ToolFormat
REGISTRY: tuple[FormatSpec, ...] = (
    FormatSpec(F.HARMONY, ("<|channel|>", "<|start|>"), ("<|channel|>",), t.parse_harmony,
               requires=("<|message|>",)),
    FormatSpec(F.SEED_OSS, ("<seed:tool_call>",), ("<seed:tool_call>",), x.parse_seed_oss),
    FormatSpec(F.MINIMAX, ("<minimax:tool_call>",), ("<minimax:tool_call>",), x.parse_minimax),
    FormatSpec(F.DEEPSEEK_DSML, (f"<{DSML}",), (DSML,), x.parse_deepseek_dsml),
    FormatSpec(F.DEEPSEEK, (t.DS_CALLS_BEGIN, ds_token("tool_call_begin")), (t.DS_CALLS_BEGIN,),
               t.parse_deepseek),
    FormatSpec(F.KIMI, ("<|tool_calls_section_begin|>", "<|tool_call_begin|>"),
               ("<|tool_calls_section_begin|>",), t.parse_kimi),
    FormatSpec(F.GLM, ("<tool_call>",), ("<arg_key>",), x.parse_glm),
    FormatSpec(F.QWEN3_CODER, ("<tool_call>",), ("<function=",), x.parse_qwen3_coder,
               requires=("<tool_call>",)),
    FormatSpec(F.COMMAND_R, ("<|START_ACTION|>", "<|START_THINKING|>"), ("<|START_ACTION|>",),
               j.parse_command_r),
    FormatSpec(F.LFM2, ("<|tool_call_start|>",), ("<|tool_call_start|>",), t.parse_lfm2,
               vocab_signs=("<|tool_call_start|>",)),
    FormatSpec(F.NEMOTRON, ("<TOOLCALL>",), ("<TOOLCALL>",), j.parse_nemotron),
    FormatSpec(F.APRIEL, ("<tool_calls>",), ("<tool_calls>",), j.parse_apriel),
    FormatSpec(F.PHI4, ("<|tool_call|>",), ("<|tool_call|>",), j.parse_phi4),
    FormatSpec(F.MISTRAL, (j.MISTRAL_MARK,), (j.MISTRAL_MARK,), j.parse_mistral,
               vocab_signs=(j.MISTRAL_MARK,)),
    FormatSpec(F.HERMES, (j.HERMES_OPEN,), (j.HERMES_OPEN,), j.parse_hermes),
    FormatSpec(F.LLAMA3, ("{", j.LLAMA3_MARK), (j.LLAMA3_MARK, "ipython"), j.parse_llama3,
               vocab_signs=(j.LLAMA3_MARK,)),
)  # fmt: skip
BY_FORMAT = {spec.fmt: spec for spec in REGISTRY}

# Special tokens each format's parser must see as text. llama.cpp drops control tokens
# from detokenized output unless asked to render them, so the engine must keep these.
PRESERVED: dict[ToolFormat, tuple[str, ...]] = {
    F.HARMONY: ("<|start|>", "<|channel|>", "<|constrain|>", "<|message|>", "<|end|>",
                "<|call|>", "<|return|>"),
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
    source = template or ""
    for spec in REGISTRY:
        if any(sign in source for sign in spec.template_signs) and all(
            need in source for need in spec.requires
        ):
            return spec.fmt
    for spec in REGISTRY:
        if any(sign in vocab for sign in spec.vocab_signs):
            return spec.fmt
    return ToolFormat.HERMES


def preserved_tokens(fmt: ToolFormat) -> tuple[str, ...]:
    return PRESERVED[fmt]


def spec_for(fmt: ToolFormat) -> FormatSpec:
    return BY_FORMAT[fmt]


def parse(text: str, fmt: ToolFormat, schemas: Schemas | None = None) -> ParsedOutput:
    return BY_FORMAT[fmt].parse(text, schemas or {})


__all__ = ["REGISTRY", "FormatSpec", "ParsedOutput", "Schemas", "ToolFormat", "detect",
           "parse", "preserved_tokens", "spec_for"]  # fmt: skip
