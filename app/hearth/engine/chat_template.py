"""Rendering chat messages into a prompt with the model's own Jinja template.

GGUF files carry the template their authors trained with (``tokenizer.chat_template``).
Templates are untrusted input, so they run in Jinja's sandbox. Models without one get
ChatML, the most common format among instruction-tuned GGUFs.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _raise_exception(message: str) -> None:
    raise InvalidRequestError(f"The model's chat template rejected the conversation: {message}")


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)


class ChatTemplate:
    """A compiled chat template plus the special-token strings it refers to."""

    def __init__(self, source: str | None, *, bos_token: str, eos_token: str) -> None:
        self.source = source or CHATML_TEMPLATE
        self.is_fallback = source is None
        self.bos_token = bos_token
        self.eos_token = eos_token
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = _strftime_now
        env.filters["tojson"] = _tojson
        try:
            self._template = env.from_string(self.source)
        except TemplateError as exc:
            raise InvalidRequestError(f"The model's chat template does not compile: {exc}") from exc

    def render(self, messages: Sequence[ChatMessage], *, add_generation_prompt: bool = True) -> str:
        payload: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in messages]
        try:
            return self._template.render(
                messages=payload,
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except InvalidRequestError:
            raise
        except TemplateError as exc:
            raise InvalidRequestError(f"The model's chat template failed: {exc}") from exc


def _tojson(value: Any, indent: int | None = None) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, indent=indent)
