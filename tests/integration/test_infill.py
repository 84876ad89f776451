"""llama.cpp's ``/infill`` against a real ``hearth serve``, over httpx, as llama.vscode
and llama.vim call it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

import gguf_factory
from server_process import start_serve

PREFIX = "def add(a, b):\n    "
SUFFIX = "\n\nprint(add(1, 2))\n"
GREEDY = {"temperature": 0, "top_k": 1}


def infill(base_url: str, **body: object) -> httpx.Response:
    return httpx.post(f"{base_url}/infill", json=body, timeout=60)


def sse_events(response: httpx.Response) -> list[dict[str, object]]:
    events = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            events.append(json.loads(line[len("data: ") :]))
        else:
            assert line == "", f"unexpected line {line!r}"
    return events


def test_greedy_infill_equals_completions_with_suffix(serve_q8):
    """With no extra context, /infill is /v1/completions' FIM: same prompt, same text."""
    reply = infill(
        serve_q8.base_url, input_prefix=PREFIX, input_suffix=SUFFIX, n_predict=12, **GREEDY
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    completion = httpx.post(
        f"{serve_q8.base_url}/v1/completions",
        json={"prompt": PREFIX, "suffix": SUFFIX, "max_tokens": 12, **GREEDY},
        timeout=60,
    ).json()
    assert body["content"] == completion["choices"][0]["text"]
    assert body["content"]
    assert body["tokens_evaluated"] == completion["usage"]["prompt_tokens"]
    assert body["tokens_predicted"] == 12
    assert body["stop"] is True
    assert body["stop_type"] == "limit"
    assert body["model"] == "hearth-tiny-Q8_0"
    timings = body["timings"]
    assert timings["predicted_n"] == 12
    assert timings["prompt_n"] + timings["cache_n"] == body["tokens_evaluated"]
    assert timings["predicted_ms"] > 0 and timings["predicted_per_second"] > 0


def test_streamed_infill_is_the_same_text(serve_q8):
    request = {"input_prefix": PREFIX, "input_suffix": SUFFIX, "n_predict": 10, **GREEDY}
    whole = infill(serve_q8.base_url, **request).json()
    with httpx.stream(
        "POST", f"{serve_q8.base_url}/infill", json={**request, "stream": True}, timeout=60
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response)
    *chunks, last = events
    assert chunks and all(c["stop"] is False for c in chunks)
    assert "".join(str(c["content"]) for c in chunks) == whole["content"]
    assert last["stop"] is True and last["content"] == ""
    assert last["tokens_predicted"] == 10 and last["stop_type"] == "limit"
    assert isinstance(last["timings"], dict) and last["timings"]["predicted_n"] == 10


def test_extra_context_goes_before_the_code_as_snippets(serve_q8):
    """A model without repository tokens gets other files as separated snippets: the
    prompt grows by them, and the V1 alias answers the same."""
    base = {"input_prefix": PREFIX, "input_suffix": SUFFIX, "n_predict": 4, **GREEDY}
    plain = infill(serve_q8.base_url, **base).json()
    extra = [{"filename": "util.py", "text": "def sub(a, b):\n    return a - b\n"}]
    reply = httpx.post(
        f"{serve_q8.base_url}/v1/infill", json={**base, "input_extra": extra}, timeout=60
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["tokens_evaluated"] > plain["tokens_evaluated"] + 10


def test_cache_warm_up_with_no_prediction(serve_q8):
    """llama.vim sends n_predict 0 to load its ring of extra context into the cache."""
    extra = [{"filename": "a.py", "text": "x = 1\n" * 20}]
    body = {"input_prefix": "", "input_suffix": "", "input_extra": extra, "n_predict": 0}
    reply = infill(serve_q8.base_url, **body).json()
    assert reply["content"] == "" and reply["tokens_predicted"] == 0 and reply["stop"] is True
    again = infill(serve_q8.base_url, **body).json()
    assert again["timings"]["cache_n"] > 0  # the second time, the prompt is reused


def test_prompt_goes_right_before_the_cursor(serve_q8):
    """``prompt`` is text typed after the prefix: the same as a longer prefix."""
    split = infill(
        serve_q8.base_url,
        input_prefix="def add(a, b):\n",
        prompt="    return",
        input_suffix=SUFFIX,
        n_predict=6,
        **GREEDY,
    ).json()
    joined = infill(
        serve_q8.base_url,
        input_prefix="def add(a, b):\n",
        input_suffix=SUFFIX,
        n_predict=6,
        **GREEDY,
    ).json()
    assert split["tokens_evaluated"] > joined["tokens_evaluated"]


def test_n_indent_cuts_at_a_less_indented_line(serve_q8):
    """A model that writes only newlines: its second line starts less indented than
    n_indent asks, so the reply is cut there, and says it stopped at a limit."""
    newline = {str(gguf_factory.BYTE_BASE_ID + ord("\n")): 100}
    body = {"input_prefix": PREFIX, "input_suffix": "", "n_predict": 8, "logit_bias": newline}
    free = infill(serve_q8.base_url, **body, **GREEDY).json()
    assert free["content"] == "\n" * 8
    cut = infill(serve_q8.base_url, **body, n_indent=4, **GREEDY).json()
    assert cut["content"] == "\n"
    assert cut["stop_type"] == "limit" and cut["stop"] is True


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"input_suffix": ""}, "input_prefix"),
        ({"input_prefix": "", "input_suffix": "", "input_extra": [{"filename": "a"}]}, "text"),
        ({"input_prefix": "", "input_suffix": "", "n_probs": 999}, "n_probs"),
    ],
)
def test_bad_input_is_a_400_in_llama_servers_shape(serve_q8, body, message):
    reply = infill(serve_q8.base_url, **body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == 400 and error["type"] == "invalid_request_error"
    assert message in error["message"]
    assert (
        infill(serve_q8.base_url, input_prefix="", input_suffix="", n_predict=1).status_code == 200
    )


def test_prompt_too_long_says_so_with_the_numbers(serve_q8):
    reply = infill(serve_q8.base_url, input_prefix="", input_suffix="", prompt="word " * 600)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "exceed_context_size_error"
    assert error["n_ctx"] == 512 and error["n_prompt_tokens"] > 512


def test_model_without_fim_tokens_is_501(tmp_path: Path):
    # llama.cpp finds FIM tokens by their text too: this vocabulary has none of them.
    vocab = gguf_factory.make_vocab(
        [gguf_factory.IM_START, gguf_factory.IM_END], ["\u2581", *"abcdefghij"]
    )
    model = gguf_factory.write_llama(
        tmp_path / "no-fim.gguf", gguf_factory.LlamaSpec(), vocab, name="No FIM", fim=False
    )
    server = start_serve(model, tmp_path, ctx=256, parallel=1)
    try:
        reply = infill(server.base_url, input_prefix="a", input_suffix="b")
        assert reply.status_code == 501
        error = reply.json()["error"]
        assert error["type"] == "not_supported_error"
        assert error["message"].startswith("Infill is not supported by this model")
    finally:
        server.stop()


def test_repository_tokens_lay_out_other_files(serve_repo_fim, tiny_model_repo_fim):
    """A model with <|repo_name|> and <|file_sep|> reads other files as one repository,
    exactly in llama-server's layout: same text as that token prompt, spelled out."""
    from hearth.core.model_info import LoadConfig
    from hearth.engine.engine import Engine

    engine = Engine()
    engine.load(LoadConfig(model_path=tiny_model_repo_fim, n_ctx=256, n_parallel=1, n_threads=1))
    try:
        tok = engine.tokenize_text
        rep, sep = gguf_factory.FIRST_NORMAL_ID, gguf_factory.FIRST_NORMAL_ID + 1
        files = [("util.py", "def sub(a, b):\n    return a - b\n"), ("b.py", "X = 3\n")]
        expected = [gguf_factory.BOS_ID, rep, *tok("myproject\n")]
        for name, text in files:
            expected += [sep, *tok(name + "\n"), *tok(text)]
        expected += [sep, *tok("filename\n"), gguf_factory.FIM_PRE_ID, *tok(PREFIX)]
        expected += [gguf_factory.FIM_SUF_ID, *tok(SUFFIX), gguf_factory.FIM_MID_ID]
    finally:
        engine.unload()

    extra = [{"filename": name, "text": text} for name, text in files]
    reply = infill(
        serve_repo_fim.base_url,
        input_prefix=PREFIX,
        input_suffix=SUFFIX,
        input_extra=extra,
        n_predict=8,
        **GREEDY,
    ).json()
    spelled = httpx.post(
        f"{serve_repo_fim.base_url}/v1/completions",
        json={"prompt": expected, "max_tokens": 8, **GREEDY},
        timeout=60,
    ).json()
    assert reply["tokens_evaluated"] == len(expected) == spelled["usage"]["prompt_tokens"]
    assert reply["content"] == spelled["choices"][0]["text"]
