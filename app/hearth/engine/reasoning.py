"""Reasoning ("thinking") text, split from the reply as it streams.

Reasoning models write their thoughts before the answer, each family between its own
markers: ``<think>...</think>`` (Qwen3, DeepSeek R1/V3, GLM, Kimi, MiniMax, Nemotron,
SmolLM3, Granite ...), ``<seed:think>`` (Seed-OSS), ``<|START_THINKING|>`` (Command-R7B),
``[THINK]`` (Magistral/Ministral), ``<mm:think>`` (MiniMax-M3), Gemma 4's
``<|channel>thought``, Apriel's ``[BEGIN FINAL RESPONSE]`` and gpt-oss harmony channels.
Many templates open the block in the generation prompt themselves, so whether a reply
starts inside reasoning is read off the rendered prompt. Only a block at the very start
of a reply is reasoning; the same tags later on are ordinary text (code, quotes).
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from hearth.core.chat_formats import HARMONY, REASONING_SPECS, ReasoningSpec, detect_reasoning

SPECS = REASONING_SPECS  # the families' markers, shared with the GUI (core/chat_formats.py)
__all__ = ["HARMONY", "SPECS", "EndTrim", "HarmonySplitter", "LeadTrim", "ReasoningSpec", "Split",
           "TagSplitter", "detect_reasoning", "make_splitter", "starts_inside",
           "with_reasoning"]  # fmt: skip


def starts_inside(spec: ReasoningSpec, prompt: str) -> bool:
    """Whether the rendered prompt already opened the reasoning block for the model."""
    return not spec.open or prompt.rstrip().endswith(spec.open.strip())


class Split(NamedTuple):
    """What one chunk of generated text turned out to be (either part may be empty)."""

    reasoning: str
    content: str


def make_splitter(spec: ReasoningSpec, prompt: str) -> TagSplitter | HarmonySplitter:
    if spec is HARMONY:
        return HarmonySplitter()
    return TagSplitter(spec, inside=starts_inside(spec, prompt))


def _partial_suffix(buffer: str, marker: str) -> int:
    for size in range(min(len(marker) - 1, len(buffer)), 0, -1):
        if buffer.endswith(marker[:size]):
            return size
    return 0


class LeadTrim:
    """Takes ``lead`` off the start of a stream (after spaces), where it is there;
    holds back only what could still turn out to be it."""

    def __init__(self, lead: str) -> None:
        self._lead = lead
        self._held = ""
        self._done = not lead

    def feed(self, text: str) -> str:
        if self._done:
            return text
        buffer = self._held + text
        stripped = buffer.lstrip()
        self._held = ""
        if stripped.startswith(self._lead):
            self._done = True
            return stripped[len(self._lead) :]
        if self._lead.startswith(stripped):  # spaces only, or a prefix of the lead
            self._held = buffer
            return ""
        self._done = True
        return buffer

    def finish(self) -> str:
        held, self._held, self._done = self._held, "", True
        return held


class EndTrim:
    """Takes ``marker`` out of a stream with the whitespace around it (Apriel's answer
    ends ``\n[END FINAL RESPONSE]\n``); trailing spaces and a partial marker wait until
    the next text shows what they are."""

    def __init__(self, marker: str) -> None:
        self._marker = marker
        self._held = ""
        self._after = False  # just past a marker: its following spaces go too

    def feed(self, text: str) -> str:
        if not self._marker:
            return text
        buffer = self._held + text
        out: list[str] = []
        while (index := buffer.find(self._marker)) != -1:
            out.append(self._body(buffer[:index]).rstrip())
            buffer = buffer[index + len(self._marker) :]
            self._after = True
        buffer = self._body(buffer)
        body = buffer[: len(buffer) - _partial_suffix(buffer, self._marker)]
        keep = len(body.rstrip())
        out.append(buffer[:keep])
        self._held = buffer[keep:]
        return "".join(out)

    def _body(self, text: str) -> str:
        if self._after:
            text = text.lstrip()
            self._after = not text
        return text

    def finish(self) -> str:
        held, self._held = self._held, ""
        return held


class TagSplitter:
    """Streams a reply, sending the opening reasoning block one way and the rest the other."""

    def __init__(self, spec: ReasoningSpec, *, inside: bool) -> None:
        self._open, self._close = spec.open, spec.close
        self._inside = inside
        self._done = False  # the one reasoning block is over (or the reply began without it)
        self._held = ""
        self._trim_reasoning = inside
        self._trim_content = False
        self._lead = LeadTrim(spec.lead)
        self._end = EndTrim(spec.answer_end)

    def feed(self, text: str) -> Split:
        buffer = self._held + text
        reasoning: list[str] = []
        content: list[str] = []
        self._held = ""
        while buffer:
            if self._done:
                content.append(buffer)
                break
            if self._inside:
                index = buffer.find(self._close)
                if index == -1:
                    hold = _partial_suffix(buffer, self._close)
                    reasoning.append(buffer[: len(buffer) - hold])
                    self._held = buffer[len(buffer) - hold :]
                    break
                reasoning.append(buffer[:index])
                buffer = buffer[index + len(self._close) :]
                self._inside, self._done, self._trim_content = False, True, True
                continue
            stripped = buffer.lstrip()
            if stripped.startswith(self._open):
                buffer = stripped[len(self._open) :]
                self._inside, self._trim_reasoning = True, True
            elif stripped and self._open.startswith(stripped):
                self._held = buffer  # could still become the opening tag
                break
            elif stripped:
                self._done = True
            else:
                self._held = buffer
                break
        return Split(self._trimmed_reasoning("".join(reasoning)), self._trimmed_content(content))

    def _trimmed_reasoning(self, text: str) -> str:
        text = self._lead.feed(text)
        if not self._inside:  # the block is over: a held maybe-lead was thought after all
            text += self._lead.finish()
        if self._trim_reasoning and text:
            text = text.lstrip()
            self._trim_reasoning = not text
        return text

    def _trimmed_content(self, parts: list[str]) -> str:
        text = "".join(parts)
        if self._trim_content and text:
            text = text.lstrip()
            self._trim_content = not text
        return self._end.feed(text)

    def finish(self) -> Split:
        """Whatever was held back: an unfinished block is reasoning, a lone prefix content."""
        held, self._held = self._held, ""
        if self._inside:
            return Split(self._trimmed_reasoning(held) + self._lead.finish(), "")
        content = "" if self._trim_content else self._end.feed(held)
        return Split("", content + self._end.finish())


_HARMONY_ENDS = ("<|end|>", "<|call|>", "<|return|>", "<|start|>")
_HARMONY_HEADER_LIMIT = 256


class HarmonySplitter:
    """gpt-oss: ``analysis`` messages are reasoning, ``final`` ones the reply.

    A message addressed to a tool (``to=functions.NAME``) passes through whole, framing
    included, so the harmony tool-call parser downstream can read it.
    """

    def __init__(self) -> None:
        self._held = ""
        self._kind: str | None = None  # None: reading a header; else reasoning|content|call
        self._plain = False  # the reply carries no harmony framing at all

    def feed(self, text: str) -> Split:
        buffer = self._held + text
        reasoning: list[str] = []
        content: list[str] = []
        self._held = ""
        while buffer:
            if self._plain:
                content.append(buffer)
                break
            if self._kind is None:
                index = buffer.find("<|message|>")
                if index == -1:
                    if "<|" not in buffer and len(buffer) > _HARMONY_HEADER_LIMIT:
                        self._plain = True
                        continue
                    self._held = buffer
                    break
                header = buffer[:index]
                buffer = buffer[index + len("<|message|>") :]
                self._kind = _message_kind(header)
                if self._kind == "call":  # whole, with the <|start|> the tool filter cuts at
                    start = "" if header.startswith("<|start|>") else "<|start|>"
                    content.append(f"{start}{header}<|message|>")
                continue
            found = [(i, m) for m in _HARMONY_ENDS if (i := buffer.find(m)) != -1]
            if not found:
                hold = max(_partial_suffix(buffer, m) for m in _HARMONY_ENDS)
                body, self._held = buffer[: len(buffer) - hold], buffer[len(buffer) - hold :]
                self._route(body, reasoning, content)
                break
            index, marker = min(found)
            self._route(buffer[:index], reasoning, content)
            if self._kind == "call":
                content.append(marker)
            buffer = buffer[index + len(marker) :]
            self._kind = None
        return Split("".join(reasoning), "".join(content))

    def _route(self, body: str, reasoning: list[str], content: list[str]) -> None:
        (reasoning if self._kind == "reasoning" else content).append(body)

    def finish(self) -> Split:
        held, self._held = self._held, ""
        if self._kind == "reasoning":
            return Split(held, "")
        return Split("", held if self._kind is not None or "<|" not in held else "")


def _message_kind(header: str) -> str:
    if re.search(r"\bto=functions\.", header):
        return "call"
    channel = re.search(r"<\|channel\|>\s*(\w+)", header)
    return "reasoning" if channel and channel.group(1) == "analysis" else "content"


def _lit(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _class_char(ch: str) -> str:
    return "\\" + ch if ch in "\\]-^[" else ch


def with_reasoning(grammar: str, spec: ReasoningSpec, prompt: str) -> str:
    """A forced-call ``grammar`` that first lets the model reason in its own markers.

    A thinking model forced straight into a call is pushed out of distribution (it was
    trained to think first), so the reasoning block stays open to it: optional, or
    required to close when the prompt already opened it. The block's body is any text
    that does not contain the closing marker, spelled as GBNF alternatives.
    """
    close = spec.close
    body = " | ".join(
        (f"{_lit(close[:i])} " if i else "") + f"[^{_class_char(ch)}]" for i, ch in enumerate(close)
    )
    after = _lit(spec.close + ("<|start|>assistant" if spec is HARMONY else ""))
    block = f"reasoning-body {after} [ \\t\\n]*"
    head = block if starts_inside(spec, prompt) else f"({_lit(spec.open)} {block})?"
    renamed = re.sub(r"(?m)^root ::=", "forced-call ::=", grammar)
    return (f"root ::= {head} forced-call\nreasoning-body ::= ({body})*\n"
            f"{renamed}")  # fmt: skip
