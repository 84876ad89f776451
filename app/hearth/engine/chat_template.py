"""Rendering chat messages into a prompt with the model's own Jinja template.

GGUF files carry the template their authors trained with (``tokenizer.chat_template``).
Authors test those templates with transformers' ``apply_chat_template``, so Hearth renders
them the same way, byte for byte (see template_env for the dialect). Templates are
untrusted input: they run in Jinja's sandbox under a time budget, and every failure,
whether it does not compile, raises, or runs away, is a clear request error naming the
template, never a hang or a server error. Models without a template get ChatML, the most
common format among instruction-tuned GGUFs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from jinja2 import Template, TemplateError, TemplateSyntaxError

from hearth.core.chat_formats import ToolFormat, detect_tool_format
from hearth.core.errors import HearthError, InvalidRequestError
from hearth.core.generation import ChatMessage, ToolSpec
from hearth.engine.template_env import (
    TemplateRaisedError,
    TemplateTimeoutError,
    check_budget,
    make_environment,
    time_budget,
)
from hearth.engine.tool_calls import flatten_for_plain_template

log = logging.getLogger(__name__)

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Names the renderer itself sets; a client's template kwargs may not replace them.
RESERVED_NAMES = frozenset({"messages", "tools", "documents", "add_generation_prompt"})
RENDER_BUDGET_S = 10.0
MAX_PROMPT_CHARS = 64 * 1024 * 1024

# Templates that close the model's turn after a reply with text and tool calls, and then
# add no generation prompt (the model would start a turn of its own, or none): when such
# a render ends with the first text, the second opens the model's turn, as llama.cpp does.
REOPEN_TURN: dict[ToolFormat, tuple[str, str]] = {
    ToolFormat.GEMMA4: ("<turn|>\n", "<|turn>model\n"),
}

# A message as the template sees it: a ChatMessage, or a mapping in the OpenAI/HF shape
# (for content given as parts, or fields such as ``reasoning_content`` or ``name``).
MessageInput = ChatMessage | Mapping[str, Any]


class ChatTemplate:
    """A compiled chat template plus the special-token strings it refers to.

    A template that does not compile does not stop the model from loading (raw
    completions still work); every chat render then reports why.
    """

    def __init__(
        self,
        source: str | None,
        *,
        bos_token: str,
        eos_token: str,
        name: str = "",
        variants: Mapping[str, str] | None = None,
        fallback: str | None = None,
    ) -> None:
        self.source = source or fallback or CHATML_TEMPLATE
        self.is_fallback = source is None
        self.bos_token = bos_token
        self.eos_token = eos_token
        self._label = f"The chat template of {name}" if name else "The model's chat template"
        self._template: Template | None = None
        self._compile_error: str | None = None
        family = None if self.is_fallback else detect_tool_format(source)
        self._reopen = REOPEN_TURN.get(family) if family else None
        self._harmony = family is ToolFormat.HARMONY
        try:
            self._template = make_environment().from_string(self.source)
        except TemplateSyntaxError as exc:
            self._compile_error = f"{self._label} does not compile (line {exc.lineno}): {exc}"
        except (TemplateError, RecursionError, ValueError) as exc:
            self._compile_error = f"{self._label} does not compile: {exc}"
        if self._compile_error is not None:
            log.warning("%s", self._compile_error)
        # Named alternatives (GGUF ``tokenizer.chat_template.<name>``); like transformers,
        # a request with tools uses the "tool_use" one when the model ships it.
        self._variants = {
            key: ChatTemplate(text, bos_token=bos_token, eos_token=eos_token,
                              name=f"{name or 'the model'} ({key})")
            for key, text in (variants or {}).items()
        }  # fmt: skip

    @classmethod
    def from_metadata(
        cls,
        metadata: Mapping[str, str],
        *,
        bos_token: str,
        eos_token: str,
        name: str = "",
        fallback: str | None = None,
    ) -> ChatTemplate:
        """The template a GGUF carries, with any named variants beside it; ``fallback``
        (else ChatML) when it carries none."""
        prefix = "tokenizer.chat_template."
        variants = {k.removeprefix(prefix): v for k, v in metadata.items() if k.startswith(prefix)}
        return cls(metadata.get("tokenizer.chat_template"), bos_token=bos_token,
                   eos_token=eos_token, name=name, variants=variants,
                   fallback=fallback)  # fmt: skip

    @property
    def compile_error(self) -> str | None:
        """Why the template does not compile, or None when it does."""
        return self._compile_error

    @property
    def supports_tools(self) -> bool:
        """Whether the template itself renders a ``tools`` list and tool turns."""
        return "tools" in self.source and not self.is_fallback

    def render(
        self,
        messages: Sequence[MessageInput],
        *,
        tools: Sequence[ToolSpec] = (),
        add_generation_prompt: bool = True,
        documents: Sequence[Mapping[str, Any]] | None = None,
        extra_context: Mapping[str, object] | None = None,
    ) -> str:
        """The prompt text, as transformers' ``apply_chat_template`` would render it.

        ``extra_context`` carries a client's ``chat_template_kwargs`` (``enable_thinking``,
        ``reasoning_effort`` ...); like in transformers, it may override the special tokens.
        """
        tool_use = self._variants.get("tool_use")
        if tools and tool_use is not None:
            return tool_use.render(
                messages, tools=tools, add_generation_prompt=add_generation_prompt,
                documents=documents, extra_context=extra_context,
            )  # fmt: skip
        template = self._template
        if template is None:
            raise InvalidRequestError(self._compile_error or f"{self._label} is unusable")
        extra = dict(extra_context or {})
        clash = sorted(RESERVED_NAMES.intersection(extra))
        if clash:
            raise InvalidRequestError(
                f"chat_template_kwargs may not set {', '.join(clash)}",
                param="chat_template_kwargs",
            )
        has_tool_turns = any(_is_tool_turn(m) for m in messages)
        if (tools or has_tool_turns) and not self.supports_tools:
            if all(isinstance(m, ChatMessage) for m in messages):
                plain = [m for m in messages if isinstance(m, ChatMessage)]
                messages = flatten_for_plain_template(plain, tools)
            tools = ()
        context: dict[str, Any] = {
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            **extra,
            "messages": [_message_payload(m, harmony=self._harmony) for m in messages],
            "add_generation_prompt": add_generation_prompt,
        }
        # Absent, not None, when the request has none, as llama.cpp renders: templates
        # written for it (Phi-4-mini's, Hermes' tool_use) loop over ``tools`` unguarded,
        # and where transformers' None renders, undefined renders the same text.
        if tools:
            context["tools"] = [_tool_payload(t) for t in tools]
        if documents is not None:
            context["documents"] = [dict(d) for d in documents]
        text = self._run(template, context)
        if add_generation_prompt and self._reopen and text.endswith(self._reopen[0]):
            text += self._reopen[1]
        return text

    def render_branch(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        extra_context: Mapping[str, object] | None = None,
    ) -> str:
        """The prompt ``messages`` would make with another last message: where the two
        prompts part is where the chat's last message starts, even for templates that
        fold the system text into the first user turn (Gemma's). A sliding-window model's
        prompt cache saves a checkpoint there (``Job.branch_at``). "" when there is no
        chat, or the template refuses it (the real render reports why)."""
        if not messages:
            return ""
        last = messages[-1]
        other = replace(last, content="B" if last.content.startswith("A") else "A")
        try:
            return self.render([*messages[:-1], other], tools=tools, extra_context=extra_context)
        except HearthError:
            return ""

    def _run(self, template: Template, context: dict[str, Any]) -> str:
        pieces: list[str] = []
        size = 0
        try:
            with time_budget(RENDER_BUDGET_S):
                for piece in template.generate(context):
                    pieces.append(piece)
                    size += len(piece)
                    if size > MAX_PROMPT_CHARS:
                        raise TemplateTimeoutError("the chat template produced an oversized prompt")
                    check_budget()
        except InvalidRequestError:
            raise
        except TemplateRaisedError as exc:
            raise InvalidRequestError(f"{self._label} rejected the conversation: {exc}") from exc
        except TemplateError as exc:  # includes TemplateTimeoutError
            raise InvalidRequestError(f"{self._label} failed: {exc}") from exc
        except Exception as exc:  # an untrusted template's TypeError etc. is the request's 400
            raise InvalidRequestError(
                f"{self._label} failed while rendering: {type(exc).__name__}: {exc}"
            ) from exc
        return "".join(pieces)


def _is_tool_turn(message: MessageInput) -> bool:
    if isinstance(message, ChatMessage):
        return bool(message.tool_calls) or message.role == "tool"
    return bool(message.get("tool_calls")) or message.get("role") == "tool"


def _tool_payload(tool: ToolSpec) -> dict[str, Any]:
    function = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return {"type": "function", "function": function}


def _message_payload(message: MessageInput, *, harmony: bool = False) -> dict[str, Any]:
    if not isinstance(message, ChatMessage):
        return _mapping_payload(message)
    payload: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        payload["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": _json_or_text(c.arguments)}}
            for c in message.tool_calls
        ]  # fmt: skip
    if message.tool_call_id:
        payload["tool_call_id"] = message.tool_call_id
    if message.reasoning:  # the fields templates that keep (or strip) past thinking read:
        payload["reasoning_content"] = message.reasoning  # most of them
        payload["thinking"] = message.reasoning  # gpt-oss, LFM2.5 (llama.cpp copies it too)
        if harmony and message.tool_calls:  # its analysis; content besides it is refused
            del payload["content"]
    return payload


def _mapping_payload(message: Mapping[str, Any]) -> dict[str, Any]:
    """A caller's message mapping, checked where templates rely on its shape. A key
    given as None (``tool_calls: null``) is left out, as transformers' callers and
    llama.cpp leave it: ``{% for c in message.tool_calls %}`` loops over nothing then,
    where None would fail. ``content`` stays, None included (templates test it)."""
    payload = {k: v for k, v in message.items() if v is not None or k == "content"}
    if not isinstance(payload.get("role"), str):
        raise InvalidRequestError("Every message needs a role.", param="messages")
    content = payload.get("content")
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
                raise InvalidRequestError(
                    "Message content parts must be objects with a type.", param="messages"
                )
        payload["content"] = [dict(part) for part in content]
    elif content is not None and not isinstance(content, str):
        raise InvalidRequestError(
            "Message content must be text or a list of parts.", param="messages"
        )
    return payload


def _json_or_text(text: str) -> Any:
    """Templates index into arguments as a mapping (HF convention), so decode them."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
