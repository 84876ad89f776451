"""Images through Hearth against llama-server on the same model and projector (issue 23).

    .venv/bin/python bench/vision.py --llama-server /work/llama-server-build/bin/llama-server

The pair: gemma-3-270m (``~/.cache/hearth-test/real-model``, or ``--model``) with a
synthetic gemma3 projector of that width (tests/gguf_projector.py: seeded random weights,
a 6-layer ViT at 448 px, 64 image tokens), written once to ``~/.cache/hearth-bench``.
Two targets, each measured on both servers in the same run, ``--rounds`` times:

- a follow-up turn about the same picture: its TTFT over the first turn's (target
  at most 0.1: the image and the turn before it come from the slot's cache);
- 4 text streams decoding while a request with an image arrives: their tok/s from the
  image request's send to its last token, over their tok/s before it (and Hearth's
  over llama-server's: the target is at least 1).

Medians of per-round ratios; a shared machine makes single numbers noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import gguf
import httpx
import numpy as np
from PIL import Image

from engine import Server, free_port, machine, start_server

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
import gguf_projector  # the tests' projector writer

CACHE = Path.home() / ".cache" / "hearth-bench"
REAL_MODEL = Path.home() / ".cache" / "hearth-test" / "real-model" / "gemma-3-270m-q4_k_m.gguf"
STREAMS = 4
WARM = 8  # chunks each text stream has streamed before the image request is sent


def projector_for(model: Path) -> Path:
    reader = gguf.GGUFReader(model, "r")
    arch = str(reader.fields["general.architecture"].contents())
    width = int(reader.fields[f"{arch}.embedding_length"].contents())  # type: ignore[arg-type]
    spec = gguf_projector.ProjectorSpec(text_n_embd=width, n_embd=384, n_ff=1536, n_layer=6,
                                        n_head=6, image_size=448, patch_size=14,
                                        scale_factor=4)  # fmt: skip
    path = CACHE / f"mmproj-bench-{width}-{spec.n_image_tokens}-F16.gguf"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        gguf_projector.write_projector(path, spec)
    return path


def picture(seed: int) -> str:
    pixels = np.random.default_rng(seed).integers(0, 256, (448, 448, 3), dtype=np.uint8)
    data = io.BytesIO()
    Image.fromarray(pixels).save(data, "PNG")
    return "data:image/png;base64," + base64.b64encode(data.getvalue()).decode()


def image_turn(seed: int, text: str) -> dict[str, object]:
    return {"role": "user", "content": [
        {"type": "text", "text": text},
        {"type": "image_url", "image_url": {"url": picture(seed)}},
    ]}  # fmt: skip


async def stream(
    client: httpx.AsyncClient,
    url: str,
    messages: list[object],
    max_tokens: int,
    *,
    running: asyncio.Event | None = None,
    times: list[float] | None = None,
) -> tuple[float, list[float], str]:
    """(send time, arrival time of each content chunk, the text) of one streamed chat;
    ``running`` is set once it has streamed ``WARM`` chunks, and ``times`` (if given)
    fills as chunks arrive, for a stream that is cancelled midway."""
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "logit_bias": {"1": -100, "106": -100}}  # fmt: skip
    sent, parts = time.perf_counter(), []
    times = [] if times is None else times
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as reply:
        assert reply.status_code == 200, await reply.aread()
        async for line in reply.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            piece = choices[0].get("delta", {}).get("content")
            if piece:
                times.append(time.perf_counter())
                parts.append(piece)
                if running is not None and len(times) == WARM:
                    running.set()
    if running is not None:  # a stream that ended early must not hold the bench up
        running.set()
    return sent, times, "".join(parts)


async def follow_up_ratio(url: str, seed: int) -> float:
    async with httpx.AsyncClient(timeout=600) as client:
        first = [image_turn(seed, "Describe this picture in detail.")]
        sent, times, reply = await stream(client, url, first, 16)
        ttft_first = times[0] - sent
        again = [*first, {"role": "assistant", "content": reply},
                 {"role": "user", "content": "And its colours?"}]  # fmt: skip
        sent, times, _ = await stream(client, url, again, 4)
        return (times[0] - sent) / ttft_first


async def during_image(url: str, seed: int) -> tuple[float, float]:
    """(text tok/s while an image request runs, text tok/s before it)."""
    async with httpx.AsyncClient(timeout=600) as client:
        warm = [asyncio.Event() for _ in range(STREAMS)]
        arrived: list[list[float]] = [[] for _ in range(STREAMS)]
        texts = [asyncio.create_task(stream(
            client, url, [{"role": "user", "content": f"Story {seed}-{i}: once upon a time"}],
            256, running=warm[i], times=arrived[i],
        )) for i in range(STREAMS)]  # fmt: skip
        for event in warm:
            await event.wait()
        image_sent, image_times, _ = await stream(client, url, [image_turn(seed, "What?")], 1)
        for task in texts:  # the streams' tokens after the image are not needed
            task.cancel()
        image_done = image_times[-1] if image_times else time.perf_counter()
        await asyncio.gather(*texts, return_exceptions=True)
    arrivals = [t for times in arrived for t in times]
    during = sum(image_sent <= t <= image_done for t in arrivals) / (image_done - image_sent)
    start = max(times[0] for times in arrived)  # every stream decoding from here
    before = sum(start <= t < image_sent for t in arrivals) / max(image_sent - start, 1e-9)
    return during, before


def run_server(name: str, argv: list[str], port: int, logs: Path, rounds: int) -> dict[str, list]:
    server: Server = start_server(name, argv, port, logs)
    try:
        out: dict[str, list] = {"follow_up": [], "during": [], "before": []}
        for r in range(rounds):
            out["follow_up"].append(asyncio.run(follow_up_ratio(server.base_url, 100 + r)))
            during, before = asyncio.run(during_image(server.base_url, 200 + r))
            out["during"].append(during)
            out["before"].append(before)
        return out
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=REAL_MODEL)
    parser.add_argument("--llama-server", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    projector = projector_for(args.model)
    load = machine()
    logs = Path(tempfile.mkdtemp(prefix="hearth-bench-vision-"))
    common = ["--threads", str(args.threads)]
    port = free_port()
    results = {"hearth": run_server("hearth", [
        sys.executable, "-m", "hearth", "serve", "--model", str(args.model),
        "--mmproj", str(projector), "--port", str(port), "--parallel", "8", "--ctx", "4096",
        "--prompt-cache", "off", "--no-stored-keys", *common],
        port, logs, args.rounds)}  # fmt: skip
    if args.llama_server:
        port = free_port()
        threads = str(args.threads)
        results["llama-server"] = run_server("llama-server", [
            args.llama_server, "-m", str(args.model), "--mmproj", str(projector),
            "--host", "127.0.0.1", "--port", str(port), "-np", "8", "-c", "32768",
            "-t", threads, "-tb", threads], port, logs, args.rounds)  # fmt: skip
    print(f"{args.model.name} + {projector.name}; {load}")
    for name, got in results.items():
        ratio = statistics.median(d / b for d, b in zip(got["during"], got["before"], strict=True))
        follow, during = statistics.median(got["follow_up"]), statistics.median(got["during"])
        print(f"{name:>12}: follow-up TTFT / first {follow:.3f} (target <= 0.1); text tok/s "
              f"during the image {during:.1f}, before {statistics.median(got['before']):.1f} "
              f"(ratio {ratio:.2f})")  # fmt: skip
    if "llama-server" in results:
        ours, theirs = results["hearth"]["during"], results["llama-server"]["during"]
        ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
        print(f"text tok/s during an image, Hearth / llama-server: {ratio:.2f} (target >= 1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
