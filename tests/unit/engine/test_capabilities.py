"""What a model advertises (Ollama capabilities) follows from its template and vocabulary."""

from __future__ import annotations

from hearth.engine.capabilities import model_traits
from hearth.engine.tool_calls import ToolFormat

QWEN3_LIKE = (
    "{% if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>"
    "<tool_call>{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>{% endif %}"
)


def test_a_template_with_tools_and_thinking() -> None:
    traits = model_traits(QWEN3_LIKE, {"<think>", "</think>"}, {}, fim=False)
    assert traits.capabilities() == ["completion", "tools", "thinking"]
    assert traits.tool_format is ToolFormat.HERMES
    assert traits.reasoning is not None and traits.reasoning.name == "think"


def test_vocabulary_alone_splits_reasoning_but_does_not_advertise_thinking() -> None:
    """Qwen3-Coder shares Qwen3's vocabulary (with <think>) and does not think."""
    traits = model_traits("{{ messages[0].content }}", {"<think>"}, {}, fim=True)
    assert traits.reasoning is not None
    assert traits.capabilities() == ["completion", "insert"]


def test_an_encoder_without_a_chat_template_is_an_embedding_model() -> None:
    metadata = {"general.architecture": "bert", "bert.pooling_type": "1"}
    assert model_traits(None, set(), metadata, fim=False).capabilities() == ["embedding"]
    assert model_traits(None, set(), {}, fim=False).capabilities() == ["completion"]


def test_a_chosen_format_replaces_detection_and_brings_its_reasoning() -> None:
    detected = model_traits(QWEN3_LIKE, {"<think>", "</think>"}, {}, fim=False)
    assert detected.format_source == "detected"
    chosen = model_traits(QWEN3_LIKE, {"<think>"}, {}, fim=False, chat_format="harmony")
    assert chosen.tool_format is ToolFormat.HARMONY and chosen.format_source == "chosen"
    assert chosen.reasoning is not None and chosen.reasoning.name == "harmony"
    # A family without markers of its own keeps the reasoning read off the template.
    glm = model_traits(QWEN3_LIKE, {"<think>"}, {}, fim=False, chat_format="glm")
    assert glm.tool_format is ToolFormat.GLM
    assert glm.reasoning is not None and glm.reasoning.name == "think"
    assert glm.capabilities() == detected.capabilities()
