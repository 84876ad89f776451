"""``hearth ps``: the models loaded now, by the app or by ``hearth serve``, and where."""

from __future__ import annotations

import argparse
import json

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


def _where(status: dict[str, object]) -> str:
    backend = status.get("backend")
    if not isinstance(backend, dict):
        return "-"
    gpu, layers = backend.get("gpu_layers") or 0, backend.get("n_layer") or 0
    if not gpu:
        return "CPU"
    return "GPU" if gpu == layers else f"{gpu}/{layers} layers on GPU"


def _until(status: dict[str, object]) -> str:
    expires = status.get("expires_in_s")
    if not status.get("model"):
        return "-"
    if not isinstance(expires, int | float):
        return "kept loaded"
    return f"in {expires:.0f} s" if expires < 120 else f"in {expires / 60:.0f} min"


def run(args: argparse.Namespace) -> int:
    from hearth.cli.workers import live_workers

    workers = live_workers()
    rows = []
    for worker in workers:
        status = worker.status
        slots = status.get("slots") or []
        rows.append({
            "pid": worker.record.pid,
            "kind": worker.record.kind,
            "url": worker.record.base_url,
            "model": status.get("model"),
            "state": status.get("state"),
            "processor": _where(status),
            "slots_busy": sum(1 for s in slots if s.get("busy")),
            "slots": len(slots),
            "memory": _memory(worker.record.pid),
            "unloads": _until(status),
        })  # fmt: skip
    if args.json:
        out(json.dumps(rows, indent=2))
        return 0
    if not rows:
        out("Nothing is running. Start the app, 'hearth serve', or 'hearth run MODEL'.")
        return 0
    header = ("MODEL", "STATE", "PROCESSOR", "SLOTS", "MEMORY", "UNLOADS", "WHERE")
    table = [header] + [
        (
            str(r["model"] or "-"),
            str(r["state"]),
            str(r["processor"]),
            f"{r['slots_busy']}/{r['slots']} busy",
            format_bytes(r["memory"]) if isinstance(r["memory"], int) else "?",
            str(r["unloads"]),
            f"{r['url']} ({r['kind']}, pid {r['pid']})",
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        out("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0
