"""Log-probabilities of sampled tokens, from the raw logits of the last decode."""

from __future__ import annotations

import ctypes

import llama_cpp
import numpy as np

from hearth.core.generation import TokenAlternative, TokenLogprob
from hearth.engine.model import LlamaModel

MAX_TOP_LOGPROBS = 20


def read_logits(model: LlamaModel, output_index: int) -> np.ndarray | None:
    """A copy of the logits at ``output_index`` (sampling must not see them change)."""
    pointer = llama_cpp.llama_get_logits_ith(model.ctx, ctypes.c_int32(output_index))
    if not pointer:
        return None
    return np.ctypeslib.as_array(pointer, shape=(model.n_vocab,)).astype(np.float64)


def token_logprob(model: LlamaModel, logits: np.ndarray, token: int, top_n: int) -> TokenLogprob:
    peak = float(logits.max())
    log_total = peak + float(np.log(np.exp(logits - peak).sum()))
    top: tuple[TokenAlternative, ...] = ()
    if top_n > 0:
        n = min(top_n, MAX_TOP_LOGPROBS, logits.size)
        best = np.argpartition(-logits, n - 1)[:n]
        best = best[np.argsort(-logits[best], kind="stable")]
        top = tuple(
            TokenAlternative(model.token_text(int(t)), model.token_bytes(int(t)),
                             float(logits[t]) - log_total)
            for t in best
        )  # fmt: skip
    return TokenLogprob(
        text=model.token_text(token),
        raw=model.token_bytes(token),
        logprob=float(logits[token]) - log_total,
        top=top,
    )
