"""``hearth ps``: the models loaded now, by the app or by ``hearth serve``, and where: one
row per loaded model (its memory, busy slots, pinned or when it unloads), with its
worker's own memory and prompt cache in the JSON."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from hearth.cli.console import out
from hearth.core.units import format_bytes


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ps = verbs.add_parser("ps", help="list running workers and the models they have loaded")
    ps.add_argument("--json", action="store_true", help="machine-readable output")
    ps.set_defaults(handler=run)


def _memory(pid: int) -> int | None:
    import psutil

    try:
        return int(psutil.Process(pid).memory_info().rss)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def _where(backend: object) -> str:
    if not isinstance(backend, dict):
        return "-"
    gpu, layers = backend.get("gpu_layers") or 0, backend.get("n_layer") or 0
    if not gpu:
        return "CPU"
    return "GPU" if gpu == layers else f"{gpu}/{layers} layers on GPU"


def _until(expires_at: object, now: float) -> str:
    if not isinstance(expires_at, int | float):
        return "kept loaded"
    left = max(0.0, expires_at - now)
    return f"in {left:.0f} s" if left < 120 else f"in {left / 60:.0f} min"


def _prompt_cache(status: dict[str, object]) -> int | None:
    cache = status.get("prompt_cache")
    size = cache.get("size_bytes") if isinstance(cache, dict) else None
    return size if isinstance(size, int) else None


def _model_rows(status: dict[str, Any], now: float) -> list[dict[str, Any]]:
    """One row per loaded model (a worker from before several could be loaded: its one
    model), and one for a model loading or failed; a worker with none gets one row."""
    rows = []
    for model in status.get("models") or []:
        info = model.get("info") or {}
        rows.append({
            "model": info.get("id"),
            "state": "ready",
            "processor": _where(info),
            "slots_busy": model.get("busy_slots", 0),
            "slots": info.get("n_slots", 0),
            "model_memory": model.get("memory_bytes"),
            "pinned": model.get("pinned") is True,
            "unloads": _until(model.get("expires_at"), now),
        })  # fmt: skip
    listed = {r["model"] for r in rows}
    if not rows or (status.get("state") != "ready" and status.get("model") not in listed):
        slots = status.get("slots") or []
        rows.append({
            "model": status.get("model"), "state": status.get("state"),
            "processor": _where(status.get("backend")), "slots_busy": 0, "slots": len(slots),
            "model_memory": None, "pinned": False, "unloads": "-",
        })  # fmt: skip
    return rows


def run(args: argparse.Namespace) -> int:
    from hearth.cli.workers import live_workers

    workers = live_workers()
    rows = []
    now = time.time()
    for worker in workers:
        status = worker.status
        for model in _model_rows(status, now):
            rows.append({
                "pid": worker.record.pid,
                "kind": worker.record.kind,
                "url": worker.record.base_url,
                **model,
                "memory": _memory(worker.record.pid),
                "prompt_cache": _prompt_cache(status),
            })  # fmt: skip
    if args.json:
        out(json.dumps(rows, indent=2))
        return 0
    if not rows:
        out("Nothing is running. Start the app, 'hearth serve', or 'hearth run MODEL'.")
        return 0
    header = ("MODEL", "STATE", "PROCESSOR", "SLOTS", "MEMORY", "PINNED", "PROMPT CACHE",
              "UNLOADS", "WHERE")  # fmt: skip
    table = [header] + [
        (
            str(r["model"] or "-"),
            str(r["state"]),
            str(r["processor"]),
            f"{r['slots_busy']}/{r['slots']} busy",
            format_bytes(r["model_memory"]) if isinstance(r["model_memory"], int) else "-",
            "yes" if r["pinned"] else "-",
            format_bytes(r["prompt_cache"]) if isinstance(r["prompt_cache"], int) else "-",
            str(r["unloads"]),
            f"{r['url']} ({r['kind']}, pid {r['pid']})",
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        out("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0
