"""What a model can do, read off its chat template, vocabulary and metadata.

Clients choose models by this: VS Code Copilot's model picker lists only models whose
Ollama ``/api/show`` says ``tools``, and reasoning-aware clients look for ``thinking``.
The worker works it out once at load (``engine/capabilities.py``), from the same
detection the generation path uses, so what a model advertises and how its replies are
parsed cannot disagree; the Library works it out from the GGUF header alone (no
vocabulary there), to show it before the model is loaded.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from hearth.core.chat_formats import (
    REASONING_BY_NAME,
    ReasoningSpec,
    ToolFormat,
    detect_reasoning,
    detect_tool_format,
)

# The reasoning markers that belong to a tool-call family whatever its template says:
# a chosen format brings these along. Other families share ``<think>`` or reason only in
# some models, so for them reasoning stays detected.
FAMILY_REASONING: dict[ToolFormat, str] = {
    ToolFormat.HARMONY: "harmony",
    ToolFormat.SEED_OSS: "seed",
    ToolFormat.COMMAND_R: "command_r",
    ToolFormat.APRIEL: "apriel",
    ToolFormat.GEMMA4: "gemma4",
}


@dataclass(frozen=True)
class ModelTraits:
    """The model family's formats and what it can be asked to do.

    ``tool_format`` is the call syntax replies are parsed with (always set: models whose
    template knows no tools are shown them in Hermes form); ``tools`` says whether the
    template itself renders a tool list, which is what "supports tools" means to clients.
    ``reasoning`` is read off the template or else the vocabulary, so a reply that opens
    with ``<think>`` is split either way; but only a template that writes reasoning
    makes a thinking model (Qwen3-Coder shares Qwen3's vocabulary and does not think).
    """

    tool_format: ToolFormat
    reasoning: ReasoningSpec | None
    tools: bool
    fim: bool
    embedding_only: bool
    thinking: bool  # the template has a reasoning block (the vocabulary alone is no sign)
    format_chosen: bool = False  # tool_format was chosen at load (--chat-format), not detected

    @property
    def format_source(self) -> str:
        """How ``tool_format`` was decided, for /api/show: "chosen" or "detected"."""
        return "chosen" if self.format_chosen else "detected"

    def capabilities(self) -> list[str]:
        """Ollama's capability names, in Ollama's order."""
        if self.embedding_only:
            return ["embedding"]
        names = ["completion"]
        names += ["tools"] if self.tools else []
        names += ["insert"] if self.fim else []
        names += ["thinking"] if self.thinking else []
        return names


def model_traits(
    template: str | None,
    markers: Collection[str],
    metadata: Mapping[str, object],
    *,
    fim: bool,
    chat_format: str | None = None,
) -> ModelTraits:
    """Detect the family from the template (``None`` when the model ships none) and the
    vocabulary's marker tokens; encoder-only models (a pooling type, no chat template)
    are embedding models. ``chat_format`` (a registry name) overrides detection, for
    templates that detection gets wrong; it brings its family's reasoning markers."""
    arch = metadata.get("general.architecture", "")
    pooled = f"{arch}.pooling_type" in metadata
    reasoning = detect_reasoning(template, markers)
    thinking = detect_reasoning(template) is not None
    if chat_format is None:
        tool_format = detect_tool_format(template, markers)
    else:
        tool_format = ToolFormat(chat_format)
        family = FAMILY_REASONING.get(tool_format)
        if family is not None:
            reasoning = REASONING_BY_NAME[family]
            thinking = True
    return ModelTraits(
        tool_format=tool_format,
        reasoning=reasoning,
        tools=template is not None and "tools" in template,
        fim=fim,
        embedding_only=pooled and template is None,
        thinking=thinking,
        format_chosen=chat_format is not None,
    )
