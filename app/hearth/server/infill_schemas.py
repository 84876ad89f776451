"""llama.cpp ``/infill`` request bodies, validated, and their translation into our types.

The fields and defaults are llama-server's, so llama.vscode and llama.vim send what they
always send. Fields that tune llama-server's own machinery (``cache_prompt``,
``samplers``, ``id_slot``, ``response_fields``, ``t_max_prompt_ms``) are accepted and
ignored: Hearth's prefix cache is always on and its sampler chain is fixed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hearth.core.sampling import SamplingParams
from hearth.server.infill_prompt import ExtraFile, InfillParts

MAX_EXTRA_CHUNKS = 1024
MAX_STOP_STRINGS = 8
MAX_N_PROBS = 20
MAX_LOGIT_BIAS = 1024


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ExtraChunk(_Lenient):
    """One piece of context from another file."""

    text: str
    filename: str = "tmp"  # llama-server's name for a chunk that names no file


class InfillRequest(_Lenient):
    model: str | None = None
    input_prefix: str
    input_suffix: str
    input_extra: list[ExtraChunk] = Field(default_factory=list, max_length=MAX_EXTRA_CHUNKS)
    prompt: str = ""
    n_predict: int = Field(default=-1, ge=-1)  # -1: until the model ends or the context fills
    max_tokens: int | None = Field(default=None, ge=-1)  # llama-server's alias for n_predict
    temperature: float | None = Field(default=None, ge=0.0, le=5.0)
    top_k: int | None = Field(default=None, ge=0, le=10_000)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    seed: int | None = None  # negative (llama-server's -1): random
    repeat_penalty: float | None = Field(default=None, gt=0.0, le=10.0)
    repeat_last_n: int | None = Field(default=None, ge=0, le=4096)
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    stop: list[str] = Field(default_factory=list, max_length=MAX_STOP_STRINGS)
    # llama-server takes {"id": bias} or [[id, bias], ...]; false (ban) is not supported
    logit_bias: dict[int, float] | list[tuple[int, float]] = Field(
        default_factory=dict, max_length=MAX_LOGIT_BIAS
    )
    n_probs: int = Field(default=0, ge=0, le=MAX_N_PROBS)
    stream: bool = False
    cache_prompt: bool = True
    t_max_predict_ms: int = Field(default=0, ge=0)  # after a newline, stop past this time
    n_indent: int = Field(default=0, ge=0)

    @field_validator("logit_bias")
    @classmethod
    def _bias(
        cls, value: dict[int, float] | list[tuple[int, float]]
    ) -> dict[int, float] | list[tuple[int, float]]:
        pairs = value.items() if isinstance(value, dict) else value
        if any(not -100.0 <= bias <= 100.0 for _, bias in pairs):
            raise ValueError("biases must be between -100 and 100")
        return value

    def parts(self) -> InfillParts:
        extra = tuple(ExtraFile(c.filename, c.text) for c in self.input_extra)
        return InfillParts(self.input_prefix, self.input_suffix, self.prompt, extra)

    def predict(self) -> int:
        """How many tokens to generate; -1 for no limit."""
        if self.max_tokens is not None and "n_predict" not in self.model_fields_set:
            return self.max_tokens
        return self.n_predict

    def to_sampling(self) -> SamplingParams:
        n_predict = self.predict()
        return SamplingParams.from_request(
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            min_p=self.min_p,
            seed=self.seed if self.seed is not None and self.seed >= 0 else None,
            repeat_penalty=self.repeat_penalty,
            repeat_last_n=self.repeat_last_n,
            presence_penalty=self.presence_penalty,
            frequency_penalty=self.frequency_penalty,
            max_tokens=n_predict if n_predict >= 0 else None,
            stop=tuple(s for s in self.stop if s),
            logit_bias=dict(self.logit_bias),
            logprobs=self.n_probs or None,
        )
