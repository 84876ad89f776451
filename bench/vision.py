"""Images through Hearth against llama-server on the same model and projector (issue 23).

    .venv/bin/python bench/vision.py --llama-server /work/llama-server-build/bin/llama-server \
        [--rounds 3] [--image-size 224|336|448] [--vit-layers 6]

The pair: gemma-3-270m (where the bench or the tests fetched it, or ``--model``) with a
synthetic gemma3 projector of that width (tests/gguf_projector.py: seeded random
weights, a ``--vit-layers``-block ViT over 14-px patches of an ``--image-size`` picture,
pooled to 64 image tokens), written once to ``~/.cache/hearth-bench``. A smaller picture
keeps the image tokens and the text side as they are and makes the encode cheaper
(256 patches at 224 px against 1,024 at 448), so a run finishes on a busy machine.

Both servers run at once (one works at a time; the order alternates between rounds, so
a slow phase of a shared machine hits both). Each round, on each server:

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

from engine import CpuMeter, Server, free_port, machine, start_server
from real_model import local_real_model

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
import gguf_projector  # the tests' projector writer

CACHE = Path.home() / ".cache" / "hearth-bench"
STREAMS = 4


def projector_for(model: Path, image_size: int, n_layer: int) -> Path:
    """The projector for ``model``'s width: 14-px patches pooled to 64 image tokens
    (8 x 8) whatever ``image_size`` (a multiple of 112), ``n_layer`` ViT blocks."""
    reader = gguf.GGUFReader(model, "r")
    arch = str(reader.fields["general.architecture"].contents())
    width = int(reader.fields[f"{arch}.embedding_length"].contents())  # type: ignore[arg-type]
    spec = gguf_projector.ProjectorSpec(text_n_embd=width, n_embd=384, n_ff=1536,
                                        n_layer=n_layer, n_head=6, image_size=image_size,
                                        patch_size=14, scale_factor=image_size // 112)  # fmt: skip
    suffix = "" if (image_size, n_layer) == (448, 6) else f"-{image_size}px-{n_layer}l"
    path = CACHE / f"mmproj-bench-{width}-{spec.n_image_tokens}{suffix}-F16.gguf"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        gguf_projector.write_projector(path, spec)
    return path


def picture(seed: int, size: int = 448) -> str:
    pixels = np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)
    data = io.BytesIO()
    Image.fromarray(pixels).save(data, "PNG")
    return "data:image/png;base64," + base64.b64encode(data.getvalue()).decode()


def image_turn(seed: int, text: str, size: int) -> dict[str, object]:
    return {"role": "user", "content": [
        {"type": "text", "text": text},
        {"type": "image_url", "image_url": {"url": picture(seed, size)}},
    ]}  # fmt: skip


async def stream(
    client: httpx.AsyncClient,
    url: str,
    messages: list[object],
    max_tokens: int,
    *,
    running: asyncio.Event | None = None,
    warm: int = 0,
    times: list[float] | None = None,
    info: dict[str, object] | None = None,
) -> tuple[float, list[float], str]:
    """(send time, arrival time of each content chunk, the text) of one streamed chat;
    ``running`` is set once it has streamed ``warm`` chunks, and ``times`` (if given)
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
            event = json.loads(line[6:])
            if info is not None and event.get("timings"):
                info.update(event["timings"])
            choices = event.get("choices") or [{}]
            piece = choices[0].get("delta", {}).get("content")
            if piece:
                times.append(time.perf_counter())
                parts.append(piece)
                if running is not None and len(times) == warm:
                    running.set()
    if running is not None:  # a stream that ended early must not hold the bench up
        running.set()
    return sent, times, "".join(parts)


async def follow_up(url: str, seed: int, args: argparse.Namespace) -> tuple[float, float]:
    """(first turn's TTFT, the follow-up's) about one new picture."""
    async with client() as http:
        first = [image_turn(seed, "Describe this picture in detail.", args.image_size)]
        sent, times, reply = await stream(http, url, first, args.first_tokens)
        ttft_first = times[0] - sent
        again = [*first, {"role": "assistant", "content": reply},
                 {"role": "user", "content": "And its colours?"}]  # fmt: skip
        info: dict[str, object] = {}
        sent, times, _ = await stream(http, url, again, 4, info=info)
        if info:  # Hearth: image_ms; llama-server: cache_n, prompt_n
            keys = ("image_ms", "image_tokens", "cache_n", "prompt_n", "prompt_ms")
            print(f"  follow-up timings: { {k: info[k] for k in keys if k in info} }",
                  file=sys.stderr)  # fmt: skip
        return ttft_first, times[0] - sent


async def during_image(url: str, seed: int, args: argparse.Namespace) -> tuple[float, ...]:
    """(text tok/s while an image request runs, text tok/s before it, the image
    request's TTFT)."""
    async with client() as http:
        warm = [asyncio.Event() for _ in range(STREAMS)]
        arrived: list[list[float]] = [[] for _ in range(STREAMS)]
        texts = [asyncio.create_task(stream(
            http, url, [{"role": "user", "content": f"Story {seed}-{i}: once upon a time"}],
            args.stream_tokens, running=warm[i], warm=args.warm_chunks, times=arrived[i],
        )) for i in range(STREAMS)]  # fmt: skip
        for event in warm:
            await event.wait()
        image = [image_turn(seed, "What?", args.image_size)]
        image_sent, image_times, _ = await stream(http, url, image, 1)
        ended = [task.done() for task in texts]  # a stream that ended early counts less
        for task in texts:  # the streams' tokens after the image are not needed
            task.cancel()
        image_done = image_times[-1] if image_times else time.perf_counter()
        await asyncio.gather(*texts, return_exceptions=True)
    if any(ended):
        print(f"  warning: {sum(ended)} text streams ended before the image request: raise "
              "--stream-tokens", file=sys.stderr)  # fmt: skip
    arrivals = [t for times in arrived for t in times]
    during = sum(image_sent <= t <= image_done for t in arrivals) / (image_done - image_sent)
    start = max(times[0] for times in arrived)  # every stream decoding from here
    before = sum(start <= t < image_sent for t in arrivals) / max(image_sent - start, 1e-9)
    return during, before, image_done - image_sent


def client() -> httpx.AsyncClient:
    """A new connection for every request: llama-server may close a kept-alive one after
    a stream as the next request goes out on it, which httpx then reports as "Server
    disconnected without sending a response" (the lost follow-ups of runs 1-4)."""
    return httpx.AsyncClient(timeout=1800, limits=httpx.Limits(max_keepalive_connections=0))


KEYS = ("first", "follow_up", "during", "before", "image")


def measure(server: Server, r: int, args: argparse.Namespace, out: dict[str, list[float]]) -> None:
    first, follow = asyncio.run(follow_up(server.base_url, 100 + r, args))
    during, before, image = asyncio.run(during_image(server.base_url, 200 + r, args))
    for key, value in zip(KEYS, (first, follow, during, before, image), strict=True):
        out[key].append(value)
    print(f"  {server.name} round {r + 1}: TTFT first {first:.3f} s, follow-up {follow:.3f} s; "
          f"text tok/s before {before:.1f}, during the image {during:.1f} (image request "
          f"{image:.2f} s)", file=sys.stderr, flush=True)  # fmt: skip


def med(values: list[float]) -> float:
    return statistics.median(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=None,
                        help="default: Gemma 3 270M (bench or tests' cache)")
    parser.add_argument("--llama-server", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--image-size", type=int, default=448, choices=(224, 336, 448),
                        help="the projector's input size (64 image tokens at any size)")
    parser.add_argument("--vit-layers", type=int, default=6)
    parser.add_argument("--first-tokens", type=int, default=16, help="the first turn's reply")
    parser.add_argument("--stream-tokens", type=int, default=1024,
                        help="each text stream's max_tokens (cut once the image is done)")
    parser.add_argument("--warm-chunks", type=int, default=32,
                        help="chunks each text stream streams before the image is sent")
    args = parser.parse_args()  # fmt: skip
    model = args.model or local_real_model()
    if model is None:
        raise SystemExit("no Gemma 3 270M on disk: run bench/real_model.py, or pass --model")
    projector = projector_for(model, args.image_size, args.vit_layers)
    load = machine()
    logs = Path(tempfile.mkdtemp(prefix="hearth-bench-vision-"))
    threads = str(args.threads)
    port = free_port()
    argvs = {"hearth": ([
        sys.executable, "-m", "hearth", "serve", "--model", str(model),
        "--mmproj", str(projector), "--port", str(port), "--parallel", "8", "--ctx", "4096",
        "--prompt-cache", "off", "--no-stored-keys", "--threads", threads], port)}  # fmt: skip
    if args.llama_server:
        port = free_port()
        argvs["llama-server"] = ([
            args.llama_server, "-m", str(model), "--mmproj", str(projector),
            "--host", "127.0.0.1", "--port", str(port), "-np", "8", "-c", "32768",
            "-t", threads, "-tb", threads], port)  # fmt: skip
    servers: list[Server] = []
    results = {name: {key: [] for key in KEYS} for name in argvs}
    meter = CpuMeter()
    try:
        for name, (argv, port) in argvs.items():  # both up at once; one works at a time
            servers.append(start_server(name, argv, port, logs))
        meter.pids = [s.process.pid for s in servers]
        before = meter.snapshot()
        for r in range(args.rounds):  # the order alternates, so drift hits both alike
            try:
                for server in servers if r % 2 == 0 else servers[::-1]:
                    measure(server, r, args, results[server.name])
            except httpx.HTTPError as error:  # report the rounds both servers completed
                print(f"round {r + 1} failed ({error!r}); reporting rounds 1-{r}",
                      file=sys.stderr)  # fmt: skip
                for got in results.values():
                    for key in KEYS:
                        del got[key][r:]
                break
        other = meter.foreign(before, meter.snapshot())
    finally:
        for server in servers:
            server.stop()
    if not all(got["first"] for got in results.values()):
        raise SystemExit("no round completed on every server")
    print(f"{model.name} + {projector.name} ({args.image_size} px, {args.vit_layers} ViT "
          f"layers, 64 image tokens); {len(results['hearth']['first'])} rounds; {load}; "
          f"other processes took {100 * other:.1f}% of the CPU during the rounds")  # fmt: skip
    for name, got in results.items():
        follow = med([f / t for f, t in zip(got["follow_up"], got["first"], strict=True)])
        ratio = med([d / b for d, b in zip(got["during"], got["before"], strict=True)])
        print(f"{name:>12}: TTFT first {med(got['first']):.3f} s, follow-up "
              f"{med(got['follow_up']):.3f} s, follow-up / first {follow:.3f} (target <= 0.1); "
              f"text tok/s before the image {med(got['before']):.1f}, during it "
              f"{med(got['during']):.1f} (ratio {ratio:.2f}); image request "
              f"{med(got['image']):.2f} s")  # fmt: skip
    if "llama-server" in results:
        ours, theirs = results["hearth"]["during"], results["llama-server"]["during"]
        ratio = med([a / b for a, b in zip(ours, theirs, strict=True)])
        print(f"text tok/s during an image, Hearth / llama-server: {ratio:.2f} (target >= 1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
