"""llama-server's completion JSON for ``/infill``: the result, its SSE chunks, errors.

llama.vscode reads ``content``, ``timings`` and ``tokens_cached``; llama.vim reads the
same plus ``stop_type``/``truncated``. The field names and meanings are llama-server's
(``prompt_n`` is the tokens actually evaluated, ``cache_n`` those reused). Streams are
``data: {...}`` events with ``stop: false`` and a last one with ``stop: true`` and the
totals; there is no ``[DONE]``. Errors are ``{"error": {"code", "message", "type"}}``
with the HTTP status as ``code``, as llama-server sends them.

Also the two stop rules llama.vscode asks for per request, which llama-server applies
while generating: ``n_indent`` (stop at a line indented less than the cursor) and
``t_max_predict_ms`` (past this time, stop at the next newline).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hearth.core.generation import Finished, FinishReason, TokenLogprob
from hearth.server.errors import ApiError

# llama-server's error type for each status it answers with.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    501: "not_supported_error",
    503: "unavailable_error",
}


def error_json(error: ApiError) -> dict[str, Any]:
    fallback = "server_error" if error.status >= 500 else "invalid_request_error"
    return {
        "error": {
            "code": error.status,
            "message": error.message,
            "type": ERROR_TYPES.get(error.status, fallback),
        }
    }


def sse(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


@dataclass(frozen=True)
class Outcome:
    """How a completion ended, in llama-server's words."""

    stop_type: str  # "eos" | "word" | "limit" | "none"
    stopping_word: str = ""


def outcome(finished: Finished, cut: bool) -> Outcome:
    """``cut``: the route stopped it (n_indent, t_max_predict_ms), a "limit" stop."""
    if cut or finished.reason is FinishReason.LENGTH:
        return Outcome("limit")
    if finished.stop_sequence:
        return Outcome("word", finished.stop_sequence)
    if finished.reason is FinishReason.STOP:
        return Outcome("eos")
    return Outcome("none")


def timings_json(finished: Finished, predicted: int) -> dict[str, float]:
    usage, t = finished.usage, finished.timings
    prompt_n = max(usage.prompt_tokens - usage.cached_tokens, 0)
    prompt_ms = t.prompt_ms if t else 0.0
    predicted_ms = t.decode_ms if t else 0.0
    return {
        "cache_n": usage.cached_tokens,
        "cache_disk_n": t.cache_disk_tokens if t else 0,  # of cache_n, read from disk
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / prompt_n if prompt_n else 0.0,
        "prompt_per_second": 1000.0 * prompt_n / prompt_ms if prompt_ms > 0 else 0.0,
        "predicted_n": predicted,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / predicted if predicted else 0.0,
        "predicted_per_second": 1000.0 * predicted / predicted_ms if predicted_ms > 0 else 0.0,
    }


def probs_json(logprobs: tuple[TokenLogprob, ...]) -> list[dict[str, Any]]:
    """llama-server's ``completion_probabilities`` (without token ids, which we lack)."""
    return [
        {
            "token": item.text,
            "logprob": item.logprob,
            "bytes": list(item.raw),
            "top_logprobs": [
                {"token": alt.text, "logprob": alt.logprob, "bytes": list(alt.raw)}
                for alt in item.top
            ],
        }
        for item in logprobs
    ]


class ResultWriter:
    """The JSON objects of one infill response, streamed or whole."""

    def __init__(self, model: str, prompt_tokens: int, n_predict: int) -> None:
        self.model = model
        self.prompt_tokens = prompt_tokens
        self.n_predict = n_predict
        self.predicted = 0

    def chunk(self, text: str, logprobs: tuple[TokenLogprob, ...] = ()) -> dict[str, Any]:
        self.predicted += max(len(logprobs), 1)
        body: dict[str, Any] = {
            "index": 0,
            "content": text,
            "tokens": [],
            "stop": False,
            "id_slot": -1,
            "tokens_predicted": self.predicted,
            "tokens_evaluated": self.prompt_tokens,
        }
        if logprobs:
            body["completion_probabilities"] = probs_json(logprobs)
        return body

    def final(
        self,
        text: str,
        finished: Finished,
        *,
        cut: bool = False,
        logprobs: tuple[TokenLogprob, ...] = (),
    ) -> dict[str, Any]:
        """The last object: the whole ``text`` when not streamed, "" when it was."""
        predicted = 0 if self.n_predict == 0 else finished.usage.completion_tokens
        end = outcome(finished, cut)
        body: dict[str, Any] = {
            "index": 0,
            "content": text,
            "tokens": [],
            "id_slot": -1,
            "stop": True,
            "model": self.model,
            "tokens_predicted": predicted,
            "tokens_evaluated": self.prompt_tokens,
            "generation_settings": {"n_predict": self.n_predict},
            "prompt": "",
            "has_new_line": "\n" in text,
            "truncated": False,
            "stop_type": end.stop_type,
            "stopping_word": end.stopping_word,
            "tokens_cached": self.prompt_tokens + predicted,
            "timings": timings_json(finished, predicted),
        }
        if logprobs:
            body["completion_probabilities"] = probs_json(logprobs)
        return body


class CursorLimits:
    """llama-server's per-request stop rules for code at a cursor, applied to the text
    as it comes: ``n_indent`` ends the completion where a new line starts less indented
    (cut there), ``t_max_predict_ms`` ends it at the first newline past that time."""

    def __init__(
        self, n_indent: int, t_max_predict_ms: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.n_indent = n_indent
        self.t_max_s = t_max_predict_ms / 1000.0
        self._clock = clock
        self._started: float | None = None
        self._text = ""
        self._line = -1  # start of the first line whose indentation is still unknown

    def feed(self, piece: str) -> tuple[str, bool]:
        """The part of ``piece`` to keep, and whether the completion stops here."""
        if self._started is None:
            self._started = self._clock()
        start = len(self._text)
        self._text += piece
        if self.n_indent > 0:
            cut = self._indent_cut(start)
            if cut is not None:
                return self._text[start:cut], True
        late = self.t_max_s > 0 and self._clock() - self._started > self.t_max_s
        return piece, late and "\n" in piece

    def _indent_cut(self, start: int) -> int | None:
        text = self._text
        if self._line < 0:
            newline = text.find("\n", start)
            if newline < 0:
                return None
            self._line = newline + 1
        while self._line >= 0:
            pos = self._line
            while pos < len(text) and text[pos] in " \t":
                pos += 1
            if pos >= len(text):
                return None  # the line's first character has not come yet
            if pos - self._line < self.n_indent:
                return max(pos, start)
            newline = text.find("\n", pos)
            self._line = newline + 1 if newline >= 0 else -1
        return None
