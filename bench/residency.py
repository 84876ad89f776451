"""Continue's pattern: a chat model with a long system prompt and a completion model,
used in turn, on one `hearth serve`; with room for one model (`--max-models 1`, how
Hearth worked before several could be loaded: every switch reloads) and with the
default residency (both stay loaded).

    .venv/bin/python bench/residency.py [--rounds 4] [--system-tokens 1000]

The chat model is Gemma 3 270M when the real-model bench has fetched it
(~/.cache/hearth-bench/gemma-3-270m-q4_k_m.gguf), else the synthesized bench model;
the completion model is the synthesized 250M bench model. Both are imported into a
throwaway library (HEARTH_DATA_DIR), and neither server keeps a prompt cache, so the
numbers are the residency's alone. It prints the loads each server made, the chat's
cold TTFT and its TTFT after a completion, and the completion's TTFT.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from engine import free_port, start_server
from gguf_synth import CACHE_DIR, ensure_bench_model

WORDS = [
    "the", "river", "runs", "past", "old", "stone", "walls", "while", "people", "walk",
    "dogs", "and", "talk", "about", "weather", "markets", "books", "music", "food",
    "gardens", "trains", "long", "summer", "evenings",
]  # fmt: skip


def system_prompt(n_words: int) -> str:
    return "You are a careful assistant. Context follows. " + " ".join(
        WORDS[(i * 7) % len(WORDS)] for i in range(n_words)
    )


def ttft(url: str, path: str, body: dict[str, object]) -> float:
    """Seconds to the first streamed chunk with text."""
    started = time.perf_counter()
    with httpx.stream("POST", f"{url}{path}", json={**body, "stream": True}, timeout=600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            choice = json.loads(line[6:])["choices"][0]
            if choice.get("text") or (choice.get("delta") or {}).get("content"):
                return time.perf_counter() - started
    return time.perf_counter() - started


def run(
    label: str, extra: list[str], args: argparse.Namespace, models: tuple[str, str], work: Path
) -> dict[str, object]:
    chat, fim = models
    port = free_port()
    argv = [sys.executable, "-m", "hearth", "serve", "--port", str(port), "--ctx", "2048",
            "--parallel", "2", "--threads", str(args.threads), "--prompt-cache", "off",
            *extra]  # fmt: skip
    server = start_server(label, argv, port, work)
    url = server.base_url
    system = system_prompt(args.system_words)
    chats: list[float] = []
    completions: list[float] = []
    try:
        for round_ in range(args.rounds):
            question = f"Question {round_}: what runs past?"
            messages = [{"role": "system", "content": system},
                        {"role": "user", "content": question}]  # fmt: skip
            chats.append(ttft(url, "/v1/chat/completions",
                              {"model": chat, "messages": messages, "max_tokens": 4}))  # fmt: skip
            completions.append(ttft(url, "/v1/completions",
                                    {"model": fim, "prompt": f"def f{round_}(x):",
                                     "max_tokens": 4}))  # fmt: skip
        status = httpx.get(f"{url}/hearth/v1/status", timeout=10).json()
    finally:
        server.stop()
    return {"label": label, "loads": status["load_id"], "requests": 2 * args.rounds,
            "chat_cold": chats[0], "chat_after": statistics.median(chats[1:]),
            "completion": statistics.median(completions[1:])}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--system-words", type=int, default=900, help="~1k tokens")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hearth-bench-residency-") as tmp:
        work = Path(tmp)
        os.environ["HEARTH_DATA_DIR"] = str(work / "data")
        os.environ["HEARTH_CONFIG_DIR"] = str(work / "config")
        from hearth.library.library import Library  # after the folders are set

        completion_model = ensure_bench_model()
        gemma = CACHE_DIR / "gemma-3-270m-q4_k_m.gguf"
        chat_model = gemma if gemma.exists() else completion_model
        library = Library()
        for path in {chat_model, completion_model}:
            library.import_in_place(path)
        chat, fim = chat_model.stem, completion_model.stem
        rows = [run("one model (--max-models 1)", ["--max-models", "1"], args, (chat, fim), work),
                run("residency (default)", [], args, (chat, fim), work)]  # fmt: skip
    print(f"chat model {chat}, completion model {fim}, {args.rounds} rounds")
    print(f"{'server':28} {'loads':>9} {'chat cold':>10} {'chat after':>11} {'ratio':>6} "
          f"{'completion':>11}")  # fmt: skip
    for row in rows:
        ratio = float(row["chat_after"]) / float(row["chat_cold"])  # type: ignore[arg-type]
        print(f"{row['label']:28} {row['loads']:>4}/{row['requests']:<4} "
              f"{row['chat_cold']:>9.3f}s {row['chat_after']:>10.3f}s {ratio:>6.2f} "
              f"{row['completion']:>10.3f}s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
