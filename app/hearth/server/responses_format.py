"""Pipeline results rendered as OpenAI Responses objects and their typed stream events."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from hearth.core.errors import HearthError
from hearth.core.generation import (
    Finished,
    FinishReason,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from hearth.server.responses_schemas import ResponsesRequest


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def usage_json(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


class ResponseWriter:
    """One response's ids, echoed settings and output items, whole or as stream events
    (a ``generation.StreamEncoder``)."""

    def __init__(self, body: ResponsesRequest, model: str) -> None:
        self.body = body
        self.model = model
        self.id = _id("resp")
        self.created_at = int(time.time())
        self.message_id = _id("msg")
        self._sequence = 0
        self._output: list[dict[str, Any]] = []
        self._text: str | None = None  # the open message's text, while one is open
        # The finished response object (completed or incomplete), once there is one.
        self.final: dict[str, Any] | None = None
        self.reasoning_id = _id("rs")
        self._thought: str | None = None  # the open reasoning item's text, while open

    # ------------------------------------------------------------ whole responses
    def response(
        self, status: str, finished: Finished | None = None, error: str | None = None
    ) -> dict[str, Any]:
        body = self.body
        fmt = body.text.format if body.text and body.text.format else None
        incomplete = finished is not None and finished.reason is FinishReason.LENGTH
        return {
            "id": self.id, "object": "response", "created_at": self.created_at,
            "status": status, "model": self.model, "output": list(self._output),
            "error": {"code": "server_error", "message": error} if error else None,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "instructions": body.instructions, "max_output_tokens": body.max_output_tokens,
            "temperature": body.temperature, "top_p": body.top_p,
            "tools": [
                {"type": "function", "name": t.name, "description": t.description,
                 "parameters": t.parameters, "strict": False}
                for t in body.tools or ()
            ],
            "tool_choice": body.tool_choice or "auto", "parallel_tool_calls": True,
            "text": {"format": fmt.model_dump(by_alias=True) if fmt else {"type": "text"}},
            "previous_response_id": body.previous_response_id, "store": body.store,
            "metadata": {},
            "usage": usage_json(finished.usage) if finished else None,
        }  # fmt: skip

    def complete(
        self, text: str, calls: tuple[ToolCall, ...], finished: Finished, reasoning: str = ""
    ) -> dict[str, Any]:
        """The non-streamed response."""
        if reasoning:
            self._output.append(self._reasoning(reasoning, "completed"))
        if text or not calls:
            self._output.append(self._message(text, "completed"))
        self._output.extend(self._call(call, "completed") for call in calls)
        self.final = self.response(_status(finished), finished)
        return self.final

    def _message(self, text: str, status: str) -> dict[str, Any]:
        content = [_text_part(text)] if status == "completed" else []
        return {"type": "message", "id": self.message_id, "status": status,
                "role": "assistant", "content": content}  # fmt: skip

    def _reasoning(self, text: str, status: str) -> dict[str, Any]:
        """A ``reasoning`` item: the model's thinking as ``reasoning_text`` content."""
        content = [{"type": "reasoning_text", "text": text}] if status == "completed" else []
        return {"type": "reasoning", "id": self.reasoning_id, "status": status,
                "summary": [], "content": content}  # fmt: skip

    @staticmethod
    def _call(call: ToolCall, status: str) -> dict[str, Any]:
        return {"type": "function_call", "id": f"fc_{call.id}", "call_id": call.id,
                "name": call.name, "arguments": call.arguments if status == "completed" else "",
                "status": status}  # fmt: skip

    # ------------------------------------------------------------ stream events
    def event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()

    def opening(self) -> bytes:
        snapshot = self.response("in_progress")
        return self.event("response.created", response=snapshot) + self.event(
            "response.in_progress", response=snapshot
        )

    def reasoning(self, delta: ReasoningDelta) -> bytes:
        out = self.close_text()
        index = len(self._output)
        if self._thought is None:
            self._thought = ""
            out += self.event("response.output_item.added", output_index=index,
                              item=self._reasoning("", "in_progress"))  # fmt: skip
        self._thought += delta.text
        return out + self.event(
            "response.reasoning_text.delta", item_id=self.reasoning_id, output_index=index,
            content_index=0, delta=delta.text,
        )  # fmt: skip

    def close_reasoning(self) -> bytes:
        if self._thought is None:
            return b""
        text, self._thought = self._thought, None
        index, item = len(self._output), self._reasoning(text, "completed")
        self._output.append(item)
        return self.event(
            "response.reasoning_text.done", item_id=self.reasoning_id, output_index=index,
            content_index=0, text=text,
        ) + self.event("response.output_item.done", output_index=index, item=item)  # fmt: skip

    def text(self, text_delta: TextDelta) -> bytes:
        if not text_delta.text:
            return b""
        delta = text_delta.text
        out = self.close_reasoning()
        if self._text is None:
            self._text = ""
            index = len(self._output)
            item = self._message("", "in_progress")
            out += self.event("response.output_item.added", output_index=index, item=item)
            out += self.event("response.content_part.added", item_id=self.message_id,
                              output_index=index, content_index=0, part=_text_part(""))  # fmt: skip
        self._text += delta
        return out + self.event(
            "response.output_text.delta", item_id=self.message_id,
            output_index=len(self._output), content_index=0, delta=delta, logprobs=[],
        )  # fmt: skip

    def close_text(self) -> bytes:
        if self._text is None:
            return b""
        text, self._text = self._text, None
        index, where = len(self._output), {"item_id": self.message_id, "content_index": 0}
        item = self._message(text, "completed")
        self._output.append(item)
        return (
            self.event("response.output_text.done", output_index=index, text=text,
                       logprobs=[], **where)
            + self.event("response.content_part.done", output_index=index,
                         part=_text_part(text), **where)
            + self.event("response.output_item.done", output_index=index, item=item)
        )  # fmt: skip

    def tool_calls(self, calls: tuple[ToolCall, ...]) -> bytes:
        out = self.close_reasoning() + self.close_text()
        for call in calls:
            index, item_id = len(self._output), f"fc_{call.id}"
            done = self._call(call, "completed")
            out += self.event(
                "response.output_item.added",
                output_index=index,
                item=self._call(call, "in_progress"),
            )
            out += self.event(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=call.arguments,
            )
            out += self.event(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                name=call.name,
                arguments=call.arguments,
            )
            out += self.event("response.output_item.done", output_index=index, item=done)
            self._output.append(done)  # fmt: skip
        return out

    def finished(self, finished: Finished) -> bytes:
        status = _status(finished)
        out = self.close_reasoning() + self.close_text()
        kind = "response.completed" if status == "completed" else "response.incomplete"
        self.final = self.response(status, finished)
        return out + self.event(kind, response=self.final)

    def failed(self, error: HearthError) -> bytes:
        return self.event("response.failed", response=self.response("failed", error=error.message))

    def closing(self) -> bytes:
        return b""


def _status(finished: Finished) -> str:
    return "incomplete" if finished.reason is FinishReason.LENGTH else "completed"
