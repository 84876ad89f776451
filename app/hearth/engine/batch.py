"""What goes into one decode of the batched scheduler (scheduler.py).

Every decoding slot puts in its next token, and its drafted tokens when it speculates
(speculative.py), each with logits; prefilling slots then put in prompt chunks within
a token budget, logits only for a prompt's last token. Slots go in sequence-id order:
llama.cpp groups only consecutive sequence ids into one forward pass, so any other
order splits the step.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import llama_cpp

from hearth.engine.slots import Slot

log = logging.getLogger(__name__)


@dataclass
class StepBatch:
    """One filled batch: what the scheduler samples after the decode, and what each
    slot's KV cache holds once it succeeded."""

    n_tokens: int = 0
    # (slot, batch index of its first logits, drafts to verify at the indices after it)
    outputs: list[tuple[Slot, int, list[int]]] = field(default_factory=list)
    # (slot, tokens the decode adds to its KV cache for good; drafts are kept apart)
    chunks: list[tuple[Slot, list[int]]] = field(default_factory=list)


class BatchBuilder:
    """Owns the ``llama_batch`` the scheduler decodes; free it with ``free``."""

    def __init__(self, n_batch: int) -> None:
        self.batch = llama_cpp.llama_batch_init(n_batch, 0, 1)

    def fill(
        self, slots: Sequence[Slot], drafts: Mapping[int, list[int]], budget: int
    ) -> StepBatch:
        """Fill the batch from ``slots`` (in sequence-id order); prefilling slots share
        ``budget`` prompt tokens."""
        step = StepBatch()
        n = 0
        for slot in slots:
            if slot.job is None:
                continue
            if slot.pending_token is not None:
                draft = drafts.get(slot.seq_id, [])
                for i, token in enumerate([slot.pending_token, *draft]):
                    self._put(n + i, token, len(slot.cached) + i, slot.seq_id, True)
                step.outputs.append((slot, n, draft))
                step.chunks.append((slot, [slot.pending_token]))
                n += 1 + len(draft)
                continue
            if not slot.prefilling or budget <= 0:
                continue
            start = len(slot.cached)
            take = min(slot.n_prompt - start, budget)
            budget -= take
            piece = slot.job.tokens[start : start + take]
            for offset, token in enumerate(piece):
                is_last = start + offset == slot.n_prompt - 1
                self._put(n, token, start + offset, slot.seq_id, is_last)
                if is_last:
                    step.outputs.append((slot, n, []))
                n += 1
            step.chunks.append((slot, piece))
        self.batch.n_tokens = step.n_tokens = n
        return step

    def _put(self, i: int, token: int, pos: int, seq_id: int, logits: bool) -> None:
        batch = self.batch
        batch.token[i] = token
        batch.pos[i] = pos
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq_id
        batch.logits[i] = logits

    def free(self) -> None:
        llama_cpp.llama_batch_free(self.batch)
