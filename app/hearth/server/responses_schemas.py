"""OpenAI Responses request bodies, and their translation into typed values.

Agents such as Codex CLI send the whole conversation as ``input`` items each turn:
messages, the model's function calls, and their outputs. Others send only the new items
and a ``previous_response_id``; the route then puts the stored conversation first
(``history``), so both become the same list of items and the same chat messages.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage, ToolCall, ToolSpec
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.core.sampling import SamplingParams
from hearth.server import image_input
from hearth.server.openai_schemas import MAX_MESSAGES
from hearth.server.pipeline import OutputFormat, ToolChoice

log = logging.getLogger(__name__)


class _Lenient(BaseModel):
    """Unknown fields (store, metadata, reasoning, include...) are ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ContentIn(_Lenient):
    type: str
    text: str | None = None
    image_url: str | None = None  # input_image: a data URL
    file_id: str | None = None


class InputItem(_Lenient):
    """A message, a function call the model made, or that call's output."""

    type: str = "message"
    role: Literal["user", "assistant", "system", "developer"] | None = None
    content: str | list[ContentIn] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    output: str | list[ContentIn] | None = None


class ToolIn(_Lenient):
    type: str
    name: str | None = Field(default=None, min_length=1, max_length=64)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class TextFormatIn(_Lenient):
    type: Literal["text", "json_object", "json_schema"]
    name: str | None = None
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")


class TextIn(_Lenient):
    format: TextFormatIn | None = None


class ReasoningIn(_Lenient):
    effort: Literal["minimal", "low", "medium", "high"] | None = None


class ResponsesRequest(_Lenient):
    model: str | None = None
    # The item count is bounded; a string is bounded by the body limit only.
    input: str | Annotated[list[InputItem], Field(max_length=MAX_MESSAGES)]
    instructions: str | None = None
    tools: list[ToolIn] | None = Field(default=None, max_length=128)
    tool_choice: str | dict[str, Any] | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    text: TextIn | None = None
    stream: bool = False
    previous_response_id: str | None = None
    store: bool = True
    reasoning: ReasoningIn | None = None

    def template_kwargs(self) -> dict[str, Any]:
        """``reasoning.effort`` as the chat template's ``reasoning_effort`` (gpt-oss)."""
        effort = self.reasoning.effort if self.reasoning else None
        return {"reasoning_effort": effort} if effort else {}

    def input_items(self) -> list[InputItem]:
        """The new input as items (a string is one user message)."""
        if isinstance(self.input, str):
            return [InputItem(role="user", content=self.input)]
        return list(self.input)

    def chat_messages(self, history: Sequence[InputItem] = ()) -> list[ChatMessage]:
        """Instructions (never carried over from a stored response, as OpenAI does),
        then the stored conversation, then the new input."""
        out = [ChatMessage("system", self.instructions)] if self.instructions else []
        calls: set[str] = set()
        for index, item in enumerate(history):
            _add_item(out, item, f"previous_response_id.{index}", calls)
        for index, item in enumerate(self.input_items()):
            _add_item(out, item, f"input.{index}", calls)
        if not history and not self.input_items():
            raise InvalidRequestError("input must not be empty.", param="input")
        image_input.check_request(image for message in out for image in message.images)
        return out

    def tool_specs(self) -> list[ToolSpec]:
        """The function tools. Hosted tools (web search, file search ...) and namespaces
        of a client's own tools are left out: a local model has no such tools to call,
        and Codex CLI offers some on every request (``web_search``, ``namespace``)."""
        specs, left_out = [], set()
        for index, tool in enumerate(self.tools or ()):
            if tool.type != "function":
                left_out.add(tool.type)
                continue
            if not tool.name:
                raise InvalidRequestError("A function tool needs a 'name'.", param=f"tools.{index}")
            specs.append(ToolSpec(tool.name, tool.description or "", tool.parameters or {}))
        if left_out:
            log.info("tools of types %s left out: only function tools run here", sorted(left_out))
        return specs

    def choice(self) -> ToolChoice:
        choice, name = self.tool_choice, None
        if isinstance(choice, dict) and choice.get("type") == "function":
            name = choice.get("name")
        return ToolChoice.parse(choice, name)

    def output_format(self) -> OutputFormat:
        fmt = self.text.format if self.text else None
        if fmt is None or fmt.type == "text":
            return OutputFormat()
        if fmt.type == "json_object":
            return OutputFormat("json")
        if fmt.json_schema is None:
            raise InvalidRequestError(
                "text.format json_schema needs a 'schema'.", param="text.format.schema"
            )
        return OutputFormat("json_schema", fmt.json_schema)

    def to_sampling(self) -> SamplingParams:
        return SamplingParams.from_request(
            temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_output_tokens
        )


def _text(content: str | list[ContentIn] | None, where: str) -> str:
    text, images = _content(content, where)
    if images:
        raise InvalidRequestError("Images are not accepted here.", param=where)
    return text


def _content(
    content: str | list[ContentIn] | None, where: str
) -> tuple[str, tuple[ImageInput, ...]]:
    """A message's text, with a marker where each ``input_image`` stands, and its images."""
    if content is None or isinstance(content, str):
        return content or "", ()
    parts: list[str] = []
    images: list[ImageInput] = []
    for index, part in enumerate(content):
        if part.type in ("input_text", "output_text", "text"):
            parts.append(part.text or "")
        elif part.type == "input_image":
            images.append(_image(part, f"{where}.content.{index}"))
            parts.append(IMAGE_MARKER)
        else:
            raise InvalidRequestError(
                f"This model reads text and images: {part.type} content is not supported.",
                param=where,
            )
    return "".join(parts), tuple(images)


def _image(part: ContentIn, where: str) -> ImageInput:
    if part.image_url:
        return image_input.from_url(part.image_url, where)
    if part.file_id:
        raise InvalidRequestError(
            "Uploaded files (file_id) are not kept here: send the image as a data URL in "
            "image_url.",
            param=where,
        )
    raise InvalidRequestError("An input_image needs an image_url.", param=where)


def _add_item(out: list[ChatMessage], item: InputItem, where: str, calls: set[str]) -> None:
    """Append ``item`` to the chat; ``calls`` gathers the call ids an output may answer."""
    last = out[-1] if out else None
    thinking = last is not None and last.role == "assistant" and not last.content
    if item.type == "message":
        role = "system" if item.role == "developer" else item.role or "user"
        text, images = _content(item.content, where)
        if role == "assistant" and thinking and last is not None and not last.tool_calls:
            out[-1] = replace(last, content=text, images=images)  # the reasoning's own turn
        else:
            out.append(ChatMessage(role, text, images=images))
    elif item.type == "function_call":
        call = ToolCall(item.call_id or f"call_{len(out)}", item.name or "", item.arguments or "{}")
        calls.add(call.id)
        if last is not None and last.role == "assistant":  # parallel calls: one turn
            out[-1] = replace(last, tool_calls=(*last.tool_calls, call))
        else:
            out.append(ChatMessage("assistant", "", (call,)))
    elif item.type == "function_call_output":
        if item.call_id not in calls:
            raise InvalidRequestError(
                f"No function call found for the function_call_output with call_id "
                f"{item.call_id!r}.",
                param=where,
            )
        out.append(ChatMessage("tool", _text(item.output, where), tool_call_id=item.call_id))
    elif item.type == "reasoning":  # opens the assistant turn its message or calls join
        text = "".join(p.text or "" for p in item.content or () if not isinstance(p, str))
        out.append(ChatMessage("assistant", "", reasoning=text))
    else:
        raise InvalidRequestError(f"Unsupported input item type {item.type!r}.", param=where)
