"""llama.cpp calls that keep the GIL, for short calls on the scheduler's critical path.

ctypes releases the GIL around every foreign call. Around a long call (the target's
decode) that is what lets the event relay and the server's event loop format and send
the last step's tokens meanwhile, on the other core. Around a short one it is an
opening: another thread takes the GIL, and when the call returns the scheduler waits
until that thread lets go (up to CPython's 5 ms switch interval, when it is busy in
Python). A speculative step makes sixteen one-token draft-model decodes (0.35 ms each
on the dev CPU) while the server streams the seventeen tokens of the step before: on
the 2-core dev machine, behind ``hearth serve``, the sixteen took 7.0 ms through plain
ctypes against 5.6 ms in-process, with the step's other bookkeeping slowed alike.
Holding the GIL through those calls moves the server's work into the target's decode,
where it overlaps instead of interleaving.

Only for calls that are short and never wait on another Python thread: llama.cpp's
log callback re-enters Python, which is safe on the thread that holds the GIL.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any, TypeVar

import llama_cpp
import llama_cpp.llama_cpp as llama_lib

log = logging.getLogger(__name__)

F = TypeVar("F")


def _keeping_gil(function: F) -> F:
    """``function`` (a ctypes function of libllama) bound again through ``PyDLL``,
    which does not release the GIL; ``function`` itself when that is not possible (a
    llama-cpp-python that loads its library differently)."""
    lib = getattr(llama_lib, "_lib", None)
    name = getattr(function, "__name__", None)
    if not isinstance(lib, ctypes.CDLL) or not isinstance(name, str):
        log.info("libllama not found as a ctypes.CDLL: native calls release the GIL")
        return function
    try:
        bound: Any = getattr(ctypes.PyDLL(lib._name, handle=lib._handle), name)
    except (AttributeError, OSError):
        return function
    bound.argtypes = getattr(function, "argtypes", None)
    bound.restype = getattr(function, "restype", None)
    result: F = bound
    return result


SHORT_DECODE = 16  # tokens: a decode this small is short on any model a draft would be

_decode_keeping_gil = _keeping_gil(llama_cpp.llama_decode)


def decode(ctx: llama_cpp.llama_context_p, batch: llama_cpp.llama_batch) -> int:
    """``llama_decode``, keeping the GIL when the batch is small (a draft model's step),
    releasing it for a long prompt, which must not hold up the other threads."""
    if batch.n_tokens <= SHORT_DECODE:
        return int(_decode_keeping_gil(ctx, batch))
    return int(llama_cpp.llama_decode(ctx, batch))


get_logits_ith = _keeping_gil(llama_cpp.llama_get_logits_ith)
