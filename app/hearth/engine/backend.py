"""Process-wide llama.cpp set-up: backend init, log routing, thread counts."""

from __future__ import annotations

import ctypes
import functools
import json
import logging
import os

import llama_cpp

log = logging.getLogger("hearth.llama_cpp")

_LEVELS = {  # ggml_log_level: NONE=0, DEBUG=1, INFO=2, WARN=3, ERROR=4, CONT=5
    1: logging.DEBUG,
    2: logging.INFO,
    3: logging.WARNING,
    4: logging.ERROR,
}


def _forward_log(level: int, text: bytes | None, _user_data: ctypes.c_void_p) -> None:
    if not text:
        return
    message = text.decode("utf-8", errors="replace").rstrip()
    if message:
        log.log(_LEVELS.get(int(level), logging.DEBUG), "%s", message)


@functools.cache
def log_callback() -> object:
    """The one ctypes callback that forwards llama.cpp's logs (and libmtmd's, which
    has its own setter), kept alive for the life of the process."""
    return llama_cpp.llama_log_callback(_forward_log)


@functools.cache
def ensure_backend() -> None:
    """Initialise llama.cpp once per process and route its logging to ours."""
    llama_cpp.llama_log_set(log_callback(), ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()


def resolve_threads(requested: int) -> int:
    """0 means "pick": physical cores, since hyperthreads slow llama.cpp's matmuls."""
    if requested > 0:
        return requested
    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
    except ImportError:
        physical = None
    return max(1, physical or os.cpu_count() or 1)


def system_info() -> str:
    """llama.cpp's own description of the compute backends it was built with."""
    raw = llama_cpp.llama_print_system_info()
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)


def supports_gpu_offload() -> bool:
    return bool(llama_cpp.llama_supports_gpu_offload())


def describe_json() -> str:
    """One JSON line for ``hearth --backend-info`` (read by supervisor/backend_probe)."""
    return json.dumps({"system_info": system_info(), "gpu_offload": supports_gpu_offload()})
