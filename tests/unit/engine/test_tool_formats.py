"""Each model family's tool-call format: detected, parsed whole and parsed as a stream.

The samples are written the way each family's chat template renders an assistant's
calls (so the way the model was trained to write them). Every sample is also fed to the
streaming filter split at every character boundary and in random chunks: the result
must not depend on where the detokenizer happened to cut the text.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import llama_cpp
import pytest

from hearth.core.generation import ToolSpec
from hearth.engine.grammar import check_grammar
from hearth.engine.tool_calls import (
    ParsedOutput,
    ToolCallFilter,
    ToolFormat,
    call_grammar,
    detect_format,
    parse_output,
    preserved_tokens,
)
from hearth.engine.tool_formats.base import DSML, ds_token

F = ToolFormat
WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object",
     "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                    "metric": {"type": "boolean"}},
     "required": ["city"]},
)  # fmt: skip
ARGS = {"city": "Zürich", "days": 3}
ARGS_JSON = json.dumps(ARGS, ensure_ascii=False)
PRE = "Let me check. "

# (format, text the model writes, content expected besides the calls)
SAMPLES: list[tuple[ToolFormat, str, str]] = [
    (F.HERMES, f'{PRE}<tool_call>\n{{"name": "get_weather", "arguments": {ARGS_JSON}}}\n'
               "</tool_call>", PRE.strip()),
    (F.MISTRAL, f'[TOOL_CALLS][{{"name": "get_weather", "arguments": {ARGS_JSON}}}]', ""),
    (F.MISTRAL, f"{PRE}[TOOL_CALLS]get_weather[ARGS]{ARGS_JSON}", PRE.strip()),
    (F.MISTRAL, f"[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{ARGS_JSON}", ""),
    (F.QWEN3_CODER, f"{PRE}\n<tool_call>\n<function=get_weather>\n<parameter=city>\nZürich\n"
                    "</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
     PRE.strip()),
    (F.SEED_OSS, "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Zürich</parameter>\n"
                 "<parameter=days>3</parameter>\n</function>\n</seed:tool_call>", ""),
    (F.GLM, f"{PRE}\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Zürich"
            "</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
     PRE.strip()),
    (F.MINIMAX, '<minimax:tool_call>\n<invoke name="get_weather"><parameter name="city">Zürich'
                '</parameter>\n<parameter name="days">3</parameter>\n</invoke>\n'
                "</minimax:tool_call>", ""),
    (F.DEEPSEEK_DSML, f'{PRE}\n\n<{DSML}function_calls>\n<{DSML}invoke name="get_weather">\n'
                      f'<{DSML}parameter name="city" string="true">Zürich</{DSML}parameter>\n'
                      f'<{DSML}parameter name="days" string="false">3</{DSML}parameter>\n'
                      f"</{DSML}invoke>\n</{DSML}function_calls>", PRE.strip()),
    (F.DEEPSEEK, ds_token("tool_calls_begin") + ds_token("tool_call_begin") + "get_weather"
                 + ds_token("tool_sep") + ARGS_JSON + ds_token("tool_call_end")
                 + ds_token("tool_calls_end"), ""),
    (F.DEEPSEEK, PRE + ds_token("tool_calls_begin") + ds_token("tool_call_begin") + "function"
                 + ds_token("tool_sep") + f"get_weather\n```json\n{ARGS_JSON}\n```"
                 + ds_token("tool_call_end") + ds_token("tool_calls_end"), PRE.strip()),
    (F.KIMI, f"{PRE}<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
             f"<|tool_call_argument_begin|>{ARGS_JSON}<|tool_call_end|><|tool_calls_section_end|>",
     PRE.strip()),
    (F.HARMONY, "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant"
                "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
                f"{ARGS_JSON}<|call|>", ""),
    (F.PHI4, f'<|tool_call|>[{{"name": "get_weather", "arguments": {ARGS_JSON}}}]<|/tool_call|>',
     ""),
    (F.PHI4, f'{PRE}<|tool_call|>[{{"name": "get_weather", "arguments": {ARGS_JSON}}}]',
     PRE.strip()),
    (F.LFM2, f'{PRE}<|tool_call_start|>[get_weather(city="Zürich", days=3)]<|tool_call_end|>',
     PRE.strip()),
    (F.LFM2, f'<|tool_call_start|>[{{"name": "get_weather", "arguments": {ARGS_JSON}}}]'
             "<|tool_call_end|>", ""),
    (F.COMMAND_R, "<|START_THINKING|>I should look it up.<|END_THINKING|><|START_ACTION|>[\n"
                  '    {"tool_call_id": "0", "tool_name": "get_weather", '
                  f'"parameters": {ARGS_JSON}}}'
                  "\n]<|END_ACTION|>", ""),
    (F.APRIEL, f'{PRE}\n<tool_calls>[{{"name": "get_weather", "arguments": {ARGS_JSON}}}]'
               "</tool_calls>", PRE.strip()),
    (F.APRIEL, f'<tool_calls>\n{{"name": "get_weather", "arguments": {ARGS_JSON}}}\n'
               "</tool_calls>", ""),  # MiniMax-M1: one object per line
    (F.NEMOTRON, f'<TOOLCALL>[{{"name": "get_weather", "arguments": {ARGS_JSON}}}]</TOOLCALL>',
     ""),
    (F.LLAMA3, f'{{"name": "get_weather", "parameters": {ARGS_JSON}}}', ""),
    (F.LLAMA3, f'<|python_tag|>{{"name": "get_weather", "parameters": {ARGS_JSON}}}', ""),
    (F.GEMMA4, f'{PRE}<|tool_call>call:get_weather{{city:<|"|>Zürich<|"|>,days:3}}<tool_call|>',
     PRE.strip()),
    (F.GEMMA4, '<|tool_call>call:get_weather{days:3,city:<|"|>Zürich<|"|>}', ""),  # no end token
    (F.LFM2, "<|tool_call_start|>[get_weather(city='Zürich', days=3)]<|tool_call_end|>", ""),
]  # fmt: skip
IDS = [f"{fmt.value}-{i}" for i, (fmt, _, _) in enumerate(SAMPLES)]


def assert_weather_call(parsed: ParsedOutput, content: str) -> None:
    assert [c.name for c in parsed.calls] == ["get_weather"]
    assert json.loads(parsed.calls[0].arguments) == ARGS
    assert parsed.content == content


@pytest.mark.parametrize(("fmt", "text", "content"), SAMPLES, ids=IDS)
def test_parse_whole(fmt: ToolFormat, text: str, content: str) -> None:
    assert_weather_call(parse_output(text, fmt, [WEATHER]), content)


def stream(fmt: ToolFormat, chunks: list[str]) -> tuple[str, ParsedOutput]:
    tool_filter = ToolCallFilter(fmt, [WEATHER])
    streamed = "".join(tool_filter.feed(chunk) for chunk in chunks)
    return streamed, tool_filter.finish()


@pytest.mark.parametrize(("fmt", "text", "content"), SAMPLES, ids=IDS)
def test_parse_streamed_at_every_split(fmt: ToolFormat, text: str, content: str) -> None:
    rng = random.Random(len(text))
    splits = [[text[:i], text[i:]] for i in range(len(text) + 1)]
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(text)), 8))
        splits.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    for chunks in splits:
        streamed, parsed = stream(fmt, chunks)
        # Text before the call streams out as it comes; the rest comes from finish().
        assert (streamed + parsed.content).strip() == content or (
            streamed.strip() == content and parsed.content == ""
        ), chunks
        assert [c.name for c in parsed.calls] == ["get_weather"], chunks
        assert json.loads(parsed.calls[0].arguments) == ARGS


def test_every_format_names_the_tokens_it_needs_kept() -> None:
    for fmt, text, _ in SAMPLES:
        for token in preserved_tokens(fmt):
            assert token.startswith(("<", "[")), (fmt, token)
        markers = [m for m in preserved_tokens(fmt) if m in text]
        assert markers or fmt in (F.LLAMA3, F.DEEPSEEK_DSML), fmt


def test_reasoning_is_split_out_where_the_format_marks_it() -> None:
    harmony = parse_output(
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
        "<|message|>It is sunny.<|return|>",
        F.HARMONY,
    )
    assert (harmony.content, harmony.reasoning, harmony.calls) == ("It is sunny.", "Think.", [])
    command_r = parse_output(
        "<|START_THINKING|>Hmm.<|END_THINKING|><|START_RESPONSE|>Hi there.<|END_RESPONSE|>",
        F.COMMAND_R,
    )
    assert (command_r.content, command_r.reasoning) == ("Hi there.", "Hmm.")


def test_values_are_typed_by_the_schema() -> None:
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\n42\n</parameter>\n"
        "<parameter=days>\n7\n</parameter>\n<parameter=metric>\ntrue\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    typed = parse_output(text, F.QWEN3_CODER, [WEATHER])
    assert json.loads(typed.calls[0].arguments) == {"city": "42", "days": 7, "metric": True}
    untyped = parse_output(text, F.QWEN3_CODER)
    assert json.loads(untyped.calls[0].arguments) == {"city": 42, "days": 7, "metric": True}


def test_two_calls_in_one_reply() -> None:
    one = "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>"
    text = f"{one}\n</tool_call>\n{one}\n</tool_call>"
    parsed = parse_output(text, F.QWEN3_CODER)
    assert [json.loads(c.arguments)["city"] for c in parsed.calls] == ["Oslo", "Oslo"]
    assert len({c.id for c in parsed.calls}) == 2
    minimax_m1 = parse_output(
        '<tool_calls>\n{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {}}\n'
        "</tool_calls>",
        F.APRIEL,
    )
    assert [c.name for c in minimax_m1.calls] == ["a", "b"] and minimax_m1.content == ""
    lfm2 = parse_output('<|tool_call_start|>[a(x=1), b.c(y="z")]<|tool_call_end|>', F.LFM2)
    assert [c.name for c in lfm2.calls] == ["a", "b.c"]
    gemma = parse_output('<|tool_call>call:a{x:1}<tool_call|><|tool_call>call:b{}<tool_call|>',
                         F.GEMMA4)  # fmt: skip
    assert [c.name for c in gemma.calls] == ["a", "b"] and gemma.content == ""


def test_gemma4_values_are_its_own_literals() -> None:
    """Strings in <|"|> quotes (so a comma, brace or JSON quote inside needs no escape),
    numbers, true/false/null, lists and maps with bare keys, as the template writes them."""
    text = (
        '<|tool_call>call:plan{steps:[<|"|>a, {b}<|"|>,<|"|>say "hi"<|"|>],'
        "limits:{depth:2,ratio:0.5,strict:false},note:null,ok:true}<tool_call|>"
    )
    parsed = parse_output(text, F.GEMMA4)
    assert json.loads(parsed.calls[0].arguments) == {
        "steps": ["a, {b}", 'say "hi"'],
        "limits": {"depth": 2, "ratio": 0.5, "strict": False},
        "note": None,
        "ok": True,
    }


def test_lfm2_reads_json_words_among_python_literals() -> None:
    """LFM2.5's template writes maps with tojson, so true/null sit among Python values."""
    text = '<|tool_call_start|>[f(opts={"deep": true, "tag": null}, on=True)]<|tool_call_end|>'
    parsed = parse_output(text, F.LFM2)
    assert json.loads(parsed.calls[0].arguments) == {"opts": {"deep": True, "tag": None},
                                                     "on": True}  # fmt: skip


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        (F.QWEN3_CODER, "<tool_call>\n<function=>\n</function>\n</tool_call>"),
        (F.GLM, "<tool_call>\n</tool_call>"),
        (F.KIMI, "<|tool_calls_section_begin|><|tool_call_begin|>functions.x:0"
                 "<|tool_call_argument_begin|>{oops<|tool_call_end|>"),
        (F.LFM2, "<|tool_call_start|>[__import__('os').system('x')]<|tool_call_end|>"),
        (F.LFM2, "<|tool_call_start|>[f(x=open('y'))]<|tool_call_end|>"),
        (F.HARMONY, "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{bad"),
        (F.NEMOTRON, "<TOOLCALL>[{\"arguments\": {}}]</TOOLCALL>"),
        (F.DEEPSEEK, ds_token("tool_calls_begin") + "nothing here"),
        (F.GEMMA4, '<|tool_call>call:f{x:<|"|>unclosed}<tool_call|>'),
        (F.GEMMA4, "<|tool_call>call:f{x:1 y:2}<tool_call|>"),
        (F.GEMMA4, "<|tool_call>call:f{x:1} and more"),
        (F.GEMMA4, "<|tool_call>f{x:1}<tool_call|>"),
    ],
)  # fmt: skip
def test_malformed_calls_stay_text(fmt: ToolFormat, text: str) -> None:
    parsed = parse_output(text, fmt)
    assert parsed.calls == [] and parsed.content == text


def test_plain_text_streams_straight_through() -> None:
    for fmt in ToolFormat:
        if fmt is F.LLAMA3:
            continue
        streamed, parsed = stream(fmt, ["The answer", " is 42 < 43", " [done]"])
        assert streamed + parsed.content == "The answer is 42 < 43 [done]", fmt
        assert parsed.calls == []


# Template file (from llama.cpp's corpus) -> the format its model writes.
EXPECTED_FORMATS = {
    "Qwen-Qwen2.5-7B-Instruct.jinja": F.HERMES,
    "Qwen-Qwen3-0.6B.jinja": F.HERMES,
    "Qwen3-Coder.jinja": F.QWEN3_CODER,
    "Qwen3.5-4B.jinja": F.QWEN3_CODER,
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": F.QWEN3_CODER,
    "NVIDIA-Nemotron-Nano-v2.jinja": F.NEMOTRON,
    "ByteDance-Seed-OSS.jinja": F.SEED_OSS,
    "GLM-4.6.jinja": F.GLM,
    "MiniMax-M2.jinja": F.MINIMAX,
    "deepseek-ai-DeepSeek-V3.1.jinja": F.DEEPSEEK,
    "deepseek-ai-DeepSeek-V3.2.jinja": F.DEEPSEEK_DSML,
    "Kimi-K2-Instruct.jinja": F.KIMI,
    "openai-gpt-oss-120b.jinja": F.HARMONY,
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": F.COMMAND_R,
    "Apriel-1.6-15b-Thinker-fixed.jinja": F.APRIEL,
    "MiniMax-M1.jinja": F.APRIEL,
    "ibm-granite-granite-3.3-2B-Instruct.jinja": F.PHI4,
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": F.MISTRAL,
    "meta-llama-Llama-3.1-8B-Instruct.jinja": F.LLAMA3,
    "google-gemma-4-31B-it.jinja": F.GEMMA4,
    "google-gemma-4-31B-it-interleaved.jinja": F.GEMMA4,
    "LFM2.5-8B-A1B.jinja": F.LFM2,
    "google-gemma-2-2b-it.jinja": F.HERMES,  # no tools in its template: the fallback
}


def test_detect_format_on_real_templates(llama_cpp_templates: Path) -> None:
    for name, expected in EXPECTED_FORMATS.items():
        path = llama_cpp_templates / name
        if path.is_file():
            assert detect_format(path.read_text(encoding="utf-8")) is expected, name


def test_detect_format_from_vocab_when_the_template_is_silent() -> None:
    assert detect_format("{{ messages }}", {"<|tool_call_start|>", "<|im_end|>"}) is F.LFM2
    assert detect_format("{{ messages }}", {"[TOOL_CALLS]"}) is F.MISTRAL
    assert detect_format("{{ messages }}", set()) is F.HERMES


@pytest.fixture(scope="module")
def vocab(tiny_model_f16: Path):  # type: ignore[no-untyped-def]
    llm = llama_cpp.Llama(model_path=str(tiny_model_f16), vocab_only=True, verbose=False)
    yield llama_cpp.llama_model_get_vocab(llm.model)
    llm.close()


@pytest.mark.parametrize("fmt", list(ToolFormat), ids=[f.value for f in ToolFormat])
def test_call_grammar_parses_in_llama_cpp(vocab, fmt: ToolFormat) -> None:  # type: ignore[no-untyped-def]
    other = ToolSpec(
        "get_time", "Time", {"type": "object", "properties": {"tz": {"type": "string"}}}
    )
    for grammar in (call_grammar([WEATHER], fmt), call_grammar([WEATHER, other], fmt),
                    call_grammar([WEATHER, other], fmt, only="get_time")):  # fmt: skip
        check_grammar(vocab, grammar)
        assert "get_weather" in grammar or "get_time" in grammar
