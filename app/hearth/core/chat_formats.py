"""The chat formats of model families: their tool-call syntax and reasoning markers, and
how a chat template (or failing that, a vocabulary) tells which one a model uses.

Plain data and string matching, so that every side reads the same table: the worker
(``engine/tool_formats`` parses replies and writes forced-call grammars by these names),
the Load dialog's "Detect (...)" and ``--chat-format``, and the Library's capability
chips, which cannot import the engine (it is the worker's, and brings llama_cpp).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum


class ToolFormat(str, Enum):
    """A family's tool-call syntax; the value is the name ``--chat-format`` takes."""

    HERMES = "hermes"
    LLAMA3 = "llama3"
    MISTRAL = "mistral"
    QWEN3_CODER = "qwen3_coder"
    SEED_OSS = "seed_oss"
    GLM = "glm"
    MINIMAX = "minimax"
    DEEPSEEK = "deepseek"
    DEEPSEEK_DSML = "deepseek_dsml"
    KIMI = "kimi"
    HARMONY = "harmony"
    PHI4 = "phi4"
    LFM2 = "lfm2"
    COMMAND_R = "command_r"
    APRIEL = "apriel"
    NEMOTRON = "nemotron"
    GEMMA4 = "gemma4"


CHAT_FORMATS: tuple[str, ...] = tuple(fmt.value for fmt in ToolFormat)
"""The names a load may choose instead of detection (``LoadConfig.chat_format``)."""

# Markers more than one table needs (the engine's parsers and grammars use them too).
HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"
MISTRAL_MARK = "[TOOL_CALLS]"
LLAMA3_MARK = "<|python_tag|>"
GEMMA4_CALL = "<|tool_call>"
# DeepSeek's special tokens use a fullwidth bar and "lower one eighth block" for spaces.
DS_BAR, DS_SPACE = "\uff5c", "\u2581"
DSML = f"{DS_BAR}DSML{DS_BAR}"


def ds_token(name: str) -> str:
    """``ds_token("tool_calls_begin")`` is DeepSeek's <|tool calls begin|> token text."""
    return f"<{DS_BAR}{name.replace('_', DS_SPACE)}{DS_BAR}>"


@dataclass(frozen=True)
class FormatSigns:
    """What identifies one format: any of ``template`` in the chat template (with all of
    ``requires`` too), or else any of ``vocab`` among the special tokens."""

    fmt: ToolFormat
    template: tuple[str, ...]
    vocab: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


F = ToolFormat
# Specific formats come before the generic ones they resemble (Qwen3-Coder's
# ``<tool_call><function=`` before Hermes' ``<tool_call>{``); Hermes is the fallback.
SIGNS: tuple[FormatSigns, ...] = (
    FormatSigns(F.HARMONY, ("<|channel|>",), requires=("<|message|>",)),
    FormatSigns(F.GEMMA4, (f"{GEMMA4_CALL}call:",)),
    FormatSigns(F.SEED_OSS, ("<seed:tool_call>",)),
    FormatSigns(F.MINIMAX, ("<minimax:tool_call>",)),
    FormatSigns(F.DEEPSEEK_DSML, (DSML,)),
    FormatSigns(F.DEEPSEEK, (ds_token("tool_calls_begin"),)),
    FormatSigns(F.KIMI, ("<|tool_calls_section_begin|>",)),
    FormatSigns(F.GLM, ("<arg_key>",)),
    FormatSigns(F.QWEN3_CODER, ("<function=",), requires=(HERMES_OPEN,)),
    FormatSigns(F.COMMAND_R, ("<|START_ACTION|>",)),
    FormatSigns(F.LFM2, ("<|tool_call_start|>",), vocab=("<|tool_call_start|>",)),
    FormatSigns(F.NEMOTRON, ("<TOOLCALL>",)),
    FormatSigns(F.APRIEL, ("<tool_calls>",)),
    FormatSigns(F.PHI4, ("<|tool_call|>",)),
    FormatSigns(F.MISTRAL, (MISTRAL_MARK,), vocab=(MISTRAL_MARK,)),
    FormatSigns(F.HERMES, (HERMES_OPEN,)),
    FormatSigns(F.LLAMA3, (LLAMA3_MARK, "ipython"), vocab=(LLAMA3_MARK,)),
)


def detect_tool_format(template: str | None, vocab: Collection[str] = ()) -> ToolFormat:
    """The format a model's chat template (or failing that, its special tokens) uses."""
    source = template or ""
    for signs in SIGNS:
        if any(s in source for s in signs.template) and all(r in source for r in signs.requires):
            return signs.fmt
    for signs in SIGNS:
        if any(s in vocab for s in signs.vocab):
            return signs.fmt
    return ToolFormat.HERMES


@dataclass(frozen=True)
class ReasoningSpec:
    """One family's reasoning block: its markers and what identifies it."""

    name: str
    open: str  # "" when every reply starts inside reasoning (Apriel)
    close: str
    template_signs: tuple[str, ...]
    vocab_signs: tuple[str, ...] = ()
    lead: str = ""  # words the model opens its reasoning with, not thought (Apriel 1.5)
    answer_end: str = ""  # a marker closing the answer, taken out of the content (Apriel)

    @property
    def preserved(self) -> tuple[str, ...]:
        """Marker tokens the detokenizer must keep as text for this split to work."""
        return tuple(m for m in (self.open, self.close, self.answer_end) if m)


HARMONY = ReasoningSpec("harmony", "<|channel|>analysis", "<|end|>", ("<|channel|>",))
REASONING_SPECS: tuple[ReasoningSpec, ...] = (
    HARMONY,
    ReasoningSpec("seed", "<seed:think>", "</seed:think>", ("<seed:think>",)),
    ReasoningSpec("command_r", "<|START_THINKING|>", "<|END_THINKING|>", ("<|START_THINKING|>",)),
    ReasoningSpec("mistral", "[THINK]", "[/THINK]", ("[THINK]",), ("[THINK]",)),
    ReasoningSpec("minimax_m3", "<mm:think>", "</mm:think>", ("<mm:think>",)),
    ReasoningSpec("gemma4", "<|channel>thought", "<channel|>", ("<|channel>",)),
    # Apriel: "Here are my reasoning steps:" ... [BEGIN FINAL RESPONSE] ... [END FINAL
    # RESPONSE]; 1.6's template writes the lead into the prompt, 1.5's model writes it.
    ReasoningSpec("apriel", "", "[BEGIN FINAL RESPONSE]", ("[BEGIN FINAL RESPONSE]",),
                  lead="Here are my reasoning steps:", answer_end="[END FINAL RESPONSE]"),
    ReasoningSpec("think", "<think>", "</think>", ("<think>", "</think>"), ("<think>",)),
)
REASONING_BY_NAME = {spec.name: spec for spec in REASONING_SPECS}


def detect_reasoning(template: str | None, vocab: Collection[str] = ()) -> ReasoningSpec | None:
    """The reasoning markers a model uses, from its chat template or else its vocabulary."""
    source = template or ""
    for spec in REASONING_SPECS:
        if any(sign in source for sign in spec.template_signs):
            return spec
    for spec in REASONING_SPECS:
        if any(sign in vocab for sign in spec.vocab_signs):
            return spec
    return None
