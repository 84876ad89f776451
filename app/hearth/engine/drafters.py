"""Where draft tokens come from: the slot's own tokens (n-gram lookup) or a draft model.

Both only *propose*; the scheduler verifies every proposal against the target model in
its batched step, so a bad proposal costs time, never correctness.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import llama_cpp
import numpy as np

from hearth.core.errors import ModelLoadError
from hearth.engine import native
from hearth.engine.model import LlamaModel
from hearth.engine.slots import common_prefix

log = logging.getLogger(__name__)

NGRAM_SIZES = (4, 3, 2)  # longest first: a longer match is the better predictor
# llama.cpp's limits for a draft vocabulary (common/speculative.cpp): sizes may differ a
# little (padding), and the first few ids (specials) are not compared token by token.
VOCAB_MAX_SIZE_DIFFERENCE = 128
VOCAB_CHECK_START_TOKEN_ID = 5


class NgramIndex:
    """Prompt lookup over one slot's tokens: for each recent n-gram, where it was last
    followed by a token. Kept incrementally (a few dict writes per token), since
    scanning a long prompt on every step would cost more than the draft saves."""

    def __init__(self, sizes: tuple[int, ...] = NGRAM_SIZES) -> None:
        self._sizes = sizes
        self._tokens: list[int] = []
        self._next: dict[tuple[int, ...], int] = {}  # n-gram -> index of its follower

    def __len__(self) -> int:
        return len(self._tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        toks, table = self._tokens, self._next
        for token in tokens:
            end = len(toks)  # the new token follows the n-grams ending just before it
            toks.append(token)
            for n in self._sizes:
                if end >= n:
                    table[tuple(toks[end - n : end])] = end

    def predict(self) -> int | None:
        """The token a one-token draft would propose next, if any."""
        proposal = self.propose(1)
        return proposal[0] if proposal else None

    def propose(self, n_max: int) -> list[int]:
        """What followed the latest earlier occurrence of the longest matching tail.

        A continuation that runs into the tail itself repeats with the same period,
        which is what a model stuck in (or asked for) a repetition will do.
        """
        toks = self._tokens
        for n in self._sizes:
            if len(toks) <= n:
                continue
            start = self._next.get(tuple(toks[-n:]))
            if start is None:
                continue
            period = len(toks) - start
            return [toks[start + (i % period)] for i in range(n_max)]
        return []


@dataclass(frozen=True)
class DraftRequest:
    """Draft up to ``n`` tokens for ``seq_id``, whose target history is ``history``
    (every token in the target's KV cache plus the token about to be decoded)."""

    seq_id: int
    history: list[int]
    n: int


class DraftModel:
    """A small model in its own context, one KV sequence per target slot.

    Its caches follow the target's by common prefix: before drafting, each sequence is
    trimmed to what it shares with the slot's history and the rest is decoded, so KV
    copies, trims and new conversations in the target need no bookkeeping here beyond
    ``copy`` (which only saves a re-prefill).
    """

    def __init__(self, model: LlamaModel, *, n_target_vocab: int, p_min: float) -> None:
        self._model = model
        self._n_target_vocab = n_target_vocab
        self._p_min = p_min
        self._cached: list[list[int]] = [[] for _ in range(model.n_slots)]
        self._n_batch = int(llama_cpp.llama_n_batch(model.ctx))
        self._batch = llama_cpp.llama_batch_init(self._n_batch, 0, 1)
        self.last_catch_up = 0  # tokens the last draft() decoded before drafting

    @property
    def n_params(self) -> int:
        return int(llama_cpp.llama_model_n_params(self._model.model))

    def copy(self, source: int, target: int) -> None:
        llama_cpp.llama_memory_seq_cp(self._model.memory, source, target, -1, -1)
        self._cached[target] = list(self._cached[source])

    def draft(self, requests: Sequence[DraftRequest]) -> dict[int, list[int]]:
        """Greedy drafts for every request, decoded together: one catch-up pass, then one
        decode per drafted position. A sequence stops early when the draft model is
        unsure (top probability below ``p_min``): such tokens are rarely accepted."""
        drafts: dict[int, list[int]] = {r.seq_id: [] for r in requests}
        feed: list[tuple[int, list[int], int]] = []  # seq, tokens to decode, first pos
        for request in requests:
            feed.append((request.seq_id, *self._catch_up(request)))
        self.last_catch_up = sum(len(tokens) for _, tokens, _ in feed)
        want = {r.seq_id: r.n for r in requests}
        while feed:
            sampled: list[tuple[int, int]] = []
            if not self._decode(feed, sampled):
                return {seq: [] for seq in drafts}
            feed = []
            for seq, token in sampled:
                drafts[seq].append(token)
                if len(drafts[seq]) < want[seq]:
                    feed.append((seq, [token], len(self._cached[seq])))
        return drafts

    def _catch_up(self, request: DraftRequest) -> tuple[list[int], int]:
        seq, history = request.seq_id, request.history
        cached = self._cached[seq]
        keep = min(common_prefix(cached, history), len(history) - 1)  # last needs logits
        if not llama_cpp.llama_memory_seq_rm(self._model.memory, seq, keep, -1):
            llama_cpp.llama_memory_seq_rm(self._model.memory, seq, -1, -1)
            keep = 0
        del cached[keep:]
        return history[keep:], keep

    def _decode(
        self, feed: list[tuple[int, list[int], int]], sampled: list[tuple[int, int]]
    ) -> bool:
        """Decode the tokens in ``feed`` in n_batch chunks; after each chunk, draft the
        next token of every sequence that ended in it (its logits live only until the
        next decode) into ``sampled``, unless the draft is unsure or outside the target's
        vocabulary. False when the draft context failed: no drafts this step."""
        items = [(seq, tok, pos + i, i == len(toks) - 1)
                 for seq, toks, pos in sorted(feed) for i, tok in enumerate(toks)]  # fmt: skip
        batch = self._batch
        for start in range(0, len(items), self._n_batch):
            chunk = items[start : start + self._n_batch]
            for i, (seq, token, pos, last) in enumerate(chunk):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
                batch.seq_id[i][0] = seq
                batch.logits[i] = last
            batch.n_tokens = len(chunk)
            if native.decode(self._model.ctx, batch) != 0:  # short: keeps the GIL
                log.warning("draft model decode failed; drafting nothing this step")
                for seq, _, _ in feed:
                    llama_cpp.llama_memory_seq_rm(self._model.memory, seq, -1, -1)
                    self._cached[seq] = []
                return False
            for i, (seq, token, _, last) in enumerate(chunk):
                self._cached[seq].append(token)
                if last:
                    best, p = self._best(i)
                    if p >= self._p_min and best < self._n_target_vocab:
                        sampled.append((seq, best))
        return True

    def _best(self, index: int) -> tuple[int, float]:
        pointer = native.get_logits_ith(self._model.ctx, ctypes.c_int32(index))
        logits = np.ctypeslib.as_array(pointer, shape=(self._model.n_vocab,))
        token = int(logits.argmax())
        if self._p_min <= 0.0:
            return token, 1.0
        return token, 1.0 / float(np.exp(logits - logits[token]).sum())

    def close(self) -> None:
        llama_cpp.llama_batch_free(self._batch)
        self._model.close()


def check_vocab_compatible(target: LlamaModel, draft: LlamaModel) -> None:
    """Refuse a draft model whose tokens mean something else: its drafts would all be
    rejected at best. The checks are llama.cpp's (common_speculative_are_compatible)."""
    problem = _vocab_difference(target, draft)
    if problem is not None:
        target_name = Path(target.config.model_path).name
        draft_name = Path(draft.config.model_path).name
        raise ModelLoadError(
            f"The draft model {draft_name} cannot draft for {target_name}: {problem}. "
            "Pick a draft model of the same family (the same tokenizer)."
        )


def _vocab_difference(target: LlamaModel, draft: LlamaModel) -> str | None:
    tv, dv = target.vocab, draft.vocab
    if llama_cpp.llama_vocab_type(tv) != llama_cpp.llama_vocab_type(dv):
        return "their tokenizers are of different types"
    if target.add_bos != draft.add_bos or (target.add_bos and target.bos != draft.bos):
        return "their beginning-of-text tokens differ"
    if (
        bool(llama_cpp.llama_vocab_get_add_eos(tv)) != bool(llama_cpp.llama_vocab_get_add_eos(dv))
        or target.eos != draft.eos
    ):
        return "their end-of-text tokens differ"
    if abs(target.n_vocab - draft.n_vocab) > VOCAB_MAX_SIZE_DIFFERENCE:
        return f"their vocabularies have {target.n_vocab} and {draft.n_vocab} tokens"
    for token in range(VOCAB_CHECK_START_TOKEN_ID, min(target.n_vocab, draft.n_vocab)):
        a = llama_cpp.llama_vocab_get_text(tv, token)
        b = llama_cpp.llama_vocab_get_text(dv, token)
        if a != b:
            return f"token {token} is {a!r} in one and {b!r} in the other"
    return None
