"""Prompt cache benchmark: TTFT of a long prompt after a restart, restored from disk vs cold,
beside llama-server's manual slot save and restore of the same prompt.

    .venv/bin/python bench/prompt_cache.py [--model M.gguf] [--tokens 8000] [--rounds 3] \\
        [--llama-server /work/llama-server-build/bin/llama-server [--llama-server-rounds N]]

On the real Gemma 3 270M (bench/real_model.py) unless --model names another GGUF, with
one slot, a context of TOKENS+512 and --threads 2 for both servers. Per round:

1. Hearth A (`hearth serve`, a fresh cache folder) answers PROMPT + QUESTION_1 cold (its
   TTFT includes copying the state out for the disk), then PROMPT + QUESTION_2, and
   stops: the state is saved;
2. Hearth B, a new process on that folder, answers PROMPT + QUESTION_2: the prompt is
   restored from disk, only the question is prefilled;
3. the reference reply B's must equal, token for token (greedy): server A's own answer
   to PROMPT + QUESTION_2 after QUESTION_1 (from its memory), or with --cold-reference
   that of Hearth C, with `--prompt-cache off`, after the rounds (one more cold prefill;
   tests/integration/test_prompt_cache_real_model.py holds a shorter one to it);
4. llama-server L1 (`--slot-save-path`) answers PROMPT + QUESTION_1 cold, then is told
   `POST /slots/0?action=save`, and stops; L2, a new process on that folder, is told
   `POST /slots/0?action=restore` and answers PROMPT + QUESTION_2. Its restored TTFT
   counts the restore request too: a client has to send it, and know when to.

TTFT is from sending the request to the first streamed text (httpx, a new connection).
It prints each round's TTFTs and ratios (restored / cold of the same server; target for
Hearth: at most 0.1x), and the medians; the exit status is 1 if a Hearth reply after a
restart differs from the cold reference.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import llama_cpp

from engine import free_port, long_prompt, start_server
from real_model import ensure_real_model

QUESTIONS = (" Now, in one line: what was the first word of all this?",
             " And which word came up most often?")  # fmt: skip
SLOT_FILE = "prompt.bin"


@dataclass
class Reply:
    ttft_s: float
    text: str
    prompt_tokens: int
    cached_tokens: int
    disk_tokens: int


def ask(base_url: str, *, model: str, prompt: str, max_tokens: int) -> Reply:
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}  # fmt: skip
    text: list[str] = []
    first = 0.0
    usage: dict[str, object] = {}
    timings: dict[str, object] = {}
    started = time.perf_counter()
    with httpx.Client(timeout=3600) as client, client.stream(
        "POST", f"{base_url}/v1/completions", json=body
    ) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{response.status_code}: {response.read().decode()}")
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            for choice in event.get("choices") or []:
                if choice.get("text"):
                    first = first or time.perf_counter()
                    text.append(choice["text"])
            usage = event.get("usage") or usage
            timings = event.get("timings") or timings
    details = usage.get("prompt_tokens_details") or {}
    assert isinstance(details, dict)
    return Reply(
        ttft_s=(first or time.perf_counter()) - started,
        text="".join(text),
        prompt_tokens=int(str(usage.get("prompt_tokens", 0))),
        cached_tokens=int(details.get("cached_tokens") or 0),
        disk_tokens=int(str(timings.get("cache_disk_tokens", 0))),
    )


def slot_action(base_url: str, action: str) -> dict[str, Any]:
    """llama-server's manual slot save or restore of slot 0, to or from SLOT_FILE."""
    response = httpx.post(f"{base_url}/slots/0", params={"action": action},
                          json={"filename": SLOT_FILE}, timeout=3600)  # fmt: skip
    if response.status_code != 200:
        raise RuntimeError(f"llama-server {action}: {response.status_code} {response.text}")
    result: dict[str, Any] = response.json()
    return result


def hearth_argv(args: argparse.Namespace, model: Path, port: int, cache: str) -> list[str]:
    return [
        sys.executable, "-m", "hearth", "serve", "--model", str(model), "--port", str(port),
        "--parallel", "1", "--ctx", str(args.tokens + 512), "--threads", str(args.threads),
        "--prompt-cache", cache, "--no-stored-keys",
    ]  # fmt: skip


def llama_server_argv(args: argparse.Namespace, model: Path, port: int, slots: Path) -> list[str]:
    return [
        str(args.llama_server), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
        "-np", "1", "-c", str(args.tokens + 512), "-t", str(args.threads),
        "-tb", str(args.threads), "--slot-save-path", str(slots),
    ]  # fmt: skip


@dataclass
class Round:
    hearth_cold: Reply
    hearth_restored: Reply
    hearth_reference: Reply  # server A's reply to QUESTION_2, from its memory
    llama_cold: Reply | None = None
    llama_restored: Reply | None = None
    llama_restore_s: float = 0.0
    llama_n_restored: int = 0

    @property
    def hearth_ratio(self) -> float:
        return self.hearth_restored.ttft_s / self.hearth_cold.ttft_s

    @property
    def llama_ratio(self) -> float | None:
        if self.llama_cold is None or self.llama_restored is None:
            return None
        return (self.llama_restore_s + self.llama_restored.ttft_s) / self.llama_cold.ttft_s


class Bench:
    def __init__(self, args: argparse.Namespace, model: Path, work: Path, prompt: str) -> None:
        self.args, self.model, self.work, self.prompt = args, model, work, prompt
        self.ask = functools.partial(ask, model=model.stem, max_tokens=args.max_tokens)

    def hearth(self, name: str, cache: str, *questions: str) -> list[Reply]:
        """One server's replies to PROMPT + each question in turn."""
        port = free_port()
        server = start_server(name, hearth_argv(self.args, self.model, port, cache), port,
                              self.work)  # fmt: skip
        try:
            return [self.ask(server.base_url, prompt=self.prompt + q) for q in questions]
        finally:
            server.stop()  # the cache is written out before the process exits

    def llama_server(self, round_: Round, slots: Path) -> None:
        port = free_port()
        argv = llama_server_argv(self.args, self.model, port, slots)
        first = start_server(f"llama-server-1-{slots.name}", argv, port, self.work)
        try:
            round_.llama_cold = self.ask(first.base_url, prompt=self.prompt + QUESTIONS[0])
            slot_action(first.base_url, "save")
        finally:
            first.stop()
        port = free_port()
        argv = llama_server_argv(self.args, self.model, port, slots)
        second = start_server(f"llama-server-2-{slots.name}", argv, port, self.work)
        try:
            started = time.perf_counter()
            restored = slot_action(second.base_url, "restore")
            round_.llama_restore_s = time.perf_counter() - started
            round_.llama_n_restored = int(restored.get("n_restored", 0))
            round_.llama_restored = self.ask(second.base_url, prompt=self.prompt + QUESTIONS[1])
        finally:
            second.stop()

    def run_round(self, index: int) -> Round:
        cache = self.work / f"cache-{index}"
        cold, reference = self.hearth(f"hearth-a-{index}", str(cache), *QUESTIONS)
        [restored] = self.hearth(f"hearth-b-{index}", str(cache), QUESTIONS[1])
        result = Round(cold, restored, reference)
        size = sum(p.stat().st_size for p in cache.glob("*.kv"))
        print(f"round {index + 1}: prompt {cold.prompt_tokens} tokens; Hearth cold TTFT "
              f"{cold.ttft_s:.3f} s, after restart {restored.ttft_s:.3f} s "
              f"({restored.disk_tokens} tokens from disk, {restored.cached_tokens} cached; "
              f"cache {size / 2**20:.1f} MiB): {result.hearth_ratio:.4f}x; same reply as "
              f"server A's: {restored.text == reference.text}", flush=True)  # fmt: skip
        if self.args.llama_server and index < self.args.llama_server_rounds:
            slots = self.work / f"slots-{index}"
            slots.mkdir()
            self.llama_server(result, slots)
            assert result.llama_cold and result.llama_restored
            size = sum(p.stat().st_size for p in slots.iterdir())
            print(f"round {index + 1}: llama-server cold TTFT {result.llama_cold.ttft_s:.3f} s, "
                  f"after restart: restore {result.llama_restore_s:.3f} s "
                  f"({result.llama_n_restored} tokens, {size / 2**20:.1f} MiB) + TTFT "
                  f"{result.llama_restored.ttft_s:.3f} s: {result.llama_ratio:.4f}x",
                  flush=True)  # fmt: skip
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="default: Gemma 3 270M")
    parser.add_argument("--tokens", type=int, default=8000, help="about this long a prompt")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--llama-server", type=Path, default=None,
                        help="llama.cpp's llama-server, to compare its manual slot save "
                        "and restore")  # fmt: skip
    parser.add_argument("--llama-server-rounds", type=int, default=1_000_000, metavar="N",
                        help="compare with llama-server in the first N rounds only "
                        "(it prefills cold twice a round)")  # fmt: skip
    parser.add_argument("--cold-reference", action="store_true",
                        help="take the reference reply from a server with the cache off "
                        "(one more cold prefill) instead of server A's memory")  # fmt: skip
    args = parser.parse_args()
    model = args.model or ensure_real_model()
    vocab = llama_cpp.Llama(str(model), vocab_only=True, verbose=False)
    prompt, _ = long_prompt(vocab, "prompt-cache", args.tokens)
    with tempfile.TemporaryDirectory(prefix="hearth-prompt-cache-bench-") as tmp:
        bench = Bench(args, model, Path(tmp), prompt)
        rounds = [bench.run_round(i) for i in range(args.rounds)]
        reference = rounds[0].hearth_reference
        if args.cold_reference:
            [reference] = bench.hearth("hearth-c", "off", QUESTIONS[1])
            print(f"Hearth cold reference (cache off) TTFT {reference.ttft_s:.3f} s")
    same = [r.hearth_restored.text == reference.text for r in rounds]
    hearth = statistics.median(r.hearth_ratio for r in rounds)
    verdict = "meets" if hearth <= 0.1 else "misses"
    print(f"Hearth: TTFT after restart vs cold {hearth:.4f}x (median of {len(rounds)}), "
          f"{verdict} the 0.1x target; greedy replies identical to the reference: "
          f"{sum(same)} of {len(same)}")  # fmt: skip
    llama = [r.llama_ratio for r in rounds if r.llama_ratio is not None]
    if llama:
        llama_same = sum(r.llama_restored is not None and r.llama_restored.text == reference.text
                         for r in rounds)  # fmt: skip
        print(f"llama-server (manual save + restore): {statistics.median(llama):.4f}x "
              f"(median of {len(llama)}); replies equal to Hearth's reference: "
              f"{llama_same} of {len(llama)}")  # fmt: skip
        print(f"Hearth ratio / llama-server ratio: {hearth / statistics.median(llama):.2f}")
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
