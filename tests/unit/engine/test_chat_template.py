import pytest

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage
from hearth.engine.chat_template import ChatTemplate


def test_fallback_is_chatml():
    template = ChatTemplate(None, bos_token="<s>", eos_token="</s>")
    text = template.render([ChatMessage("user", "hi")])
    assert template.is_fallback
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_model_template_gets_bos_and_generation_prompt():
    source = (
        "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    template = ChatTemplate(source, bos_token="<s>", eos_token="</s>")
    text = template.render([ChatMessage("system", "be brief"), ChatMessage("user", "hi")])
    assert text == "<s>[system]be brief[user]hi[assistant]"


def test_raise_exception_in_template_is_a_clear_request_error():
    source = "{{ raise_exception('Conversation roles must alternate') }}"
    template = ChatTemplate(source, bos_token="", eos_token="")
    with pytest.raises(InvalidRequestError, match="roles must alternate"):
        template.render([ChatMessage("user", "x")])


def test_broken_template_is_reported_at_render_not_at_load():
    template = ChatTemplate("{% for %}", bos_token="", eos_token="", name="tiny.gguf")
    assert template.compile_error is not None and "line 1" in template.compile_error
    with pytest.raises(InvalidRequestError, match=r"chat template of tiny\.gguf does not compile"):
        template.render([ChatMessage("user", "x")])


def test_template_runs_sandboxed():
    source = "{{ messages.__class__.__mro__ }}"
    template = ChatTemplate(source, bos_token="", eos_token="")
    with pytest.raises(InvalidRequestError):
        template.render([ChatMessage("user", "x")])


def render(source: str, messages: list[ChatMessage] | None = None, **kwargs: object) -> str:
    template = ChatTemplate(source, bos_token="<s>", eos_token="</s>")
    return template.render(messages or [ChatMessage("user", "hi")], **kwargs)  # type: ignore[arg-type]


def test_loop_controls_compile_and_work():
    source = (
        "{% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}"
        "{{ m.content }}{% endfor %}"
    )
    assert render(source, [ChatMessage("user", "a"), ChatMessage("user", "b")]) == "a"


def test_generation_block_renders_its_body():
    source = (
        "{% for m in messages %}{% generation %}[{{ m.content }}]{% endgeneration %}{% endfor %}"
    )
    assert render(source) == "[hi]"


def test_tojson_takes_transformers_options():
    source = (
        "{{ {'b': 'Zürich', 'a': [1, 2]} | tojson }}|"
        "{{ {'b': 'é'} | tojson(ensure_ascii=True) }}|"
        "{{ {'b': 1, 'a': 2} | tojson(sort_keys=true, separators=(',', ':')) }}|"
        "{{ {'a': 1} | tojson(indent=2) }}|{{ '<&>' | tojson }}"
    )
    assert render(source) == (
        '{"b": "Zürich", "a": [1, 2]}|{"b": "\\u00e9"}|{"a":2,"b":1}|{\n  "a": 1\n}|"<&>"'
    )


def test_trim_and_lstrip_blocks_like_transformers():
    source = "A\n    {% if true %}\nB\n    {% endif %}\nC"
    assert render(source) == "A\nB\nC"


def test_tools_and_documents_are_undefined_when_absent():
    """As llama.cpp renders; a template that loops over them unguarded loops over nothing."""
    source = "{{ tools is defined }} {{ documents is defined }}{% for t in tools %}x{% endfor %}"
    assert render(source) == "False False"


def test_a_template_that_loops_over_tools_and_calls_unguarded_renders_a_plain_chat():
    """Failed before with "TypeError: 'NoneType' object is not iterable" (tools=None)."""
    from hearth.core.generation import ToolCall, ToolSpec
    from llama_cpp_templates import PHI4_MINI_LIKE

    template = ChatTemplate(PHI4_MINI_LIKE, bos_token="", eos_token="")
    assert template.render([ChatMessage("user", "hi")]) == "<|user|>hi<|end|><|assistant|>"
    with_system = [ChatMessage("system", "Be brief."), ChatMessage("user", "hi")]
    assert template.render(with_system) == (
        "<|system|>Be brief.<|end|><|user|>hi<|end|><|assistant|>"
    )
    call = ToolCall("c1", "f", '{"a": 1}')
    text = template.render([ChatMessage("user", "hi"), ChatMessage("assistant", "", (call,))],
                           tools=[ToolSpec("f")])  # fmt: skip
    assert text.startswith('<|system|><|tool|>{"name": "f"')
    assert '<|tool_call|>{"name": "f", "arguments": {"a": 1}}<|/tool_call|>' in text
    # A caller's mapping with tool_calls: null (as some clients send) is the same turn.
    plain = {"role": "assistant", "content": "yo", "tool_calls": None}
    assert template.render([ChatMessage("user", "hi"), plain]) == (
        "<|user|>hi<|end|><|assistant|>yo<|end|><|assistant|>"
    )


def test_documents_reach_the_template():
    source = "{% for d in documents %}{{ d.title }}:{{ d.text }}{% endfor %}"
    assert render(source, documents=[{"title": "T", "text": "body"}]) == "T:body"


def test_strftime_now_is_today():
    import datetime

    assert render("{{ strftime_now('%Y') }}") == str(datetime.datetime.now().year)


def test_content_as_parts():
    source = (
        "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}"
        "{% for p in m.content %}<{{ p.type }}:{{ p.text }}>{% endfor %}{% endif %}{% endfor %}"
    )
    template = ChatTemplate(source, bos_token="", eos_token="")
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    assert template.render([ChatMessage("system", "s"), parts]) == "s<text:a><text:b>"
    with pytest.raises(InvalidRequestError, match="parts"):
        template.render([{"role": "user", "content": ["bare string part"]}])


def test_extra_context_passes_chat_template_kwargs():
    source = (
        "{% if enable_thinking is defined and not enable_thinking %}/no_think {% endif %}"
        "{{ bos_token }}"
    )
    assert render(source) == "<s>"
    assert render(source, extra_context={"enable_thinking": False}) == "/no_think <s>"
    assert render(source, extra_context={"bos_token": "[B]"}) == "[B]"
    with pytest.raises(InvalidRequestError, match="may not set messages") as info:
        render(source, extra_context={"messages": []})
    assert info.value.param == "chat_template_kwargs"


def test_python_errors_inside_a_template_are_request_errors():
    with pytest.raises(InvalidRequestError, match="TypeError"):
        render("{{ messages[0].content + 1 }}")
    with pytest.raises(InvalidRequestError, match="failed"):
        render("{{ messages[0].nothing.deeper }}")


def test_runaway_template_is_stopped_not_hung(monkeypatch: pytest.MonkeyPatch):
    import time

    from hearth.engine import chat_template

    monkeypatch.setattr(chat_template, "RENDER_BUDGET_S", 0.2)
    started = time.monotonic()
    with pytest.raises(InvalidRequestError, match="ran too long"):
        render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
    assert time.monotonic() - started < 5


def test_range_still_behaves_like_range():
    source = "{{ range(3) | list }}{{ range(5) | length }}{{ range(3) | reverse | list }}"
    assert render(source) == "[0, 1, 2]5[2, 1, 0]"
    with pytest.raises(InvalidRequestError, match="Range too big"):
        render("{{ range(10**6) | length }}")


def test_tool_use_variant_is_used_when_tools_are_given():
    from hearth.core.generation import ToolSpec

    metadata = {
        "tokenizer.chat_template": "{% for m in messages %}plain:{{ m.content }}{% endfor %}",
        "tokenizer.chat_template.tool_use": (
            "{% for t in tools %}[{{ t.function.name }}]{% endfor %}"
            "{% for m in messages %}tools:{{ m.content }}{% endfor %}"
        ),
        "tokenizer.ggml.model": "llama",
    }
    template = ChatTemplate.from_metadata(metadata, bos_token="", eos_token="", name="m.gguf")
    hi = [ChatMessage("user", "hi")]
    assert template.render(hi) == "plain:hi"
    assert template.render(hi, tools=[ToolSpec("f")]) == "[f]tools:hi"
    broken = ChatTemplate("x", bos_token="", eos_token="", variants={"tool_use": "{% if %}"})
    assert broken.render(hi) == "x"
    with pytest.raises(InvalidRequestError, match=r"m\.gguf|tool_use"):
        broken.render(hi, tools=[ToolSpec("f")])


# Folds the system text into the first user turn, as Gemma's template does.
FOLDS_SYSTEM = (
    "{% set sys = messages[0]['content'] + '|' if messages[0]['role'] == 'system' else '' %}"
    "{% for m in messages if m['role'] != 'system' %}"
    "<{{ m['role'] }}>{{ sys if loop.first else '' }}{{ m['content'] }}</>"
    "{% endfor %}<model>"
)


@pytest.mark.parametrize("last", ["Another question", "Question"])
def test_branch_render_parts_where_the_last_message_starts(last: str):
    template = ChatTemplate(FOLDS_SYSTEM, bos_token="", eos_token="")
    earlier = [ChatMessage("user", "Hi"), ChatMessage("assistant", "Hello")]
    for chat in (
        [ChatMessage("system", "Be brief"), *earlier, ChatMessage("user", last)],
        [ChatMessage("system", "Be brief"), ChatMessage("user", last)],  # one folded turn
    ):
        prompt = template.render(chat)
        branch = template.render_branch(chat)
        parted = next(i for i, (a, b) in enumerate(zip(prompt, branch, strict=False)) if a != b)
        assert parted == prompt.rindex(last)


def test_branch_render_is_empty_without_a_chat_or_when_the_template_refuses():
    assert ChatTemplate(FOLDS_SYSTEM, bos_token="", eos_token="").render_branch([]) == ""
    refuses = ChatTemplate("{{ raise_exception('no') }}", bos_token="", eos_token="")
    assert refuses.render_branch([ChatMessage("user", "x")]) == ""


def test_model_with_a_broken_template_loads_and_chat_is_a_clear_400(tmp_path):
    import gguf_factory
    from hearth.core.model_info import LoadConfig
    from hearth.engine.engine import Engine

    model = gguf_factory.write_tiny_llama(tmp_path / "broken.gguf", chat_template="{% for %}")
    engine = Engine()
    engine.load(LoadConfig(model_path=model, n_ctx=256, n_threads=2))
    try:
        with pytest.raises(InvalidRequestError, match=r"does not compile \(line 1\)"):
            engine.render_chat([ChatMessage("user", "hi")])
        assert engine.tokenize_prompt("plain completion still works")
    finally:
        engine.unload()


def test_gemma4_reopens_the_model_turn_after_text_with_calls(llama_cpp_templates) -> None:  # type: ignore[no-untyped-def]
    """Gemma 4's template closes a turn that had text besides its calls and then opens
    none: the model's turn is opened for it (as llama.cpp does); a turn of calls alone
    stays open for the model to continue, as the template leaves it."""
    from hearth.core.generation import ToolCall, ToolSpec

    source = (llama_cpp_templates / "google-gemma-4-31B-it.jinja").read_text(encoding="utf-8")
    template = ChatTemplate(source, bos_token="<bos>", eos_token="<eos>")
    tool = ToolSpec("get_weather", "", {"type": "object", "properties": {"city": {}}})

    def render(content: str, *, prompt: bool = True) -> str:
        call = ToolCall("c1", "get_weather", '{"city": "Paris"}')
        messages = [ChatMessage("user", "Weather?"), ChatMessage("assistant", content, (call,)),
                    ChatMessage("tool", "sunny", tool_call_id="c1")]  # fmt: skip
        return template.render(messages, tools=[tool], add_generation_prompt=prompt)

    assert render("Let me check.").endswith("Let me check.<turn|>\n<|turn>model\n")
    assert render("").endswith("<tool_response|>")
    assert render("Let me check.", prompt=False).endswith("<turn|>\n")


def test_gpt_oss_gets_its_analysis_back_before_a_call(llama_cpp_templates) -> None:  # type: ignore[no-untyped-def]
    """gpt-oss's template reads past reasoning from ``thinking`` (reasoning_content was
    lost), and refuses content beside it in a turn with calls: llama.cpp drops the
    content there, and so does Hearth."""
    from hearth.core.generation import ToolCall, ToolSpec

    source = (llama_cpp_templates / "openai-gpt-oss-120b.jinja").read_text(encoding="utf-8")
    template = ChatTemplate(source, bos_token="", eos_token="")
    tool = ToolSpec("get_weather", "", {"type": "object", "properties": {"city": {}}})
    call = ToolCall("c1", "get_weather", '{"city": "Paris"}')
    for content in ("", "Let me check."):
        messages = [ChatMessage("user", "Weather?"),
                    ChatMessage("assistant", content, (call,), reasoning="Need the weather."),
                    ChatMessage("tool", "sunny", tool_call_id="c1")]  # fmt: skip
        text = template.render(messages, tools=[tool])
        assert (
            "<|start|>assistant<|channel|>analysis<|message|>Need the weather.<|end|>"
            "<|start|>assistant to=functions.get_weather"
        ) in text
