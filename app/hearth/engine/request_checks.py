"""What a generation request must satisfy before it is queued (``Engine.start``).

Every check here raises a 4xx-class error (``InvalidRequestError``,
``ContextOverflowError``) that each dialect answers in its own shape: a request that
would fail in the decode loop is refused before it takes a slot.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from hearth.core.errors import ContextOverflowError, InvalidRequestError
from hearth.core.generation import GenerationRequest
from hearth.core.model_info import ModelInfo
from hearth.engine.model import LlamaModel


def check_token_ids(tokens: Sequence[int], n_vocab: int) -> None:
    """A prompt given as token ids names only tokens of the vocabulary."""
    bad = [t for t in tokens if not 0 <= t < n_vocab]
    if bad:
        raise InvalidRequestError(
            f"The prompt names token {bad[0]}, outside the vocabulary of {n_vocab} tokens.",
            param="prompt",
        )


def check_fits(tokens: Sequence[int], request: GenerationRequest, info: ModelInfo) -> None:
    """The prompt and the tokens asked for fit one slot's context."""
    if not tokens:
        raise InvalidRequestError("The prompt is empty.", param="prompt")
    n_ctx = info.n_ctx_per_slot
    max_tokens = request.params.max_tokens or 0
    if len(tokens) >= n_ctx or len(tokens) + max_tokens > n_ctx:
        raise ContextOverflowError(len(tokens), max_tokens, n_ctx)


async def check_request(
    tokens: Sequence[int], request: GenerationRequest, info: ModelInfo, model: LlamaModel
) -> None:
    """The context, the grammar (compiled off the event loop) and the logit bias."""
    check_fits(tokens, request, info)
    if request.params.grammar:
        await asyncio.to_thread(model.check_grammar, request.params.grammar)
    bad = [t for t in request.params.logit_bias if not 0 <= t < model.n_vocab]
    if bad:
        raise InvalidRequestError(
            f"logit_bias names token {bad[0]}, outside the vocabulary of {model.n_vocab} tokens.",
            param="logit_bias",
        )
