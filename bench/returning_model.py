"""A returning model: evicted and back (issue 22), Hearth against llama-server's router.

    cd bench && ../.venv/bin/python returning_model.py [--llama-server PATH] [--rounds 3]

Room for one model on both servers, and the same traffic, per round: a chat turn on
model A (a document of ``--doc-words`` words, new each round, and question 1: A is not
loaded, so this is a load and a cold prefill), a completion on model B (which evicts A),
then A again with the same document and question 2 (a load, and whatever the server
kept of A's prompt). A is Gemma 3 270M where it is on disk, else the bench model; B is
the synthesized 250M bench model.

- Hearth: ``hearth serve --max-models 1 --prompt-cache DIR`` (a fresh folder) on a
  throwaway library: an evicted model's slots are written to the prompt cache, and its
  return restores the document from there.
- llama-server's router (``--models-dir`` with links to the two files,
  ``--models-max 1``): an evicted model's process exits, and its KV cache with it.

Target: A's TTFT on its return at most 0.2x its cold TTFT (both include the load;
median of per-round ratios); llama-server's ratio on the same traffic beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from engine import CpuMeter, Server, free_port, machine, start_server
from multi_model import (
    Timed,
    chat_body,
    code_prompt,
    completion_body,
    filler,
    model_files,
    throwaway_library,
    timed,
)
from real_model_speed import eog_bias


@dataclass
class Side:
    name: str
    cold: list[Timed] = field(default_factory=list)
    back: list[Timed] = field(default_factory=list)
    other_cpu: float = 0.0

    def ratios(self) -> list[float]:
        return [b.ttft / c.ttft for c, b in zip(self.cold, self.back, strict=True)]


def traffic(url: str, side: Side, args: argparse.Namespace, names: tuple[str, str], *,
            bias: dict[str, float], seed: int) -> None:  # fmt: skip
    """One round: A cold, B (evicts A), A back."""
    chat, fim = names
    doc = filler(args.doc_words, seed=seed)
    body = chat_body(chat, doc, "Question 1: what runs past?", args.max_tokens)
    side.cold.append(timed(url, "/v1/chat/completions", {**body, "logit_bias": bias}))
    timed(url, "/v1/completions", completion_body(fim, code_prompt(seed), args.max_tokens))
    body = chat_body(chat, doc, "Question 2: who walks there?", args.max_tokens)
    side.back.append(timed(url, "/v1/chat/completions", {**body, "logit_bias": bias}))


def run_side(side: Side, server: Server, args: argparse.Namespace, names: tuple[str, str],
             bias: dict[str, float]) -> Side:  # fmt: skip
    meter = CpuMeter()
    meter.pids = [server.process.pid]
    before = meter.snapshot()
    try:
        for r in range(args.rounds):
            # B first: A is not loaded when its cold turn comes, whatever ran before
            timed(server.base_url, "/v1/completions", completion_body(names[1], "x = ", 2))
            traffic(server.base_url, side, args, names, bias=bias, seed=100 + r)
            cold, back = side.cold[-1], side.back[-1]
            print(f"{side.name} round {r + 1}: cold {cold.ttft:.3f} s {cold.timings}; back "
                  f"{back.ttft:.3f} s {back.timings}", file=sys.stderr, flush=True)  # fmt: skip
    finally:
        side.other_cpu = meter.foreign(before, meter.snapshot())
        server.stop()
    return side


def router_ids(url: str, files: tuple[Path, Path]) -> tuple[str, str]:
    """The router's model ids for the two files (it names them from the folder)."""
    listed = httpx.get(f"{url}/models", timeout=10).json()["data"]
    by_stem = {Path(m.get("path") or m["id"]).stem: m["id"] for m in listed}
    by_stem.update({m["id"]: m["id"] for m in listed})
    return by_stem[files[0].stem], by_stem[files[1].stem]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-server", default=None, help="its binary, for the router")
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="model A (default: Gemma 3 270M, else the bench model)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--doc-words", type=int, default=1800, help="~2k tokens on Gemma 3")
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--ctx", type=int, default=4096, help="per slot; 2 slots")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    files = model_files()
    files = (args.model.absolute(), files[1]) if args.model else files
    load = machine()
    threads, sides = str(args.threads), []
    with tempfile.TemporaryDirectory(prefix="hearth-bench-returning-") as tmp:
        work = Path(tmp)
        names = tuple(throwaway_library(work, list(files)))
        bias = eog_bias(files[0])
        port = free_port()
        argv = [sys.executable, "-m", "hearth", "serve", "--port", str(port),
                "--max-models", "1", "--prompt-cache", str(work / "prompt-cache"),
                "--parallel", "2", "--ctx", str(args.ctx), "--threads", threads,
                "--no-stored-keys"]  # fmt: skip
        server = start_server("hearth", argv, port, work)
        sides.append(run_side(Side("hearth"), server, args, names, bias))  # type: ignore[arg-type]
        if args.llama_server:
            models = work / "models"
            models.mkdir()
            for path in files:
                (models / path.name).symlink_to(path)
            port = free_port()
            argv = [args.llama_server, "--models-dir", str(models), "--models-max", "1",
                    "--host", "127.0.0.1", "--port", str(port), "-np", "2",
                    "-c", str(2 * args.ctx), "-t", threads, "-tb", threads]  # fmt: skip
            server = start_server("llama-server", argv, port, work)
            ids = router_ids(server.base_url, files)
            sides.append(run_side(Side("llama-server router"), server, args, ids, bias))
    print(f"A = {files[0].name}, B = {files[1].name}; document {args.doc_words} words, "
          f"{args.rounds} rounds; {load}")  # fmt: skip
    print("| server | round | A cold TTFT s | A back TTFT s | back / cold | cached tokens back |")
    print("|---|---|---|---|---|---|")
    for side in sides:
        for r, (cold, back) in enumerate(zip(side.cold, side.back, strict=True), 1):
            disk = back.timings.get("cache_disk_tokens")
            cached = f"{back.cached_tokens} of {back.prompt_tokens}"
            cached += f" ({disk} from disk)" if disk is not None else ""
            print(f"| {side.name} | {r} | {cold.ttft:.3f} | {back.ttft:.3f} | "
                  f"{back.ttft / cold.ttft:.3f} | {cached} |")  # fmt: skip
    for side in sides:
        ratio = statistics.median(side.ratios())
        if side.name == "hearth":
            verdict = "met" if ratio <= 0.2 else "MISSED"
            print(f"hearth: A back / cold TTFT, median {ratio:.3f} (target <= 0.2: {verdict}); "
                  f"other processes took {100 * side.other_cpu:.1f}% of the CPU")  # fmt: skip
        else:  # its model instances are child processes, which the meter cannot follow
            print(f"{side.name}: A back / cold TTFT, median {ratio:.3f}")
    if len(sides) == 2:
        ours = statistics.median(b.ttft for b in sides[0].back)
        theirs = statistics.median(b.ttft for b in sides[1].back)
        print(f"A back TTFT, Hearth / llama-server router: {ours / theirs:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
