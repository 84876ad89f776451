"""What goes into one decode of the batched scheduler (scheduler.py).

Every decoding slot puts in its next token, and its drafted tokens when it speculates
(speculative.py), each with logits; prefilling slots then put in prompt chunks within
a token budget, logits only for a prompt's last token; a chunk stops at an image,
which is a decode of its own (image_jobs.py). Slots go in sequence-id order: llama.cpp
groups only consecutive sequence ids into one forward pass, so any other order splits
the step. A token's position is the slot's ``n_past`` on (past an M-RoPE image it is
not its index in the prompt; llama.cpp repeats a text token's one position across the
M-RoPE sections itself).

Prefilling slots take chunks of one size (``equal_share``). With a KV stream per slot,
llama.cpp's ``split_equal`` puts the same number of tokens of each sequence in a
forward pass: prompts of 52 to 54 tokens prefilled whole in one decode took six passes
(52 tokens of each, then the ragged ends a sequence or three at a time), each pass
costing about a decode step, and every prompt's first token waited for all six. Equal
chunks are one pass; the few tokens left go in the next steps beside the decoding
slots' single tokens, again equal counts, while the prompts that ended already stream.
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
        ``budget`` prompt tokens in equal chunks."""
        step = StepBatch()
        share = equal_share([n for n in map(_text_left, slots) if n > 0], budget)
        n = 0
        for slot in slots:
            if slot.job is None:
                continue
            if slot.pending_token is not None:
                draft = drafts.get(slot.seq_id, [])
                for i, token in enumerate([slot.pending_token, *draft]):
                    self._put(n + i, token, slot.n_past + i, slot.seq_id, True)
                step.outputs.append((slot, n, draft))
                step.chunks.append((slot, [slot.pending_token]))
                n += 1 + len(draft)
                continue
            if not slot.prefilling or budget <= 0:
                continue
            start = len(slot.cached)
            take = min(_text_left(slot), share, budget)
            if take <= 0:  # at an image: image_jobs.py decodes it on its own
                continue
            budget -= take
            piece = slot.job.tokens[start : start + take]
            for offset, token in enumerate(piece):
                is_last = start + offset == slot.n_prompt - 1
                self._put(n, token, slot.n_past + offset, slot.seq_id, is_last)
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


def _text_left(slot: Slot) -> int:
    """Prompt tokens a prefilling slot can put in a batch now: up to its next image or
    its prompt-cache checkpoint (``Slot.prefill_end``)."""
    if slot.job is None or slot.pending_token is not None or not slot.prefilling:
        return 0
    start = len(slot.cached)
    return min(slot.job.text_end(start), slot.prefill_end) - start  # or a checkpoint


def equal_share(remaining: Sequence[int], budget: int) -> int:
    """How many prompt tokens each prefilling slot takes this step, given how many each
    has left: the same for all, so that their chunks make one forward pass (see the
    module docstring); no more than the shortest needs, nor than the budget shared out,
    and at least one token while the budget lasts."""
    if not remaining or budget <= 0:
        return 0
    shortest = min(remaining)
    return max(1, min(shortest, budget // len(remaining)))
