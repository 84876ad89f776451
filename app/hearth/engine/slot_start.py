"""Readying a slot for the job placed in it, on the scheduler's thread.

Admission (scheduler.py) picks the slot (placement.py); this sets up what the first
decode reads: KV copied from a sibling slot, a longer prefix restored from the prompt
cache on disk, the KV cut where the new prompt leaves the cached one (never inside an
image, never where a sliding window lost it), the slot's counters reset, the draft
state, and the sampler chain, fed the prompt's tail when penalties need it.
"""

from __future__ import annotations

import logging
import time

import llama_cpp

from hearth.engine.model import LlamaModel
from hearth.engine.placement import Placement
from hearth.engine.prompt_cache import PromptCache
from hearth.engine.prompt_restore import window_kept
from hearth.engine.sampler import SamplerChain
from hearth.engine.slots import Job, Slot
from hearth.engine.speculative import Speculator
from hearth.engine.text_stream import TextStream

log = logging.getLogger(__name__)


def start_job(
    model: LlamaModel,
    slots: list[Slot],
    placement: Placement,
    job: Job,
    *,
    spec: Speculator,
    disk: PromptCache | None,
) -> str | None:
    """Ready ``placement.slot`` for ``job``. Returns why the job can't start (its
    sampler could not be built: the scheduler finishes it with that error), or None."""
    slot = placement.slot
    memory = model.memory
    for copy in placement.copies:
        llama_cpp.llama_memory_seq_cp(memory, copy.source, copy.target, -1, -1)
        spec.copy(copy.source, copy.target)
        source, target = slots[copy.source], slots[copy.target]
        target.keep(list(source.cached), source.pos_shift)
        target.last_used = source.last_used
        log.debug("slot %d: KV copied from slot %d", copy.target, copy.source)
    n_common = min(placement.n_common, len(job.tokens) - 1)  # last token needs logits
    # prompt cache: a longer prefix saved on disk than in any slot is loaded instead
    saved, job.saved = job.saved, None
    restored = disk.restore(slot.seq_id, job.tokens, n_common, saved) if disk else None
    n_common = n_common if restored is None else restored
    pos = n_common  # the KV cache is cut by position, which an image may shift
    if job.media is not None:  # never keep part of an image
        n_common = job.media.whole_prefix(n_common)
        pos = job.media.pos_at(n_common)
    cut = llama_cpp.llama_memory_seq_rm(memory, slot.seq_id, pos, -1)
    if not cut or not window_kept(model, slot.seq_id, pos):  # SWA: see there
        llama_cpp.llama_memory_seq_rm(memory, slot.seq_id, -1, -1)
        n_common = pos = 0
    slot.keep(job.tokens[:n_common], pos - n_common)
    _reset(slot, job, n_common, restored or 0)
    slot.checkpoint = disk.checkpoint_for(job.tokens, n_common, job.branch_at) if disk else 0
    # No drafts for a prompt with images: a drafter cannot read them. (So drafts
    # only ever follow text, whose positions are its indices: a text prompt's
    # prefix never reaches an image's stand-in ids, so its pos_shift is 0.)
    spec.start(slot.seq_id, job.params.speculative and job.media is None)
    try:
        slot.sampler = SamplerChain(job.params, model.n_vocab, model.vocab)
    except Exception as exc:
        return str(exc)
    params = job.params
    penalised = params.repeat_penalty != 1.0 or params.frequency_penalty or params.presence_penalty
    if penalised and not params.grammar:  # a grammar must not see the prompt
        for token in job.tokens[-params.repeat_last_n :]:
            if token >= 0:  # an image's stand-in ids are no tokens
                slot.sampler.accept(token)
    log.debug("slot %d: %d prompt tokens, %d cached", slot.seq_id, slot.n_prompt, n_common)
    return None


def _reset(slot: Slot, job: Job, n_cached: int, n_disk: int) -> None:
    """The slot's per-request counters and output state, for a new job."""
    slot.n_prompt = len(job.tokens)
    slot.n_cached_at_start = n_cached
    slot.n_disk_at_start = n_disk
    slot.image_ms = 0.0
    slot.image_tokens = 0
    slot.n_generated = 0
    slot.pending_logprobs = []
    slot.pending_token = None
    slot.generated = []
    slot.pieces = []
    slot.started_at = time.perf_counter()
    slot.first_token_at = 0.0
    slot.prompt_done_at = 0.0
    slot.stream = TextStream(job.params.stop)
