"""The compute devices llama.cpp sees (CPU, CUDA, Metal, Vulkan...), via ggml's registry.

llama-cpp-python does not bind ggml's device API, so the few functions needed are
declared here on the ggml library it already loaded.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from typing import Any

from hearth.core.model_info import ComputeDevice

log = logging.getLogger(__name__)

_DEVICE_TYPES = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel"}


@functools.cache
def _ggml() -> Any:
    from llama_cpp import _ggml as ggml_module

    lib = ggml_module.libggml
    lib.ggml_backend_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    lib.ggml_backend_dev_get.restype = ctypes.c_void_p
    for name in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
        getattr(lib, name).restype = ctypes.c_char_p
    lib.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_type.restype = ctypes.c_int
    lib.ggml_backend_dev_memory.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_size_t),
    ]
    lib.ggml_backend_dev_memory.restype = None
    return lib


def list_devices() -> tuple[ComputeDevice, ...]:
    """Every device registered with ggml; empty if the library lacks the device API."""
    try:
        lib = _ggml()
    except (AttributeError, OSError, ImportError):
        log.warning("this llama.cpp build does not expose ggml's device registry")
        return ()
    devices = []
    for index in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(index)
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        devices.append(
            ComputeDevice(
                name=(lib.ggml_backend_dev_name(dev) or b"").decode(errors="replace"),
                description=(lib.ggml_backend_dev_description(dev) or b"").decode(errors="replace"),
                kind=_DEVICE_TYPES.get(int(lib.ggml_backend_dev_type(dev)), "unknown"),
                memory_free=int(free.value),
                memory_total=int(total.value),
            )
        )
    return tuple(devices)


def offloaded_layers(requested: int, n_layer: int, devices: tuple[ComputeDevice, ...]) -> int:
    """Layers llama.cpp puts on a GPU: none without one; -1 (or more than exist) = all."""
    if not any(d.kind in ("gpu", "igpu") for d in devices):
        return 0
    if requested < 0 or requested > n_layer:
        return n_layer
    return requested
