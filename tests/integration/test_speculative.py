"""Speculative decoding on real llama.cpp, in-process: the same tokens, fewer steps.

The target/draft pair agrees by construction (tests/gguf_factory.write_spec_pair), so
drafts are accepted; the unrelated draft's are rejected. Either way, greedy output must
be exactly plain decoding's.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from engine_runs import collect as run
from hearth.core.errors import ModelLoadError
from hearth.core.generation import (
    Finished,
    FinishReason,
    GenerationRequest,
    TextDelta,
    TokenLogprob,
)
from hearth.core.model_info import LoadConfig, SpecMode
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine

NO_EOG = {2: -100.0, 260: -100.0}
PROMPTS = ["Hello world, the cat is", "def main(): return", "print the world"]


def load(model: Path, mode: SpecMode, draft: Path | None = None, **overrides: int) -> Engine:
    engine = Engine()
    # One thread: whether drafting pays is learned from step times, and with two threads
    # on a busy 2-core machine llama.cpp's thread barriers make a step take 1.5 ms or
    # 600 ms (docs/benchmarks.md); these tests check output and that drafting happens.
    config = dict(n_ctx=512, n_parallel=3, n_threads=1)
    config.update(overrides)
    engine.load(LoadConfig(model_path=model, spec_mode=mode, draft_model_path=draft, **config))
    return engine


def greedy(prompt: str, max_tokens: int = 48, **params: object) -> GenerationRequest:
    values: dict[str, object] = {"temperature": 0, "logit_bias": NO_EOG, **params}
    return GenerationRequest(
        prompt=prompt, params=SamplingParams.from_request(max_tokens=max_tokens, **values)
    )


def outputs(engine: Engine, requests: list[GenerationRequest]) -> list[tuple[str, Finished]]:
    """Run ``requests`` at once (batched in one step) and return text and end of each."""

    async def together() -> list[tuple[str, Finished, list[TokenLogprob]]]:
        return await asyncio.gather(*(run(engine, r) for r in requests))

    return [(text, finished) for text, finished, _ in asyncio.run(together())]


@pytest.fixture(scope="module")
def plain(spec_models: dict[str, Path]):
    engine = load(spec_models["target"], SpecMode.OFF)
    yield engine
    engine.unload()


@pytest.fixture(scope="module")
def drafted(spec_models: dict[str, Path]):
    engine = load(spec_models["target"], SpecMode.DRAFT, spec_models["draft"])
    yield engine
    engine.unload()


@pytest.mark.usefixtures("cpu_backend_only")
def test_draft_model_output_equals_plain_batched_with_a_plain_slot(plain, drafted):
    requests = [greedy(p) for p in PROMPTS[:2]]
    requests.append(greedy(PROMPTS[2], speculative=False))  # a plain slot in the same steps
    expected = outputs(plain, requests)
    got = outputs(drafted, requests)
    assert [t for t, _ in got] == [t for t, _ in expected]
    for _, finished in got[:2]:
        assert finished.timings is not None
        assert finished.timings.accepted_tokens > 20  # the pair agrees: drafts pass
        assert finished.usage.completion_tokens == 48
    assert got[2][1].timings is not None and got[2][1].timings.draft_tokens == 0
    status = drafted.status()
    assert status is not None and status.acceptance is not None and status.acceptance > 0.9


def test_ngram_output_equals_plain(plain, spec_models):
    engine = load(spec_models["target"], SpecMode.NGRAM)
    try:
        repetitive = "one two three four one two three four one two three four one two"
        prompts = [repetitive, *PROMPTS[:2]]
        expected = outputs(plain, [greedy(p, 64) for p in prompts])
        got = outputs(engine, [greedy(p, 64) for p in prompts])
    finally:
        engine.unload()
    assert [t for t, _ in got] == [t for t, _ in expected]
    assert sum(f.timings.draft_tokens for _, f in got if f.timings) > 0


@pytest.mark.usefixtures("cpu_backend_only")
def test_unrelated_draft_output_equals_plain_and_backs_off(plain, spec_models):
    engine = load(spec_models["target"], SpecMode.DRAFT, spec_models["unrelated"])
    try:
        got = outputs(engine, [greedy(PROMPTS[0], 96)])
    finally:
        engine.unload()
    assert got[0][0] == outputs(plain, [greedy(PROMPTS[0], 96)])[0][0]
    timings = got[0][1].timings
    assert timings is not None
    # Rejected drafts stop the slot drafting: far fewer drafts than tokens.
    assert timings.draft_tokens - timings.accepted_tokens < 40


def test_stop_inside_an_accepted_run_ends_there(plain, drafted):
    text = outputs(plain, [greedy(PROMPTS[0], 48)])[0][0]
    stop = text[20:24]
    cut = text[: text.index(stop)]
    for engine in (plain, drafted):
        got, finished = outputs(engine, [greedy(PROMPTS[0], 48, stop=(stop,))])[0]
        assert got == cut
        assert finished.reason is FinishReason.STOP and finished.stop_sequence == stop


def test_grammar_and_logprobs_are_the_same(plain, drafted):
    grammar = 'root ::= ("the" | " cat" | " world" | "hello" | " ")+'
    request = greedy(PROMPTS[1], 32, grammar=grammar, logprobs=2)
    expected = asyncio.run(run(plain, request))
    got = asyncio.run(run(drafted, request))
    assert got[0] == expected[0] and got[0]
    assert [lp.text for lp in got[2]] == [lp.text for lp in expected[2]]
    # Verified in a batch of several tokens, logits may differ in the last bits.
    assert [lp.logprob for lp in got[2]] == pytest.approx(
        [lp.logprob for lp in expected[2]], abs=1e-3
    )
    assert len(got[2]) == 32


def test_cancel_mid_run_frees_the_slot_and_the_next_is_unaffected(plain, drafted):
    async def cancel_early() -> None:
        stream = await drafted.start(greedy(PROMPTS[0], 400))
        seen = 0
        async for event in stream:
            if isinstance(event, TextDelta):
                seen += 1
                if seen == 3:
                    stream.cancel()
            else:
                assert isinstance(event, Finished) and event.reason is FinishReason.CANCELLED
                return

    asyncio.run(cancel_early())
    status = drafted.status()
    assert status is not None and not any(s.busy for s in status.slots)
    after = outputs(drafted, [greedy(PROMPTS[1])])[0][0]
    assert after == outputs(plain, [greedy(PROMPTS[1])])[0][0]


@pytest.mark.usefixtures("cpu_backend_only")
def test_prefix_cache_across_turns_with_a_draft_model(spec_models):
    drafted = load(spec_models["target"], SpecMode.DRAFT, spec_models["draft"])
    try:
        prefix_cache_across_turns(drafted, spec_models)
    finally:
        drafted.unload()


def prefix_cache_across_turns(drafted: Engine, spec_models: dict[str, Path]) -> None:
    first = PROMPTS[0] + " and the world of the cat is" * 12
    reply = outputs(drafted, [greedy(first, 32)])[0][0]
    follow_up = first + reply + " then"
    text, finished = outputs(drafted, [greedy(follow_up, 32)])[0]
    assert finished.usage.cached_tokens > finished.usage.prompt_tokens // 2
    assert finished.timings is not None and finished.timings.accepted_tokens > 0
    cold = load(spec_models["target"], SpecMode.OFF)
    try:
        assert outputs(cold, [greedy(follow_up, 32)])[0][0] == text
    finally:
        cold.unload()


def test_a_draft_with_another_vocabulary_is_refused_by_name(spec_models):
    with pytest.raises(ModelLoadError) as caught:
        load(spec_models["target"], SpecMode.DRAFT, spec_models["mismatched"])
    message = str(caught.value)
    assert "mismatched-Q8_0.gguf" in message and "target-Q8_0.gguf" in message
    assert "vocabular" in message or "token" in message


# --------------------------------------------------------------------------- over HTTP


@pytest.fixture(scope="module")
def serve_draft(spec_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    """``hearth serve`` with the draft model: speculation on unless a request opts out."""
    from server_process import start_serve

    draft = str(spec_models["draft"])
    logs = tmp_path_factory.mktemp("serve-spec-logs")
    server = start_serve(  # the last --threads wins: one, as in load() above
        spec_models["target"], logs, "--draft-model", draft, "--threads", "1", parallel=2
    )
    yield server
    server.stop()


@pytest.mark.usefixtures("cpu_backend_only")
def test_chat_and_completion_over_http_equal_with_and_without_speculation(serve_draft):
    import httpx
    from openai import OpenAI

    client = OpenAI(base_url=f"{serve_draft.base_url}/v1", api_key="unused")
    bias = {str(k): v for k, v in NO_EOG.items()}
    chats, completions = [], []
    for speculative in (True, False):
        chat = client.chat.completions.create(
            model="target-Q8_0", messages=[{"role": "user", "content": "Tell me about the cat"}],
            temperature=0, max_tokens=40, logit_bias=bias,
            extra_body={"speculative": speculative},
        )  # fmt: skip
        chats.append(chat.choices[0].message.content)
        completion = client.completions.create(
            model="target-Q8_0", prompt=PROMPTS[0], temperature=0, max_tokens=40, logit_bias=bias,
            extra_body={"speculative": speculative},
        )  # fmt: skip
        completions.append(completion)
    assert chats[0] == chats[1] and chats[0]
    assert completions[0].choices[0].text == completions[1].choices[0].text
    timings = [c.model_extra["timings"] for c in completions if c.model_extra]
    assert timings[0]["accepted_tokens"] > 0 and timings[1]["draft_tokens"] == 0
    status = httpx.get(f"{serve_draft.base_url}/hearth/v1/status", headers=serve_draft.headers())
    speculative = status.json()["speculative"]
    assert speculative["accepted_tokens"] > 0 and speculative["acceptance"] > 0.5


@pytest.mark.usefixtures("cpu_backend_only")
def test_ollama_options_opt_out_drafts_nothing_and_output_is_the_same(serve_draft):
    import httpx

    def drafted() -> int:
        status = httpx.get(
            f"{serve_draft.base_url}/hearth/v1/status", headers=serve_draft.headers()
        )
        return int(status.json()["speculative"]["draft_tokens"])

    replies = []
    for speculative in (False, True):
        before = drafted()
        options = {"temperature": 0, "num_predict": 24, "speculative": speculative}
        body = {"model": "target-Q8_0", "prompt": PROMPTS[1], "stream": False, "raw": True,
                "options": options}  # fmt: skip
        response = httpx.post(f"{serve_draft.base_url}/api/generate", json=body, timeout=60)
        assert response.status_code == 200, response.text
        replies.append(response.json()["response"])
        timings = response.json()
        if speculative:  # the status counter may land just after the reply
            deadline = time.monotonic() + 10
            while drafted() <= before and time.monotonic() < deadline:
                time.sleep(0.05)
            assert drafted() > before, timings
        else:
            assert drafted() == before
    assert replies[0] == replies[1] and replies[0]
