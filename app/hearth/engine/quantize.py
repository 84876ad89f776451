"""Quantize a GGUF model with llama.cpp's own quantizer (``llama_model_quantize``).

Meant to run in its own process (``hearth --quantize SRC DST TYPE``): quantizing takes
minutes on real models, cannot be interrupted inside llama.cpp, and a crash must not take
the app down. :func:`main` prints one JSON object per line on stdout::

    {"event": "progress", "fraction": 0.25, "tensor": 12, "tensors": 48}
    {"event": "done", "path": "/.../model-Q4_K_M.gguf", "size": 4368439584}
    {"event": "error", "message": "..."}

The output is written to ``DST.part`` and renamed into place only when complete, so a
killed or failed run never leaves a file that looks like a finished model.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import llama_cpp

from hearth.core.errors import HearthError
from hearth.core.units import format_bytes
from hearth.engine.backend import ensure_backend
from hearth.engine.backend import log_callback as backend_log_callback
from hearth.library.errors import InvalidModelFileError
from hearth.library.gguf_metadata import GgufMetadata, read_metadata

log = logging.getLogger(__name__)
llama_log = logging.getLogger("hearth.llama_cpp")

QUANT_TYPES: dict[str, int] = {
    "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
    "Q6_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q6_K,
    "Q5_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_M,
    "Q5_K_S": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_S,
    "Q5_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_1,
    "Q5_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_0,
    "Q4_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M,
    "Q4_K_S": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_S,
    "Q4_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1,
    "Q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0,
    "IQ4_NL": llama_cpp.LLAMA_FTYPE_MOSTLY_IQ4_NL,
    "IQ4_XS": llama_cpp.LLAMA_FTYPE_MOSTLY_IQ4_XS,
    "Q3_K_L": llama_cpp.LLAMA_FTYPE_MOSTLY_Q3_K_L,
    "Q3_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q3_K_M,
    "Q3_K_S": llama_cpp.LLAMA_FTYPE_MOSTLY_Q3_K_S,
    "Q2_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q2_K,
    "F16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16,
    "BF16": llama_cpp.LLAMA_FTYPE_MOSTLY_BF16,
}
# Typical bits per weight of each output, to check for disk space before starting.
BITS_PER_WEIGHT = {
    "Q8_0": 8.5, "Q6_K": 6.6, "Q5_K_M": 5.7, "Q5_K_S": 5.5, "Q5_1": 6.0, "Q5_0": 5.5,
    "Q4_K_M": 4.9, "Q4_K_S": 4.6, "Q4_1": 5.0, "Q4_0": 4.5, "IQ4_NL": 4.5, "IQ4_XS": 4.3,
    "Q3_K_L": 4.3, "Q3_K_M": 3.9, "Q3_K_S": 3.5, "Q2_K": 3.4, "F16": 16.0, "BF16": 16.0,
}  # fmt: skip
SOURCE_TYPES = ("F32", "F16", "BF16")  # full-precision files worth quantizing from
_TENSOR_LINE = re.compile(rb"^\[\s*(\d+)\s*/\s*(\d+)\s*\]")

ProgressCallback = Callable[[int, int], None]  # (tensors done, tensors in all)


class QuantizeError(HearthError):
    """Quantizing failed; the message says why and what to do."""

    code = "quantize_failed"


def part_path(dst: Path) -> Path:
    return dst.with_name(dst.name + ".part")


class _ProgressLog:
    """llama.cpp log sink: forwards to logging, counts the per-tensor lines.

    llama.cpp prints ``[  12/ 291] blk.3.attn_q.weight - ... type = f16, `` when it
    starts a tensor and ends that line (``size = ...``) when the tensor is written, over
    several callback calls; text is buffered to whole lines, so a line means "done".
    """

    def __init__(self, on_progress: ProgressCallback | None) -> None:
        self._on_progress = on_progress
        self._pending = b""
        self._lock = threading.Lock()
        self.callback = llama_cpp.llama_log_callback(self._log)

    def _log(self, level: int, text: bytes | None, _user_data: ctypes.c_void_p) -> None:
        if not text:
            return
        with self._lock:
            self._pending += text
            *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            self._line(int(level), line)

    def _line(self, level: int, line: bytes) -> None:
        message = line.decode("utf-8", errors="replace").rstrip()
        if message:
            llama_log.log(logging.WARNING if level in (3, 4) else logging.DEBUG, "%s", message)
        match = _TENSOR_LINE.match(line)
        if match and self._on_progress is not None:
            try:
                self._on_progress(int(match.group(1)), int(match.group(2)))
            except Exception:
                log.exception("quantize progress callback failed")


def _check_source(src: Path, allow_requantize: bool) -> GgufMetadata:
    try:
        meta = read_metadata(src)
    except InvalidModelFileError as exc:
        raise QuantizeError(exc.message) from None
    if meta.quantization not in SOURCE_TYPES and not allow_requantize:
        raise QuantizeError(
            f"{src.name} is already quantized ({meta.quantization}). Quantizing it again "
            "loses quality; start from the F16, BF16 or F32 file."
        )
    return meta


def _check_disk_space(meta: GgufMetadata, qtype: str, folder: Path) -> None:
    needed = int(meta.parameter_count * BITS_PER_WEIGHT.get(qtype, 16.0) / 8 * 1.05)
    needed += meta.data_offset
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise QuantizeError(
            f"Quantizing to {qtype} writes about {format_bytes(needed)}, but only "
            f"{format_bytes(free)} is free in {folder}. Free some space or pick another folder."
        )


def quantize_model(
    src: Path,
    dst: Path,
    qtype: str,
    *,
    threads: int = 0,
    allow_requantize: bool = False,
    overwrite: bool = False,
    on_progress: ProgressCallback | None = None,
) -> Path:
    """Quantize ``src`` into ``dst`` as ``qtype`` ("Q4_K_M", ...); returns ``dst``."""
    src, dst = Path(src), Path(dst)
    key = qtype.upper()
    if key not in QUANT_TYPES:
        raise QuantizeError(
            f"Unknown quantization {qtype!r}; choose one of {', '.join(QUANT_TYPES)}."
        )
    if src.resolve() == dst.resolve():
        raise QuantizeError("The output file must differ from the input file.")
    if dst.exists() and not overwrite:
        raise QuantizeError(f"{dst} already exists; pick another name or delete it first.")
    meta = _check_source(src, allow_requantize)
    dst.parent.mkdir(parents=True, exist_ok=True)
    _check_disk_space(meta, key, dst.parent)
    part = part_path(dst)
    part.unlink(missing_ok=True)

    ensure_backend()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANT_TYPES[key]
    params.nthread = max(0, threads)
    params.allow_requantize = allow_requantize
    sink = _ProgressLog(on_progress)
    llama_cpp.llama_log_set(sink.callback, ctypes.c_void_p(0))
    log.info("quantizing %s (%s) to %s as %s", src.name, meta.quantization, dst, key)
    try:
        rc = llama_cpp.llama_model_quantize(
            str(src).encode("utf-8"), str(part).encode("utf-8"), ctypes.byref(params)
        )
        if rc != 0 or not part.exists():
            raise QuantizeError(
                f"llama.cpp could not quantize {src.name} to {key} (status {rc}). The file "
                "may be damaged, its architecture unsupported, or the disk full."
            )
        os.replace(part, dst)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    finally:
        _restore_logging()
    return dst


def _restore_logging() -> None:
    """Give llama.cpp's log back to the engine's usual sink."""
    llama_cpp.llama_log_set(backend_log_callback(), ctypes.c_void_p(0))


# --------------------------------------------------------------------------- subprocess


def _emit(event: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hearth --quantize", description="Quantize a GGUF model with llama.cpp."
    )
    parser.add_argument("src", type=Path, help="F16, BF16 or F32 GGUF file")
    parser.add_argument("dst", type=Path, help="output GGUF file")
    parser.add_argument("type", help=f"one of {', '.join(QUANT_TYPES)}")
    parser.add_argument("--threads", type=int, default=0, help="0: all cores")
    parser.add_argument("--allow-requantize", action="store_true")
    parser.add_argument("--overwrite", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``hearth --quantize``: JSON progress lines on stdout, exit 0 on
    success, 1 on a reported error, 2 on bad arguments."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
        )
    last = -1.0

    def progress(done: int, total: int) -> None:
        nonlocal last
        fraction = done / total if total else 0.0
        if fraction - last >= 0.005:
            last = fraction
            _emit(
                {
                    "event": "progress",
                    "fraction": round(fraction, 4),
                    "tensor": done,
                    "tensors": total,
                }
            )

    try:
        out = quantize_model(
            args.src,
            args.dst,
            args.type,
            threads=args.threads,
            allow_requantize=args.allow_requantize,
            overwrite=args.overwrite,
            on_progress=progress,
        )
    except HearthError as exc:
        _emit({"event": "error", "message": exc.message})
        return 1
    _emit({"event": "progress", "fraction": 1.0})
    _emit({"event": "done", "path": str(out), "size": out.stat().st_size})
    return 0
