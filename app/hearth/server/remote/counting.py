"""Token counts for a remote engine's model (Anthropic's ``/v1/messages/count_tokens``).

Claude Code asks for counts all through a session. Only the engine knows its model's
tokenizer and chat template, so the engine is asked, in the first form it answers:

1. Anthropic's own ``/v1/messages/count_tokens`` with the client's body (another Hearth,
   llama-server);
2. vLLM's (and SGLang's) ``/tokenize`` with the chat messages, which returns ``count``.

An engine with neither (Ollama) gets a clear 400 in Anthropic's shape, never a made-up
number: Claude Code estimates the count itself when the endpoint answers an error, but
trusts a 200 (a false ``0`` would keep it from ever compacting the context).
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from hearth.config.engines import EngineKind
from hearth.core.errors import InvalidRequestError
from hearth.server.pipeline import ChatPrompt
from hearth.server.remote.backend import RemoteBackend
from hearth.server.remote.errors import RemoteEngineError
from hearth.server.remote.openai_wire import message_json
from hearth.server.remote.probe import describe_error

log = logging.getLogger(__name__)

COUNT_TIMEOUT_S = 30.0  # a long conversation takes a while to tokenize
ANTHROPIC_COUNT_PATH = "/v1/messages/count_tokens"
TOKENIZE_PATH = "/tokenize"


async def count_tokens(
    backend: RemoteBackend, model: str, prompt: ChatPrompt, body: dict[str, Any] | None
) -> int:
    """The engine's count of ``prompt`` for ``model`` (its id at the engine); ``body``
    is the client's Anthropic request, passed on as it came (with the engine's id)."""
    attempts: list[tuple[str, dict[str, Any], str]] = []
    if backend.spec.kind is EngineKind.OPENAI:
        if body is not None:
            attempts.append((ANTHROPIC_COUNT_PATH, {**body, "model": model}, "input_tokens"))
        attempts.append((TOKENIZE_PATH, tokenize_body(prompt, model), "count"))
    for path, payload, field in attempts:
        count = await _ask(backend, path, payload, field)
        if count is not None:
            return count
    raise InvalidRequestError(
        f"Remote engine '{backend.name}' offers no token count for '{model}' (neither "
        f"{ANTHROPIC_COUNT_PATH} nor {TOKENIZE_PATH} with messages); clients such as "
        "Claude Code estimate the count themselves.",
        param="model",
    )


def tokenize_body(prompt: ChatPrompt, model: str) -> dict[str, Any]:
    """vLLM's chat form of ``/tokenize``: the messages as the chat template renders them
    for a reply (tools included)."""
    out: dict[str, Any] = {
        "model": model,
        "messages": [message_json(m) for m in prompt.messages],
        "add_generation_prompt": True,
    }
    tools = prompt.offered_tools()
    if tools:
        out["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters or {"type": "object"}}}
            for t in tools
        ]  # fmt: skip
    if prompt.template_kwargs:
        out["chat_template_kwargs"] = prompt.template_kwargs
    return out


async def _ask(
    backend: RemoteBackend, path: str, payload: dict[str, Any], field: str
) -> int | None:
    """The count in ``field`` of the engine's answer; None where the engine has no such
    endpoint or answers without the field (llama-server's ``/tokenize`` wants text)."""
    try:
        response = await backend.client.post(path, json=payload, timeout=COUNT_TIMEOUT_S)
    except httpx.HTTPError as exc:
        what = f"counting tokens failed ({describe_error(exc)})"
        raise RemoteEngineError(backend.name, what) from None
    if response.status_code in (401, 403):
        raise RemoteEngineError(backend.name, f"it refused Hearth's key for it (HTTP "
                                f"{response.status_code}).")  # fmt: skip
    if response.status_code != 200:
        log.debug("engine %s: %s answered %d", backend.name, path, response.status_code)
        return None
    try:
        value = response.json().get(field)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
