"""Speculative decoding's policy: how many tokens each slot drafts, step by step.

The scheduler verifies drafts in its one batched decode (the slot's last token plus its
drafts, logits for each), samples each position with the slot's own chain and keeps the
drafts while they match, then trims the rest from the KV cache. Output is what plain
decoding gives; only the speed changes. This module decides how much to draft.

The rule (docs/benchmarks.md has the measurements behind it):

- Each slot keeps a decayed count of accepted and rejected drafts; ``p`` is the per-token
  acceptance estimate, pulled towards an optimistic prior so a new conversation tries.
- A step that verifies ``k`` drafts yields ``E(k) = (1 - p^(k+1)) / (1 - p)`` tokens on
  average. Its time is the measured time of a decode that many tokens larger
  (``StepCost``, learned per batch size from the steps themselves, since on a CPU a
  2-token decode can cost 3 one-token decodes while a 17-token one costs 7), plus the
  drafter's measured time per token (n-gram: nothing). The slot drafts the ``k`` in
  [draft_min, draft_max] with the most expected tokens per second, and nothing at all
  when that beats plain decoding by less than ``MIN_GAIN`` (draft_gain.py has that
  arithmetic): acceptance too low to pay.
- A request starts from the model's recent acceptance (over every slot), not a fixed
  guess, so a well-matched draft model drafts at once and a useless one does not.
- N-gram drafts cost nothing to propose, so they are judged without verifying them:
  every token a slot generates, drafted or not, is first scored against what the
  n-gram index would have proposed there, and ``p`` is that hit rate (decayed per token,
  from a cautious prior worth ``NGRAM_PRIOR_WEIGHT`` tokens). Output that does not
  follow its prompt's n-grams is never drafted for, after a handful of tokens, and
  output that copies them drafts long: no probes, no optimistic start.
- While a draft model's slot does not draft, its counts decay towards that prior, and
  after ``PROBE_FIRST`` steps it probes with a short draft; each failed probe doubles the
  wait (up to ``PROBE_MAX`` steps), so a useless draft model costs well under 1% of the
  steps. The wait carries over to the next request: whether a draft model agrees with
  its target is a property of the pair, and a probe costs a step about three times as
  long plus the draft model catching up, which every short request would otherwise pay
  again.
- With several streams decoding, a draft must pay for the whole step: every other
  stream waits for the longer decode, so the gain counts their tokens too, and with
  busy cores drafting stops by itself. Above ``MAX_BUSY`` streams nobody drafts.
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
from hearth.engine.draft_gain import SLOWEST, StepCost, best_draft_length
from hearth.engine.drafters import DraftModel, DraftRequest, NgramIndex, check_vocab_compatible
from hearth.engine.model import LlamaModel
from hearth.engine.slots import Slot

log = logging.getLogger(__name__)

MAX_BUSY = 8  # above this many decoding streams, nobody drafts
PRIOR_P = 0.8  # acceptance assumed before any evidence (then: the model's recent rate)
PRIOR_WEIGHT = 1.0  # how many verified tokens that assumption is worth
PROBE_FIRST = 64  # steps without drafting before a slot probes with a 1-token draft
PROBE_MAX = 512  # the probe interval doubles after each failed probe, up to this
PROBE_LENGTH = 1  # on a CPU even a 2-token step costs about 3 one-token steps
DECAY = 0.9  # per verification: recent acceptance counts most
NGRAM_PRIOR_P = 0.2  # an n-gram slot's hit rate before its output says otherwise
NGRAM_PRIOR_WEIGHT = 2.0  # in scored tokens
NGRAM_DECAY = 0.95  # per scored token: about the last twenty count
IDLE_DECAY = 0.98  # per step without drafting: the way back to trying again
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
    prior: float = PRIOR_P
    prior_weight: float = PRIOR_WEIGHT
    idle_steps: int = 0
    probe_every: int = PROBE_FIRST
    probing: bool = False

    @property
    def p(self) -> float:
        total = self.accepted + self.rejected + self.prior_weight
        return (self.accepted + self.prior * self.prior_weight) / total


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
        """``draft_cost``: the draft model's time per token as a share of a one-token
        target step, until measured."""
        self.mode = mode
        self._draft = draft
        self._draft_max = max(draft_max, 0)
        self._draft_min = max(draft_min, 1)
        self._draft_share = draft_cost  # per drafted token, of a one-token target step
        self._draft_s: float | None = None  # measured seconds per drafted token
        self._slots = [_SlotSpec() for _ in range(n_slots)]
        self._cost = StepCost()
        self.drafted_total = 0
        self.accepted_total = 0
        self._recent_accepted = 0.0  # decayed, over every slot
        self._recent_rejected = 0.0
        self._probe_every = PROBE_FIRST  # a draft model's probe backoff, across requests

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
        on = enabled and self.mode is not SpecMode.OFF
        if self.mode is SpecMode.NGRAM:
            state = _SlotSpec(enabled=on, prior=NGRAM_PRIOR_P, prior_weight=NGRAM_PRIOR_WEIGHT)
        else:
            state = _SlotSpec(enabled=on, prior=self._recent_p(), probe_every=self._probe_every)
        self._slots[seq_id] = state

    def _recent_p(self) -> float:
        """Acceptance over the model's recent drafts: a new request's starting guess."""
        total = self._recent_accepted + self._recent_rejected + PRIOR_WEIGHT
        return (self._recent_accepted + PRIOR_P * PRIOR_WEIGHT) / total

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
        ngram = self.mode is SpecMode.NGRAM
        n_tokens = len(decoding)  # tokens in this step so far
        wanted: list[tuple[Slot, int]] = []
        for slot in decoding:
            state = self._slots[slot.seq_id]
            if not state.enabled or slot.job is None:
                continue
            if ngram:
                self._catch_up_index(slot, state)
            k = 0 if busy else self._length(state.p, n_tokens, len(decoding) - 1)
            state.probing = False
            if k == 0 and not busy and not ngram and state.idle_steps >= state.probe_every:
                k, state.probing = max(self._draft_min, min(PROBE_LENGTH, self._draft_max)), True
            k = min(k, room, _room_left(slot, n_ctx_slot))
            if k < self._draft_min:
                if not ngram:  # back towards the prior, and a probe (n-gram: scored)
                    state.accepted *= IDLE_DECAY
                    state.rejected *= IDLE_DECAY
                    state.idle_steps += 1
                continue
            state.idle_steps = 0
            room -= k
            n_tokens += k
            wanted.append((slot, k))
        if not wanted:
            return {}
        drafts = self._propose(wanted)
        return {seq: d for seq, d in drafts.items() if len(d) >= self._draft_min}

    def _length(self, p: float, n_tokens: int, others: int) -> int:
        one = self._cost.seconds(1)
        if one is None:  # nothing measured yet: a plain step first, measuring what a
            return 0  # draft has to beat (a 1-token draft would never measure it)
        base = self._cost.plain(n_tokens) or one

        def step(k: int) -> float:
            return (self._cost.seconds(n_tokens + k) or base) if k else base

        draft_s = self._draft_s if self._draft_s is not None else self._draft_share * one
        k_min, k_max = self._draft_min, self._draft_max
        return best_draft_length(p, step, draft_s, k_min, k_max, others=others)

    def _propose(self, wanted: list[tuple[Slot, int]]) -> dict[int, list[int]]:
        if self._draft is None:
            return {slot.seq_id: self._ngram(slot, k) for slot, k in wanted}
        started = time.perf_counter()
        requests = [DraftRequest(s.seq_id, _history(s), k) for s, k in wanted]
        drafts = self._draft.draft(requests)
        spent = time.perf_counter() - started
        n = sum(len(d) for d in drafts.values())
        steady = self._draft.last_catch_up <= 2 * len(requests)  # no prompt to catch up
        if n and steady:  # the measured cost replaces the estimate; as with StepCost,
            per_token = spent / n  # a busy moment only slows drafting down
            old = self._draft_s
            if old is None or per_token < old:
                self._draft_s = per_token
            else:
                self._draft_s = 0.8 * old + 0.2 * min(per_token, SLOWEST * old)
        return drafts

    def _ngram(self, slot: Slot, k: int) -> list[int]:
        state = self._slots[slot.seq_id]
        self._catch_up_index(slot, state)
        return state.index.propose(k)

    def _catch_up_index(self, slot: Slot, state: _SlotSpec) -> None:
        """Extend the slot's n-gram index with its new tokens. In n-gram mode each new
        generated token is first scored against the index's proposal for it, which is
        the evidence ``p`` rests on (prompt tokens are indexed, not scored: whether the
        prompt repeats itself says little about whether the output will)."""
        index, cached = state.index, slot.cached
        if len(index) > len(cached) + 1:  # cannot happen while a job runs; stay safe
            index = state.index = NgramIndex()
        if len(index) > len(cached):
            return
        assert slot.pending_token is not None
        new = [*cached[len(index) :], slot.pending_token]
        if self.mode is not SpecMode.NGRAM:
            index.extend(new)
            return
        prompt_end = max(slot.n_prompt - len(index), 0)
        index.extend(new[:prompt_end])
        for token in new[prompt_end:]:
            guess = index.predict()
            if guess is not None:
                state.accepted = state.accepted * NGRAM_DECAY + (guess == token)
                state.rejected = state.rejected * NGRAM_DECAY + (guess != token)
            index.extend([token])

    def record_step(self, n_tokens: int, seconds: float) -> None:
        """A decode-only step's size and time, for the cost fit."""
        self._cost.record(n_tokens, seconds)

    def record(self, seq_id: int, drafted: int, accepted: int) -> None:
        state = self._slots[seq_id]
        rejected = 1.0 if accepted < drafted else 0.0
        if self.mode is not SpecMode.NGRAM:  # n-gram slots score every token instead
            state.accepted = state.accepted * DECAY + accepted
            state.rejected = state.rejected * DECAY + rejected
        self._recent_accepted = self._recent_accepted * DECAY + accepted
        self._recent_rejected = self._recent_rejected * DECAY + rejected
        if state.probing:  # a failed probe waits twice as long for the next
            failed = accepted * 2 < drafted
            state.probe_every = min(state.probe_every * 2, PROBE_MAX) if failed else PROBE_FIRST
            self._probe_every = state.probe_every
        elif drafted and accepted * 2 >= drafted:  # drafts pay again: probe early next time
            self._probe_every = PROBE_FIRST
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
