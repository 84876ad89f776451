"""The GIL-keeping llama.cpp calls: bound to the same symbols, without releasing the GIL."""

from __future__ import annotations

import ctypes

import llama_cpp

from hearth.engine import native


def test_short_calls_are_bound_through_pydll_with_the_same_signature() -> None:
    bound = native._decode_keeping_gil
    assert bound is not llama_cpp.llama_decode
    # FUNCFLAG_PYTHONAPI: ctypes holds the GIL around the call (PyDLL's calling mode).
    assert bound._flags_ & ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]
    assert bound.argtypes == llama_cpp.llama_decode.argtypes
    assert bound.restype == llama_cpp.llama_decode.restype
    assert native.get_logits_ith._flags_ & ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]


def test_a_function_that_cannot_be_rebound_is_kept_as_it_is() -> None:
    def plain_python(_x: int) -> int:
        return _x

    assert native._keeping_gil(plain_python) is plain_python
