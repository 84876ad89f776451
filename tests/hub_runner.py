"""Run one Hearth download in its own process, for tests that kill it or jail it.

    python tests/hub_runner.py --endpoint URL --models DIR --repo OWNER/NAME --file F
        [--fill-at BYTES --fill-path PATH]

Prints one JSON report line on stdout when it ends. With ``--fill-at``, once that many
bytes are downloaded it fills the disk by writing ``--fill-path`` until the file system
says ENOSPC, waits for the download to fail, deletes the filler, resumes the download
and reports both outcomes (used inside a private, tiny tmpfs).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import hashlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

# Run as a script, Python puts tests/ first on sys.path, where tests/hearth.py (the
# Briefcase test entry point) would shadow the hearth package: move tests/ to the end.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

from hearth.hub import DownloadEvent, DownloadManager, HubError, RetryPolicy  # noqa: E402
from hearth.hub.sidecar import part_path, sidecar_path  # noqa: E402


def _fill(path: Path) -> int:
    written = 0
    block = b"\0" * (256 * 1024)
    with open(path, "wb", buffering=0) as handle:
        while True:
            try:
                n = handle.write(block)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    return written
                raise
            if not n:
                return written
            written += n


def _state(dest: Path) -> dict[str, Any]:
    part = part_path(dest)
    return {
        "final_exists": dest.exists(),
        "part_size": part.stat().st_size if part.exists() else None,
        "part_sha256": hashlib.sha256(part.read_bytes()).hexdigest() if part.exists() else None,
        "sidecar_exists": sidecar_path(dest).exists(),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    filled = asyncio.Event()
    fill_at = args.fill_at

    def on_event(event: DownloadEvent) -> None:
        if fill_at is not None and not filled.is_set() and event.bytes_done >= fill_at:
            _fill(Path(args.fill_path))
            filled.set()

    manager = DownloadManager(
        Path(args.models),
        endpoint=args.endpoint,
        token_provider=lambda: None,
        on_event=on_event,
        retry=RetryPolicy(max_attempts=3, base_delay=0.05),
        reserve_bytes=0,
    )
    report: dict[str, Any] = {}
    try:
        handle = manager.add(args.repo, args.file)
        try:
            path = await handle.wait()
            report["first"] = {"ok": True, "path": str(path)}
        except HubError as exc:
            report["first"] = {"ok": False, "code": exc.code, "message": exc.message}
        report["after_first"] = _state(handle.dest)
        if fill_at is not None and not report["first"]["ok"]:
            os.unlink(args.fill_path)  # a small tmpfs unlink; blocking is fine here
            manager.resume(handle.id)
            path = await handle.wait()
            report["second"] = {
                "ok": True,
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            }
            report["after_second"] = _state(handle.dest)
    finally:
        await manager.aclose()
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--fill-at", type=int)
    parser.add_argument("--fill-path")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    result = asyncio.run(main(parser.parse_args()))
    sys.stdout.write(json.dumps(result) + "\n")
