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
from hearth.core.generation import ChatMessage, ToolSpec
from hearth.engine.tool_calls import flatten_for_plain_template

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

    @property
    def supports_tools(self) -> bool:
        """Whether the template itself renders a ``tools`` list and tool turns."""
        return "tools" in self.source and not self.is_fallback

    def render(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        add_generation_prompt: bool = True,
    ) -> str:
        has_tool_turns = any(m.tool_calls or m.role == "tool" for m in messages)
        if (tools or has_tool_turns) and not self.supports_tools:
            messages = flatten_for_plain_template(messages, tools)
            tools = ()
        extra: dict[str, Any] = {}
        if tools:
            extra["tools"] = [
                {"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in tools
            ]  # fmt: skip
        try:
            return self._template.render(
                messages=[_message_payload(m) for m in messages],
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
                **extra,
            )
        except InvalidRequestError:
            raise
        except TemplateError as exc:
            raise InvalidRequestError(f"The model's chat template failed: {exc}") from exc


def _message_payload(message: ChatMessage) -> dict[str, Any]:
    payload: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        payload["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": _json_or_text(c.arguments)}}
            for c in message.tool_calls
        ]  # fmt: skip
    if message.tool_call_id:
        payload["tool_call_id"] = message.tool_call_id
    return payload


def _json_or_text(text: str) -> Any:
    """Templates index into arguments as a mapping (HF convention), so decode them."""
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _tojson(value: Any, indent: int | None = None) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, indent=indent)
