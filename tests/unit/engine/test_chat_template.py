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


def test_broken_template_is_reported_not_crashed():
    with pytest.raises(InvalidRequestError, match="does not compile"):
        ChatTemplate("{% for %}", bos_token="", eos_token="")


def test_template_runs_sandboxed():
    source = "{{ messages.__class__.__mro__ }}"
    template = ChatTemplate(source, bos_token="", eos_token="")
    with pytest.raises(InvalidRequestError):
        template.render([ChatMessage("user", "x")])
