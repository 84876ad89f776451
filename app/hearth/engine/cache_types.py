"""KV-cache element types by the names llama.cpp's tools use (``-ctk q8_0``)."""

from __future__ import annotations

import llama_cpp

from hearth.core.errors import InvalidRequestError

_TYPES = {
    "f32": llama_cpp.GGML_TYPE_F32,
    "f16": llama_cpp.GGML_TYPE_F16,
    "bf16": 30,  # GGML_TYPE_BF16; llama-cpp-python does not export the name
    "q8_0": llama_cpp.GGML_TYPE_Q8_0,
    "q5_1": llama_cpp.GGML_TYPE_Q5_1,
    "q5_0": llama_cpp.GGML_TYPE_Q5_0,
    "q4_1": llama_cpp.GGML_TYPE_Q4_1,
    "q4_0": llama_cpp.GGML_TYPE_Q4_0,
    "iq4_nl": llama_cpp.GGML_TYPE_IQ4_NL,
}

CACHE_TYPE_NAMES = tuple(_TYPES)


def ggml_type_for(name: str) -> int:
    try:
        return int(_TYPES[name.lower()])
    except KeyError:
        raise InvalidRequestError(
            f"Unknown KV-cache type {name!r}; choose one of {', '.join(CACHE_TYPE_NAMES)}."
        ) from None
