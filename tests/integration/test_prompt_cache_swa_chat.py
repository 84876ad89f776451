"""A chat on a sliding-window model, through real ``hearth serve`` processes sharing a
prompt cache folder: the same document, then another last question after a restart.

Such a model's saved state serves only prompts that extend all of it, so its prefill
pauses to save one where the next request will likely part from this one: for a chat,
where its last message starts (worked out by rendering the chat with another last
message). The template here folds the system message into the first user turn, as
Gemma's does, so the document and the question share one message. A completion has no
messages: its prefill pauses at the last 256-token block boundary at least 64 tokens
before its end.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from hearth.core.generation import ChatMessage
from hearth.core.model_info import LoadConfig
from hearth.engine.engine import Engine
from hearth.engine.slots import common_prefix
from server_process import ServeProcess, start_serve

CTX = 2048
MODEL = "hearth-tiny-gemma3-chat-F16"
MIN_TOKENS = 512
BLOCK = 256
WORDS = ["the", "cat", "sat", "on", "mat", "and", "dog", "ran", "far", "away", "from",
         "home", "while", "birds", "sang", "in", "trees", "near", "river", "bank"]  # fmt: skip
DOCUMENT = " ".join(random.Random(3).choice(WORDS) for _ in range(450))
# No shared start: the prompts part where the last message's text starts.
QUESTION_1 = "Where did the cat sit"
QUESTION_2 = "Tell me who ran home"


def messages(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": DOCUMENT}, {"role": "user", "content": question}]


@dataclass(frozen=True)
class Prompts:
    """The two chats' prompts as the model's template and tokenizer make them."""

    first_text: str
    first: list[int]
    second: list[int]

    @property
    def shared(self) -> int:
        return common_prefix(self.first, self.second)


@pytest.fixture(scope="module")
def prompts(tiny_gemma3_chat: Path) -> Iterator[Prompts]:
    engine = Engine()
    engine.load(LoadConfig(model_path=tiny_gemma3_chat, n_ctx=CTX, n_parallel=1, n_threads=2))
    try:
        texts = [
            engine.render_chat([ChatMessage(m["role"], m["content"]) for m in messages(q)])
            for q in (QUESTION_1, QUESTION_2)
        ]
        tokens = [engine.tokenize_prompt(text) for text in texts]
    finally:
        engine.unload()
    yield Prompts(texts[0], *tokens)


def serve(model: Path, logs: Path, cache: Path | str) -> ServeProcess:
    return start_serve(model, logs, "--prompt-cache", str(cache), "--prompt-cache-min-tokens",
                       str(MIN_TOKENS), ctx=CTX, parallel=1)  # fmt: skip


def client(server: ServeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="none", max_retries=0)


def chat(server: ServeProcess, question: str) -> dict[str, Any]:
    chats = client(server).chat.completions
    body = messages(question)
    response = chats.create(model=MODEL, messages=body, max_tokens=12, temperature=0)
    return response.model_dump()


def complete(server: ServeProcess, prompt: str) -> dict[str, Any]:
    response = client(server).completions.create(
        model=MODEL, prompt=prompt, max_tokens=12, temperature=0
    )
    return response.model_dump()


def reused(body: dict[str, Any]) -> tuple[int, int]:
    """(cached prompt tokens, of them restored from disk)."""
    cached = int(body["usage"]["prompt_tokens_details"]["cached_tokens"])
    return cached, int(body["timings"]["cache_disk_tokens"])


def after_a_restart(
    model: Path, tmp_path: Path, before: Callable[[ServeProcess], object]
) -> dict[str, Any]:
    """``before`` on one server, then the chat's second question on a new one sharing
    its prompt-cache folder: that reply's body."""
    first = serve(model, tmp_path, tmp_path / "cache")
    try:
        before(first)
    finally:
        first.stop()
    second = serve(model, tmp_path, tmp_path / "cache")
    try:
        return chat(second, QUESTION_2)
    finally:
        second.stop()


@pytest.fixture(scope="module")
def cold_reply(tiny_gemma3_chat: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The second question's greedy reply from a server without a prompt cache."""
    server = serve(tiny_gemma3_chat, tmp_path_factory.mktemp("cold"), "off")
    try:
        body = chat(server, QUESTION_2)
    finally:
        server.stop()
    assert reused(body) == (0, 0)
    return str(body["choices"][0]["message"]["content"])


def test_another_last_question_after_a_restart_restores_the_chat_up_to_it(
    tiny_gemma3_chat: Path, tmp_path: Path, prompts: Prompts, cold_reply: str
) -> None:
    """All the tokens the two chats share come back from disk (the document, though it
    sits in the last message with the question), and the reply is a cold prefill's."""
    block_rule = (len(prompts.first) - 64) // BLOCK * BLOCK
    assert prompts.shared > block_rule + 64  # what this saves over the block rule
    body = after_a_restart(tiny_gemma3_chat, tmp_path, lambda s: chat(s, QUESTION_1))
    assert reused(body) == (prompts.shared, prompts.shared)
    assert body["choices"][0]["message"]["content"] == cold_reply


def test_a_completion_of_the_same_text_keeps_the_block_rule(
    tiny_gemma3_chat: Path, tmp_path: Path, prompts: Prompts, cold_reply: str
) -> None:
    """A completion has no messages to say where it will branch: its prefill pauses at
    a block boundary, which is what the chat then finds (its end's state it leaves)."""
    body = after_a_restart(tiny_gemma3_chat, tmp_path, lambda s: complete(s, prompts.first_text))
    block_rule = (len(prompts.first) - 64) // BLOCK * BLOCK
    assert reused(body) == (block_rule, block_rule)
    assert body["choices"][0]["message"]["content"] == cold_reply
