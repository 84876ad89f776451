"""What a draft of ``k`` tokens is expected to gain: the arithmetic of speculation's rule.

speculative.py decides per slot and step; this module holds the pieces that are pure
numbers: the expected tokens of a step that verifies ``k`` drafts, the step times it is
weighed against (learned per batch size), and the length that pays best.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

MIN_GAIN = 1.05  # expected speed-up a draft must promise; covers estimation error
DEFAULT_TOKEN_COST = 0.1  # one more token in a decode, as a share of a 1-token decode
SPIKE = 4.0  # a size's only sample, this many times its neighbours' estimate: a fluke
SLOWEST = 2.0  # a slower sample counts as at most this many times the estimate


class StepCost:
    """How long a decode of ``n`` tokens takes, learned per batch size from decode-only
    steps (an average that follows recent steps).

    A straight line does not fit: on the dev CPU a 2-token step took 3.4 times a 1-token
    step and a 17-token step 6.6 times (a different matmul path for batches), so the
    rule must know each size. Sizes not seen yet are interpolated between the nearest
    seen ones; above them, each extra token is assumed to cost ``DEFAULT_TOKEN_COST`` of
    a 1-token step: optimistic, so they get tried and then measured. Below them, a
    decode costs its share of the smallest one measured: never more, which would make
    drafting look better than it is.

    Another process taking the core only ever slows a step down (on the busy 2-core
    dev machine the test models' 1.5 ms steps were measured at 77 ms now and then, and
    3 ms ones at 660 ms with two threads). So a quicker sample replaces the estimate
    while a slower one moves it a little (as if at most ``SLOWEST`` times it), and a
    size measured only once, at over ``SPIKE`` times what its neighbours say, counts as
    they say until measured again: one slow moment must not rule a draft length out
    until the size is forgotten. (Real structure stays below that: on the dev CPU a
    2-token step costs 3.1 times the estimate from a 1-token one.)
    """

    def __init__(self, weight: float = 0.2, max_age: int = 256) -> None:
        self._weight = weight
        self._max_age = max_age  # steps after which a size not seen again is forgotten
        self._step = 0
        self._seconds: dict[int, float] = {}
        self._seen: dict[int, int] = {}
        self._samples: dict[int, int] = {}

    def record(self, n_tokens: int, seconds: float) -> None:
        old = self._seconds.get(n_tokens)
        w = self._weight
        if old is None or seconds < old:
            self._seconds[n_tokens] = seconds
        else:
            self._seconds[n_tokens] = old * (1 - w) + min(seconds, SLOWEST * old) * w
        self._samples[n_tokens] = self._samples.get(n_tokens, 0) + 1
        self._step += 1
        self._seen[n_tokens] = self._step
        smallest = min(self._seconds)  # the plain step, which a slot that drafts every
        stale = [  # step never measures again: kept, as drafting is judged against it
            n for n, at in self._seen.items() if self._step - at > self._max_age and n != smallest
        ]
        for n in stale:  # forgotten here, so that reading stays a lookup
            del self._seconds[n], self._seen[n], self._samples[n]

    def plain(self, n_tokens: int) -> float | None:
        """The time of a step of ``n_tokens`` without drafts, which drafting must beat:
        never more than any larger decode measured, since overrating it (a busy moment
        that a slot drafting every step never measures again) makes every draft look
        worthwhile."""
        own = self.seconds(n_tokens)
        larger = [t for n, t in self._seconds.items() if n > n_tokens]
        return min([own, *larger]) if own is not None else None

    def seconds(self, n_tokens: int) -> float | None:
        """The expected time of an ``n_tokens`` decode; None before any measurement."""
        known = self._seconds.get(n_tokens)
        if known is None:
            return self._estimate(n_tokens, self._seconds)
        if self._samples[n_tokens] > 1 or n_tokens == min(self._seconds):
            return known  # (the plain step is capped by plain() instead)
        others = {n: t for n, t in self._seconds.items() if n != n_tokens}
        guess = self._estimate(n_tokens, others)
        return guess if guess is not None and known > SPIKE * guess else known

    @staticmethod
    def _estimate(n_tokens: int, known: dict[int, float]) -> float | None:
        """``n_tokens`` from the sizes in ``known`` (see the class docstring)."""
        if not known:
            return None
        if n_tokens in known:
            return known[n_tokens]
        below = [n for n in known if n < n_tokens]
        above = [n for n in known if n > n_tokens]
        if below and above:
            lo, hi = max(below), min(above)
            share = (n_tokens - lo) / (hi - lo)
            return known[lo] + (known[hi] - known[lo]) * share
        base = min(known)
        per_token = known[base] / base
        if not below:
            return per_token * n_tokens
        edge = max(below)
        return known[edge] + per_token * DEFAULT_TOKEN_COST * (n_tokens - edge)


def expected_tokens(p: float, k: int) -> float:
    """Tokens a step yields when ``k`` drafts each pass with probability ``p``."""
    if p >= 1.0:
        return float(k + 1)
    return (1.0 - p ** (k + 1)) / (1.0 - p)


def best_draft_length(
    p: float,
    step: Callable[[int], float],
    draft_s: float,
    k_min: int,
    k_max: int,
    *,
    others: int = 0,
) -> int:
    """The draft length with the best expected tokens per second for the whole step, or
    0 when none beats plain decoding by ``MIN_GAIN``. ``step(k)``: the step's time with
    ``k`` more tokens (``step(0)`` is the plain step); ``draft_s``: the drafter's time
    per token; ``others``: the other streams' tokens in the step, which a longer step
    slows down too (so with many streams, drafting must pay for all of them)."""
    plain = step(0)
    best_k, best_gain = 0, MIN_GAIN
    for k in range(max(k_min, 1), k_max + 1):
        tokens = others + expected_tokens(p, k)
        gain = tokens * plain / ((others + 1) * (step(k) + k * draft_s))
        if gain > best_gain:
            best_k, best_gain = k, gain
    return best_k
