"""The fallback template of a GGUF without one, chosen by its vocabulary's turn tokens."""

from __future__ import annotations

import ctypes

import llama_cpp
import pytest

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage
from hearth.engine.chat_template import CHATML_TEMPLATE, ChatTemplate
from hearth.engine.fallback_templates import GEMMA_TEMPLATE, fallback_template

GEMMA_MARKERS = {"<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>"}
CONVERSATION = [
    ChatMessage("system", "Be brief."),
    ChatMessage("user", "Hi "),
    ChatMessage("assistant", "\nHello!"),
    ChatMessage("user", "Capital of France?"),
]


def test_the_vocabulary_picks_the_family() -> None:
    assert fallback_template(GEMMA_MARKERS) == GEMMA_TEMPLATE
    assert fallback_template({"<|im_start|>", "<|im_end|>", "<s>"}) is None
    assert fallback_template({"<start_of_turn>"}) is None  # both turn tokens, or no Gemma


def test_no_fallback_keeps_chatml() -> None:
    assert ChatTemplate(None, bos_token="<s>", eos_token="</s>").source == CHATML_TEMPLATE
    given = ChatTemplate("{{ messages[0]['content'] }}", bos_token="", eos_token="",
                         fallback=GEMMA_TEMPLATE)  # fmt: skip
    assert given.source != GEMMA_TEMPLATE and not given.is_fallback


def llama_cpp_gemma(messages: list[ChatMessage]) -> str:
    """llama.cpp's own built-in "gemma" format (``llama_chat_apply_template``)."""
    chat = (llama_cpp.llama_chat_message * len(messages))()
    for slot, message in zip(chat, messages, strict=True):
        slot.role, slot.content = message.role.encode(), message.content.encode()
    buffer = ctypes.create_string_buffer(4096)
    n = llama_cpp.llama_chat_apply_template(b"gemma", chat, len(messages), True, buffer, 4096)
    assert 0 < n < 4096
    return buffer.raw[:n].decode()


def test_gemma_fallback_renders_as_llama_cpp_and_transformers_do() -> None:
    template = ChatTemplate(None, bos_token="<bos>", eos_token="<eos>", fallback=GEMMA_TEMPLATE)
    text = template.render(CONVERSATION)
    assert template.is_fallback and not template.supports_tools
    assert text == (
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello!<end_of_turn>\n"
        "<start_of_turn>user\nCapital of France?<end_of_turn>\n<start_of_turn>model\n"
    )
    assert text == "<bos>" + llama_cpp_gemma(CONVERSATION)  # llama.cpp leaves BOS to tokenizing


def test_gemma_fallback_takes_content_parts_and_refuses_a_broken_order() -> None:
    template = ChatTemplate(None, bos_token="<bos>", eos_token="<eos>", fallback=GEMMA_TEMPLATE)
    parts = [{"type": "image"}, {"type": "text", "text": " What is this? "}]
    text = template.render([{"role": "user", "content": parts}])
    assert text == "<bos><start_of_turn>user\n<start_of_image>What is this?<end_of_turn>\n" + (
        "<start_of_turn>model\n"
    )
    with pytest.raises(InvalidRequestError, match="alternate"):
        template.render([ChatMessage("assistant", "first")])
