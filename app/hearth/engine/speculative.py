"""Speculative decoding's policy: how many tokens each slot drafts, step by step.

The scheduler verifies drafts in its one batched decode (the slot's last token plus its
drafts, logits for each), samples each position with the slot's own chain and keeps the
drafts while they match, then trims the rest from the KV cache. Output is what plain
decoding gives; only the speed changes. This module decides how much to draft.

The rule (docs/benchmarks.md has the measurements behind it):

- Each slot keeps a decayed count of accepted and rejected drafts; ``p`` is the per-token
  acceptance estimate, pulled towards an optimistic prior so a new conversation tries.
- A step that verifies ``k`` drafts yields ``E(k) = (1 - p^(k+1)) / (1 - p)`` tokens on
  average and costs ``1 + k * c`` plain steps, where ``c`` is the measured cost of one
  more token in the decode (fitted online from step times: on a CPU about 0.05-0.15,
  on a GPU close to 0) times the busy streams, plus the draft model's cost per token
  (its share of the target's parameters). The slot drafts the ``k`` in
  [draft_min, draft_max] with the best ``E(k) / (1 + k * c)``, and nothing at all when
  that gain is below ``MIN_GAIN``: acceptance too low to pay.
- While a slot does not draft, its counts decay, so ``p`` drifts back to the prior and
  the slot probes again now and then (about once per 100 tokens when drafts fail).
- With more than ``MAX_BUSY`` streams decoding, nobody drafts: batching already fills
  the cores, and extra tokens crowd out other streams.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import llama_cpp

from hearth.core.errors import ModelLoadError
from hearth.core.model_info import LoadConfig, SpecMode
from hearth.engine.drafters import DraftModel, DraftRequest, NgramIndex, check_vocab_compatible
from hearth.engine.model import LlamaModel
from hearth.engine.slots import Slot

log = logging.getLogger(__name__)

MIN_GAIN = 1.05  # expected speed-up a draft must promise; covers estimation error
MAX_BUSY = 4  # above this many decoding streams, speculation steps back
PRIOR_P = 0.8  # acceptance a slot is assumed to have before any evidence
PRIOR_WEIGHT = 1.0  # how many verified tokens that assumption is worth
DECAY = 0.9  # per verification: recent acceptance counts most
IDLE_DECAY = 0.98  # per step without drafting: the way back to trying again
DEFAULT_TOKEN_COST = 0.1  # one more token in a decode, as a share of a 1-token decode
# The draft model stops drafting when less sure than this. Off: the per-slot rule above
# already stops a slot whose drafts fail, and synthetic models are never sure.
DRAFT_P_MIN = 0.0


@dataclass
class _SlotSpec:
    """One slot's speculation state; counts reset with each request."""

    enabled: bool = False
    accepted: float = 0.0  # decayed
    rejected: float = 0.0  # decayed
    drafted_total: int = 0
    accepted_total: int = 0
    index: NgramIndex = field(default_factory=NgramIndex)

    @property
    def p(self) -> float:
        total = self.accepted + self.rejected + PRIOR_WEIGHT
        return (self.accepted + PRIOR_P * PRIOR_WEIGHT) / total


class StepCost:
    """Decode time as ``a + b * tokens``, fitted by decayed least squares over recent
    decode-only steps; ``extra`` is the cost of one more token relative to one."""

    def __init__(self, decay: float = 0.98) -> None:
        self._decay = decay
        self._w = self._n = self._t = self._nn = self._nt = 0.0

    def record(self, n_tokens: int, seconds: float) -> None:
        d = self._decay
        self._w = self._w * d + 1.0
        self._n = self._n * d + n_tokens
        self._t = self._t * d + seconds
        self._nn = self._nn * d + n_tokens * n_tokens
        self._nt = self._nt * d + n_tokens * seconds

    def per_token(self) -> tuple[float, float] | None:
        """(a, b), or None until steps of different sizes have been seen."""
        if self._w < 3.0:
            return None
        mean_n, mean_t = self._n / self._w, self._t / self._w
        var = self._nn / self._w - mean_n * mean_n
        if var < 0.1:
            return None
        b = (self._nt / self._w - mean_n * mean_t) / var
        a = mean_t - b * mean_n
        if a + b <= 0.0:
            return None
        return a, max(b, 0.0)

    def extra(self, n_streams: int) -> float:
        """One more token's cost in units of one stream's share of a step."""
        fit = self.per_token()
        if fit is None:
            return DEFAULT_TOKEN_COST * n_streams
        a, b = fit
        return min(n_streams * b / (a + b * n_streams), 1.0)

    @property
    def step_seconds(self) -> float:
        fit = self.per_token()
        return fit[0] + fit[1] if fit is not None else 0.0


def expected_tokens(p: float, k: int) -> float:
    """Tokens a step yields when ``k`` drafts each pass with probability ``p``."""
    if p >= 1.0:
        return float(k + 1)
    return (1.0 - p ** (k + 1)) / (1.0 - p)


def best_draft_length(p: float, cost: float, k_min: int, k_max: int) -> int:
    """The draft length with the best expected speed-up, or 0 when none pays."""
    best_k, best_gain = 0, MIN_GAIN
    for k in range(max(k_min, 1), k_max + 1):
        gain = expected_tokens(p, k) / (1.0 + k * cost)
        if gain > best_gain:
            best_k, best_gain = k, gain
    return best_k


class Speculator:
    """Per-slot drafting and its adaptation; owned and called by the scheduler thread."""

    def __init__(
        self,
        n_slots: int,
        mode: SpecMode = SpecMode.OFF,
        *,
        draft: DraftModel | None = None,
        draft_max: int = 16,
        draft_min: int = 1,
        draft_cost: float = 0.0,
    ) -> None:
        self.mode = mode
        self._draft = draft
        self._draft_max = max(draft_max, 0)
        self._draft_min = max(draft_min, 1)
        self._draft_cost = draft_cost  # per drafted token, in target steps
        self._slots = [_SlotSpec() for _ in range(n_slots)]
        self._cost = StepCost()
        self.drafted_total = 0
        self.accepted_total = 0

    @classmethod
    def for_load(cls, model: LlamaModel, config: LoadConfig) -> Speculator:
        """The speculator a load asks for; loads and checks the draft model if any."""
        mode, k_max, k_min = config.speculation, config.draft_max, config.draft_min
        if mode is not SpecMode.DRAFT:
            return cls(model.n_slots, mode, draft_max=k_max, draft_min=k_min)
        if config.draft_model_path is None:
            raise ModelLoadError("Speculation with a draft model needs --draft-model.")
        draft = load_draft_model(model, config, Path(config.draft_model_path))
        cost = draft.n_params / max(int(llama_cpp.llama_model_n_params(model.model)), 1)
        return cls(model.n_slots, mode, draft=draft, draft_max=k_max, draft_min=k_min,
                   draft_cost=cost)  # fmt: skip

    # ------------------------------------------------------------------ slot events
    def start(self, seq_id: int, enabled: bool) -> None:
        """A request starts in ``seq_id``: fresh counts and history."""
        self._slots[seq_id] = _SlotSpec(enabled=enabled and self.mode is not SpecMode.OFF)

    def copy(self, source: int, target: int) -> None:
        """The scheduler copied the target KV of ``source`` over ``target``."""
        if self._draft is not None:
            self._draft.copy(source, target)

    def counts(self, seq_id: int) -> tuple[int, int]:
        state = self._slots[seq_id]
        return state.drafted_total, state.accepted_total

    # ------------------------------------------------------------------ steps
    def plan(self, decoding: Sequence[Slot], room: int, n_ctx_slot: int) -> dict[int, list[int]]:
        """Drafts for this step by sequence id (slots not drafting are absent), with at
        most ``room`` drafted tokens in all."""
        if self.mode is SpecMode.OFF or not decoding or room <= 0:
            return {}
        busy = len(decoding) > MAX_BUSY
        cost = self._cost.extra(len(decoding)) + self._draft_cost
        wanted: list[tuple[Slot, int]] = []
        for slot in decoding:
            state = self._slots[slot.seq_id]
            if not state.enabled or slot.job is None:
                continue
            k = 0 if busy else best_draft_length(state.p, cost, self._draft_min, self._draft_max)
            k = min(k, room, _room_left(slot, n_ctx_slot))
            if k < self._draft_min:
                state.accepted *= IDLE_DECAY
                state.rejected *= IDLE_DECAY
                continue
            room -= k
            wanted.append((slot, k))
        if not wanted:
            return {}
        drafts = self._propose(wanted)
        return {seq: d for seq, d in drafts.items() if len(d) >= self._draft_min}

    def _propose(self, wanted: list[tuple[Slot, int]]) -> dict[int, list[int]]:
        if self._draft is None:
            return {slot.seq_id: self._ngram(slot, k) for slot, k in wanted}
        started = time.perf_counter()
        requests = [DraftRequest(s.seq_id, _history(s), k) for s, k in wanted]
        drafts = self._draft.draft(requests)
        spent = time.perf_counter() - started
        step = self._cost.step_seconds
        n = sum(len(d) for d in drafts.values())
        steady = self._draft.last_catch_up <= 2 * len(requests)  # no prompt to catch up
        if step > 0.0 and n and steady:  # the measured cost replaces the estimate
            measured = spent / n / step
            self._draft_cost = 0.8 * self._draft_cost + 0.2 * measured
        return drafts

    def _ngram(self, slot: Slot, k: int) -> list[int]:
        index = self._slots[slot.seq_id].index
        cached = slot.cached
        if len(index) > len(cached) + 1:  # cannot happen while a job runs; stay safe
            index = self._slots[slot.seq_id].index = NgramIndex()
        if len(index) <= len(cached):
            index.extend(cached[len(index) :])
            assert slot.pending_token is not None
            index.extend([slot.pending_token])
        return index.propose(k)

    def record_step(self, n_tokens: int, seconds: float) -> None:
        """A decode-only step's size and time, for the cost fit."""
        self._cost.record(n_tokens, seconds)

    def record(self, seq_id: int, drafted: int, accepted: int) -> None:
        state = self._slots[seq_id]
        state.accepted = state.accepted * DECAY + accepted
        state.rejected = state.rejected * DECAY + (1.0 if accepted < drafted else 0.0)
        state.drafted_total += drafted
        state.accepted_total += accepted
        self.drafted_total += drafted
        self.accepted_total += accepted

    def close(self) -> None:
        if self._draft is not None:
            self._draft.close()
            self._draft = None


def _history(slot: Slot) -> list[int]:
    assert slot.pending_token is not None
    return [*slot.cached, slot.pending_token]


def _room_left(slot: Slot, n_ctx_slot: int) -> int:
    """Drafts that fit the slot's context and its remaining ``max_tokens``."""
    room = n_ctx_slot - len(slot.cached) - 2
    assert slot.job is not None
    max_tokens = slot.job.params.max_tokens
    if max_tokens is not None:
        room = min(room, max_tokens - slot.n_generated - 1)
    return max(room, 0)


def load_draft_model(target: LlamaModel, config: LoadConfig, path: Path) -> DraftModel:
    """The draft model in its own context: same device choice and slots as the target,
    each slot as long as the target's, and a vocabulary that means the same tokens."""
    draft_config = replace(
        config,
        model_path=path,
        n_ctx=target.n_ctx_per_slot,
        draft_model_path=None,
        spec_mode=SpecMode.OFF,
    )
    model = LlamaModel(draft_config)
    try:
        check_vocab_compatible(target, model)
    except BaseException:
        model.close()
        raise
    log.info("draft model %s loaded for %s", path.name, Path(config.model_path).name)
    return DraftModel(model, n_target_vocab=target.n_vocab, p_min=DRAFT_P_MIN)
