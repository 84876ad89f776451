"""Ollama request bodies (``/api/chat``, ``/api/generate``, ``/api/show``)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage, ToolCall, ToolSpec
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.core.sampling import SamplingParams
from hearth.server import image_input
from hearth.server.openai_schemas import MAX_MESSAGES, MAX_STOP_STRINGS, ToolIn


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class OllamaOptions(_Lenient):
    """The runtime subset of Ollama's ``options`` that maps onto llama.cpp sampling."""

    temperature: float | None = Field(default=None, ge=0.0, le=5.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=0)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    seed: int | None = None
    num_predict: int | None = None
    stop: list[str] | None = None
    repeat_penalty: float | None = Field(default=None, gt=0.0, le=10.0)
    repeat_last_n: int | None = Field(default=None, ge=-1, le=4096)
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    speculative: bool | None = None  # Hearth extension: false = no speculative decoding

    @field_validator("stop")
    @classmethod
    def _stops(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(value) > MAX_STOP_STRINGS:
            raise ValueError(f"at most {MAX_STOP_STRINGS} stop strings are allowed")
        return value

    def to_sampling(self) -> SamplingParams:
        # Ollama: -1 = no limit, -2 = fill the context; both mean "until the context ends".
        limit = self.num_predict if self.num_predict and self.num_predict > 0 else None
        return SamplingParams.from_request(
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            min_p=self.min_p,
            seed=self.seed,
            presence_penalty=self.presence_penalty,
            frequency_penalty=self.frequency_penalty,
            repeat_penalty=self.repeat_penalty,
            repeat_last_n=None if self.repeat_last_n is None else max(self.repeat_last_n, 0),
            max_tokens=limit,
            stop=tuple(s for s in self.stop or () if s),
            speculative=self.speculative,
        )


def keep_alive_seconds(value: str | int | float | None) -> float | None:
    """Ollama durations: 300, "5m", "30s", "1h", "0"; negative means "forever"."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    text = value.strip().lower()
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * units[suffix]
    return float(text)


class _OllamaRequest(_Lenient):
    model: str = ""
    stream: bool = True
    options: OllamaOptions = Field(default_factory=OllamaOptions)
    format: str | dict[str, Any] | None = None
    keep_alive: str | int | float | None = None
    think: bool | Literal["low", "medium", "high"] | None = None

    def template_kwargs(self) -> dict[str, Any]:
        """Ollama's ``think`` as the chat template's ``enable_thinking`` (and, as a level,
        gpt-oss's ``reasoning_effort``)."""
        if self.think is None:
            return {}
        if isinstance(self.think, bool):
            return {"enable_thinking": self.think}
        return {"enable_thinking": True, "reasoning_effort": self.think}

    @field_validator("keep_alive")
    @classmethod
    def _keep_alive(cls, value: str | int | float | None) -> str | int | float | None:
        try:
            keep_alive_seconds(value)
        except ValueError:
            raise ValueError("keep_alive must be a number of seconds or like '5m'") from None
        return value



class OllamaFunctionCall(_Lenient):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class OllamaToolCall(_Lenient):
    function: OllamaFunctionCall


class OllamaMessage(_Lenient):
    role: str
    content: str = ""
    images: list[str] | None = None
    tool_calls: list[OllamaToolCall] | None = None
    thinking: str | None = None  # an earlier turn's reasoning, sent back


class OllamaChatRequest(_OllamaRequest):
    messages: list[OllamaMessage] = Field(default_factory=list, max_length=MAX_MESSAGES)
    tools: list[ToolIn] | None = Field(default=None, max_length=128)

    def chat_messages(self) -> list[ChatMessage]:
        images = [
            decode_images(m.images, f"messages.{i}.images") for i, m in enumerate(self.messages)
        ]
        image_input.check_request(image for found in images for image in found)
        return [
            ChatMessage(
                role=m.role,
                content=IMAGE_MARKER * len(found) + m.content,  # Ollama puts images first
                images=found,
                tool_calls=tuple(
                    ToolCall(f"call_{i}", c.function.name, json.dumps(c.function.arguments))
                    for i, c in enumerate(m.tool_calls or ())
                ),
                reasoning=m.thinking or "",
            )
            for m, found in zip(self.messages, images, strict=True)
        ]

    def tool_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(t.function.name, t.function.description, t.function.parameters)
            for t in self.tools or ()
        ]


class OllamaGenerateRequest(_OllamaRequest):
    prompt: str = ""
    suffix: str | None = None
    system: str | None = None
    raw: bool = False
    images: list[str] | None = None

    def prompt_images(self) -> tuple[ImageInput, ...]:
        """The images that go with ``prompt``: only a templated prompt can place them."""
        if self.images and (self.raw or self.suffix):
            raise InvalidRequestError(
                "Images go with a templated prompt: a raw or suffix (fill-in-the-middle) "
                "request takes text only.",
                param="images",
            )
        found = decode_images(self.images, "images")
        image_input.check_request(found)
        return found


def decode_images(images: list[str] | None, where: str) -> tuple[ImageInput, ...]:
    """Ollama's images: raw base64 (a data URL is taken too, as Ollama's clients send
    either)."""
    out = []
    for index, text in enumerate(images or ()):
        at = f"{where}.{index}"
        head = text[:8].lower()
        is_url = head.startswith(("data:", "http:", "https:", "file:"))
        out.append(image_input.from_url(text, at) if is_url else image_input.from_base64(text, at))
    return tuple(out)


class OllamaShowRequest(_Lenient):
    model: str = ""
    name: str = ""  # older clients

    @property
    def requested(self) -> str:
        return self.model or self.name


class OllamaEmbedRequest(_Lenient):
    model: str = ""
    input: str | list[str] = ""
    prompt: str | None = None  # the legacy /api/embeddings form
    truncate: bool = True
    keep_alive: str | int | float | None = None

    def texts(self) -> list[str]:
        if self.prompt is not None:
            return [self.prompt]
        return [self.input] if isinstance(self.input, str) else list(self.input)
