"""A request a remote engine serves is never counted as arriving at a local engine (its
scheduler would wait for a request that never comes), streamed or not; a local request
counts at its own model's engine until it is queued."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from hearth.config.engines import EngineRegistry
from hearth.core.generation import ChatMessage, Finished, TextDelta
from hearth.core.model_info import LoadConfig
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine
from hearth.server.model_manager import ModelManager
from hearth.server.pipeline import ChatPrompt, Pipeline, PipelineRequest
from hearth.server.remote.router import RemoteEngines


async def sse_engine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """An OpenAI-compatible engine's answer to one chat request: "hi", then the end."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))  # fmt: skip
    await reader.readexactly(length)
    chunks = [{"choices": [{"index": 0, "delta": {"content": "hi"}}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 3, "completion_tokens": 1}}]  # fmt: skip
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body.encode()))  # fmt: skip
    await writer.drain()
    writer.close()


def test_a_remote_request_never_counts_as_arriving_locally(
    tmp_path: Path, tiny_model_q8: Path
) -> None:
    async def scenario() -> tuple[int, int, int, list[object]]:
        server = await asyncio.start_server(sse_engine, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        registry = EngineRegistry(tmp_path / "engines.json")
        registry.add("far", f"http://127.0.0.1:{port}")
        remote = RemoteEngines(registry)
        config = LoadConfig(tiny_model_q8, n_ctx=256, n_parallel=1, n_threads=2)
        models = ModelManager(Engine, catalog=None, base_config=config)
        await models.load(config)
        engine = models.residents()[0].engine
        pipeline = Pipeline(models, remote=remote)
        prompt = ChatPrompt((ChatMessage("user", "Hello"),))
        request = PipelineRequest("far/m", prompt, SamplingParams(max_tokens=4), request_id="r1")
        with models.request("r1"):  # what every generation route does first
            generation = await pipeline.start(request)
            during = engine.arriving
            events: list[object] = [e async for e in generation.events()]
        with models.request("r2"):  # a local request counts at its engine until queued
            await models.use(None, request_id="r2", generate=True)
            local = engine.arriving
        after = engine.arriving
        await remote.close()
        await models.unload()
        server.close()
        return during, local, after, events

    during, local, after, events = asyncio.run(scenario())
    assert (during, local, after) == (0, 1, 0)
    assert events[0] == TextDelta("hi") and isinstance(events[-1], Finished)
