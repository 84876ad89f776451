"""Token log-probabilities in OpenAI's two shapes (chat and legacy completions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hearth.core.generation import TokenLogprob


def chat_logprobs(entries: Sequence[TokenLogprob]) -> dict[str, Any]:
    return {
        "content": [
            {
                "token": e.text,
                "logprob": e.logprob,
                "bytes": list(e.raw),
                "top_logprobs": [
                    {"token": t.text, "logprob": t.logprob, "bytes": list(t.raw)} for t in e.top
                ],
            }
            for e in entries
        ]
    }


def completion_logprobs(entries: Sequence[TokenLogprob], start_offset: int = 0) -> dict[str, Any]:
    offsets, offset = [], start_offset
    for e in entries:
        offsets.append(offset)
        offset += len(e.text)
    return {
        "tokens": [e.text for e in entries],
        "token_logprobs": [e.logprob for e in entries],
        "top_logprobs": [{t.text: t.logprob for t in e.top} for e in entries],
        "text_offset": offsets,
    }


def logprobs_json(
    entries: Sequence[TokenLogprob], *, chat: bool, start_offset: int = 0
) -> dict[str, Any]:
    return chat_logprobs(entries) if chat else completion_logprobs(entries, start_offset)
