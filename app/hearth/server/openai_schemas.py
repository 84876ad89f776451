"""OpenAI request bodies, validated, and their translation into engine types."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage, ToolCall, ToolSpec
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.core.sampling import SamplingParams
from hearth.server import image_input

MAX_STOP_STRINGS = 8
MAX_MESSAGES = 4096
MAX_LOGIT_BIAS = 1024


class _Lenient(BaseModel):
    """Unknown fields are ignored: clients send many we do not use (user, metadata...)."""

    model_config = ConfigDict(extra="ignore")


class ImageUrlIn(_Lenient):
    url: str
    detail: str | None = None


class ContentPart(_Lenient):
    type: str
    text: str | None = None
    image_url: ImageUrlIn | str | None = None

    def image(self, where: str) -> ImageInput:
        url = self.image_url.url if isinstance(self.image_url, ImageUrlIn) else self.image_url
        if not url:
            raise InvalidRequestError(f"The image part at {where} has no url.", param=where)
        return image_input.from_url(url, where)


class FunctionCallIn(_Lenient):
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCallIn(_Lenient):
    id: str = ""
    type: str = "function"
    function: FunctionCallIn


class FunctionSpecIn(_Lenient):
    name: str = Field(min_length=1, max_length=64)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)


class ToolIn(_Lenient):
    type: Literal["function"] = "function"
    function: FunctionSpecIn


class Message(_Lenient):
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None  # an earlier turn's reasoning, sent back

    def text_and_images(self, where: str) -> tuple[str, tuple[ImageInput, ...]]:
        """The text, with an image marker where each image stands, and the images."""
        if self.content is None:
            return "", ()
        if isinstance(self.content, str):
            return self.content, ()
        texts: list[str] = []
        images: list[ImageInput] = []
        for index, part in enumerate(self.content):
            if part.type == "text":
                texts.append(part.text or "")
            elif part.type == "image_url":
                images.append(part.image(f"{where}.content.{index}"))
                texts.append(IMAGE_MARKER)
            else:
                raise InvalidRequestError(
                    f"This model reads text and images: {part.type} content is not "
                    "supported.",
                    param=f"{where}.content.{index}",
                )
        return "".join(texts), tuple(images)


class JsonSchemaSpec(_Lenient):
    name: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Lenient):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaSpec | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")  # llama-server's form

    def resolved_schema(self) -> dict[str, Any] | None:
        if self.json_schema is not None and self.json_schema.schema_ is not None:
            return self.json_schema.schema_
        return self.schema_


class StreamOptions(_Lenient):
    include_usage: bool = False


class SamplingFields(_Lenient):
    """Parameters shared by chat and text completions."""

    model: str | None = None
    # LM Studio's: seconds the model stays loaded once idle after this request.
    ttl: float | None = Field(default=None, ge=0.0)
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=5.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=0, le=10_000)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    repeat_penalty: float | None = Field(default=None, gt=0.0, le=10.0)
    repeat_last_n: int | None = Field(default=None, ge=0, le=4096)
    logit_bias: dict[str, float] | None = None
    n: int = Field(default=1, ge=1, le=1)
    response_format: ResponseFormat | None = None
    logprobs: bool | int | None = None  # chat: a flag; legacy completions: a count (0-5)
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    speculative: bool | None = None  # Hearth extension: false = no speculative decoding

    @field_validator("stop")
    @classmethod
    def _stops(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and len(value) > MAX_STOP_STRINGS:
            raise ValueError(f"at most {MAX_STOP_STRINGS} stop strings are allowed")
        return value

    @field_validator("logit_bias")
    @classmethod
    def _bias(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        if value is None:
            return None
        if len(value) > MAX_LOGIT_BIAS:
            raise ValueError(f"at most {MAX_LOGIT_BIAS} entries are allowed")
        for key, bias in value.items():
            if not key.lstrip("-").isdigit():
                raise ValueError(f"keys must be token ids, got {key!r}")
            if not -100.0 <= bias <= 100.0:
                raise ValueError("biases must be between -100 and 100")
        return value

    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)

    def logprob_count(self, chat: bool) -> int | None:
        """How many alternatives to report per token; None when logprobs are off."""
        if chat:
            return (self.top_logprobs or 0) if self.logprobs is True else None
        if self.logprobs is None or isinstance(self.logprobs, bool):
            return None
        return max(0, min(int(self.logprobs), 20))

    def to_sampling(
        self,
        *,
        default_max_tokens: int | None,
        grammar: str | None = None,
        logprobs: int | None = None,
    ) -> SamplingParams:
        stops = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return SamplingParams.from_request(
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            min_p=self.min_p,
            seed=self.seed,
            presence_penalty=self.presence_penalty,
            frequency_penalty=self.frequency_penalty,
            repeat_penalty=self.repeat_penalty,
            repeat_last_n=self.repeat_last_n,
            logit_bias={int(k): float(v) for k, v in (self.logit_bias or {}).items()},
            max_tokens=self.max_completion_tokens or self.max_tokens or default_max_tokens,
            stop=tuple(s for s in stops if s),
            grammar=grammar,
            logprobs=logprobs,
            speculative=self.speculative,
        )


class ChatCompletionRequest(SamplingFields):
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    tools: list[ToolIn] | None = Field(default=None, max_length=128)
    tool_choice: str | dict[str, Any] | None = None
    chat_template_kwargs: dict[str, Any] | None = Field(default=None, max_length=64)
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None

    def template_kwargs(self) -> dict[str, Any]:
        """Values for the chat template: ``chat_template_kwargs`` as llama-server and vLLM
        take them (``enable_thinking`` ...), and OpenAI's ``reasoning_effort``."""
        kwargs = dict(self.chat_template_kwargs or {})
        if self.reasoning_effort is not None:
            kwargs.setdefault("reasoning_effort", self.reasoning_effort)
        return kwargs

    def chat_messages(self) -> list[ChatMessage]:
        contents = [m.text_and_images(f"messages.{i}") for i, m in enumerate(self.messages)]
        image_input.check_request(image for _, images in contents for image in images)
        return [
            ChatMessage(
                role="system" if m.role == "developer" else m.role,
                content=text,
                images=images,
                tool_calls=tuple(
                    ToolCall(
                        c.id or f"call_{i}",
                        c.function.name,
                        c.function.arguments
                        if isinstance(c.function.arguments, str)
                        else json.dumps(c.function.arguments),
                    )
                    for i, c in enumerate(m.tool_calls or ())
                ),
                tool_call_id=m.tool_call_id,
                reasoning=m.reasoning_content or "",
            )
            for m, (text, images) in zip(self.messages, contents, strict=True)
        ]

    def tool_specs(self) -> list[ToolSpec]:
        if self.tool_choice == "none":
            return []
        return [
            ToolSpec(t.function.name, t.function.description, t.function.parameters)
            for t in self.tools or ()
        ]


class CompletionRequest(SamplingFields):
    prompt: str | list[str] | list[int]
    suffix: str | None = None
    echo: bool = False

    @field_validator("prompt")
    @classmethod
    def _one_prompt(cls, value: Any) -> Any:
        if isinstance(value, list) and value and isinstance(value[0], str) and len(value) != 1:
            raise ValueError("only one prompt per request is supported")
        return value


class EmbeddingRequest(_Lenient):
    model: str | None = None
    ttl: float | None = Field(default=None, ge=0.0)  # LM Studio's, as in SamplingFields
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)

    def texts(self) -> list[str]:
        if isinstance(self.input, str):
            return [self.input]
        if all(isinstance(item, str) for item in self.input):
            return [str(item) for item in self.input]
        raise ValueError(
            "token-id input is not supported: send text (LangChain: "
            "OpenAIEmbeddings(check_embedding_ctx_length=False))"
        )
