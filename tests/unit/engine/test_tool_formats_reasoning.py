"""Reasoning split from the reply, whole and streamed at every chunk boundary."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hearth.engine.reasoning import (
    HARMONY,
    SPECS,
    ReasoningSpec,
    Split,
    TagSplitter,
    detect_reasoning,
    make_splitter,
    starts_inside,
)
from hearth.engine.tool_calls import ToolCallFilter, ToolFormat

BY_NAME = {spec.name: spec for spec in SPECS}

# (spec, rendered prompt's tail, generated text, expected reasoning, expected content)
SAMPLES = [
    ("think", "<|im_start|>assistant\n", "<think>\nLet me think.\n</think>\n\nThe answer is 4.",
     "Let me think.\n", "The answer is 4."),
    ("think", "<\uff5cAssistant\uff5c><think>\n", "Hmm, 2+2.\n</think>\n\n4", "Hmm, 2+2.\n", "4"),
    ("think", "<|im_start|>assistant\n<think>\n\n</think>\n\n", "Just 4.", "", "Just 4."),
    ("think", "<|im_start|>assistant\n", "No thinking here. <think> is a tag.", "",
     "No thinking here. <think> is a tag."),
    ("seed", "<seed:bos>assistant\n", "<seed:think>Plan.</seed:think>Done.", "Plan.", "Done."),
    ("command_r", "<|CHATBOT_TOKEN|>",
     "<|START_THINKING|>Consider.<|END_THINKING|><|START_RESPONSE|>Hi<|END_RESPONSE|>",
     "Consider.", "<|START_RESPONSE|>Hi<|END_RESPONSE|>"),
    ("mistral", "[/INST]", "[THINK]Reason.[/THINK]Answer.", "Reason.", "Answer."),
    ("gemma4", "<start_of_turn>model\n", "<|channel>thought\nIdea.<channel|>Reply.", "Idea.",
     "Reply."),
    ("apriel", "Here are my reasoning steps:\n", "Step 1.\n[BEGIN FINAL RESPONSE]\nDone.",
     "Step 1.\n", "Done."),
    # Apriel 1.5 writes the lead itself, and closes its answer with a marker.
    ("apriel", "<|assistant|>\n", "Here are my reasoning steps:\nStep 1.\n[BEGIN FINAL RESPONSE]"
     "\nDone.\n[END FINAL RESPONSE]\n", "Step 1.\n", "Done."),
    ("apriel", "<|assistant|>\n", "Here are my thoughts.\n[BEGIN FINAL RESPONSE]\nA  b\n\n c.\n",
     "Here are my thoughts.\n", "A  b\n\n c.\n"),
    ("harmony", "<|start|>assistant",
     "<|channel|>analysis<|message|>User wants 4.<|end|><|start|>assistant<|channel|>final"
     "<|message|>It is 4.<|return|>", "User wants 4.", "It is 4."),
]  # fmt: skip


def run(splitter: TagSplitter | object, chunks: list[str]) -> Split:
    parts = [splitter.feed(c) for c in chunks] + [splitter.finish()]  # type: ignore[attr-defined]
    return Split("".join(p.reasoning for p in parts), "".join(p.content for p in parts))


def chunkings(text: str) -> list[list[str]]:
    rng = random.Random(len(text))
    splits = [[text[:i], text[i:]] for i in range(len(text) + 1)]
    splits.append(list(text))
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(text)), min(6, len(text) - 1)))
        splits.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    return splits


@pytest.mark.parametrize(("name", "prompt", "text", "reasoning", "content"), SAMPLES)
def test_split_whole_and_streamed(
    name: str, prompt: str, text: str, reasoning: str, content: str
) -> None:
    spec = BY_NAME[name]
    for chunks in chunkings(text):
        got = run(make_splitter(spec, prompt), chunks)
        assert got == Split(reasoning, content), chunks


def test_unfinished_reasoning_stays_reasoning() -> None:
    got = run(make_splitter(BY_NAME["think"], ""), ["<think>still going", " on"])
    assert got == Split("still going on", "")


def test_harmony_tool_call_passes_through_to_the_tool_filter() -> None:
    args = json.dumps({"city": "Oslo"})
    text = (
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary"
        f" to=functions.get_weather <|constrain|>json<|message|>{args}<|call|>"
    )
    for chunks in chunkings(text)[::7]:
        splitter = make_splitter(HARMONY, "<|start|>assistant")
        tool_filter = ToolCallFilter(ToolFormat.HARMONY)
        reasoning, streamed = [], []
        for piece in [*(splitter.feed(c) for c in chunks), splitter.finish()]:
            reasoning.append(piece.reasoning)
            streamed.append(tool_filter.feed(piece.content))
        parsed = tool_filter.finish()
        assert "".join(reasoning) == "Need weather."
        assert "".join(streamed).strip() == "" and parsed.content == ""
        assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [
            ("get_weather", {"city": "Oslo"})
        ]


def test_harmony_without_framing_is_plain_content() -> None:
    text = "plain words " * 40
    assert run(make_splitter(HARMONY, ""), [text[:100], text[100:]]) == Split("", text)
    assert run(make_splitter(HARMONY, ""), ["short reply"]) == Split("", "short reply")


def test_starts_inside_reads_the_prompt() -> None:
    think = BY_NAME["think"]
    assert starts_inside(think, "<|im_start|>assistant\n<think>\n")
    assert not starts_inside(think, "<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert starts_inside(BY_NAME["apriel"], "anything")


EXPECTED = {
    "Qwen-Qwen3-0.6B.jinja": "think",
    "deepseek-ai-DeepSeek-V3.1.jinja": "think",
    "GLM-4.6.jinja": "think",
    "ByteDance-Seed-OSS.jinja": "seed",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": "command_r",
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": "mistral",
    "MiniMax-M3.jinja": "minimax_m3",
    "google-gemma-4-31B-it.jinja": "gemma4",
    "Apriel-1.6-15b-Thinker-fixed.jinja": "apriel",
    "openai-gpt-oss-120b.jinja": "harmony",
    "meta-llama-Llama-3.1-8B-Instruct.jinja": None,
    "Qwen-Qwen2.5-7B-Instruct.jinja": None,
}


def test_detect_reasoning_on_real_templates(llama_cpp_templates: Path) -> None:
    for name, expected in EXPECTED.items():
        path = llama_cpp_templates / name
        if path.is_file():
            spec: ReasoningSpec | None = detect_reasoning(path.read_text(encoding="utf-8"))
            assert (spec.name if spec else None) == expected, name


def test_detect_reasoning_from_vocab() -> None:
    assert detect_reasoning("{{ messages }}", {"<think>"}) is BY_NAME["think"]
    assert detect_reasoning("{{ messages }}", ()) is None
