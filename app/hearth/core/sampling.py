"""Sampling and stopping parameters for one generation request."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

DEFAULT_MAX_TOKENS = 512


@dataclass(frozen=True)
class SamplingParams:
    """What the sampler chain and the stop logic need for one request.

    ``temperature <= 0`` means greedy decoding. ``max_tokens = None`` means "until the
    context is full or the model ends the turn".
    """

    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    seed: int | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repeat_penalty: float = 1.0
    repeat_last_n: int = 64
    logit_bias: dict[int, float] = field(default_factory=dict)
    max_tokens: int | None = DEFAULT_MAX_TOKENS
    stop: tuple[str, ...] = ()
    grammar: str | None = None  # GBNF; constrains output (JSON mode, JSON schema)
    logprobs: int | None = None  # None: off; N: the sampled token plus N alternatives
    # Special tokens whose text the detokenizer keeps (control tokens are dropped
    # otherwise): the tool-call and reasoning markers the reply is parsed by.
    preserved_tokens: frozenset[int] = frozenset()
    speculative: bool = True  # False: never draft for this request (a Hearth extension)

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    @classmethod
    def from_request(cls, *, max_tokens: int | None, **values: Any) -> SamplingParams:
        """Build from a client's parameters; ``None`` means "not given": keep the default.

        ``max_tokens`` is taken as is: there ``None`` means "no limit".
        """
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise TypeError(f"unknown sampling parameters: {sorted(unknown)}")
        given = {k: v for k, v in values.items() if v is not None}
        return replace(cls(), max_tokens=max_tokens, **given)
