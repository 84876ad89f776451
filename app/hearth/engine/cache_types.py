"""KV-cache types as llama.cpp's context parameters take them (``type_k``/``type_v``).

The table itself (names, ``ggml_type`` values, bytes) is :mod:`hearth.core.quantization`,
shared with the memory-fit estimate; here it only becomes the plain ``int`` ctypes wants.
"""

from __future__ import annotations

from hearth.core.quantization import kv_cache_type


def ggml_type_for(name: str) -> int:
    """``"q8_0"`` -> ``GGML_TYPE_Q8_0``; an unknown name is a 400 (InvalidRequestError)."""
    return int(kv_cache_type(name))
