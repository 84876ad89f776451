"""The Jinja environment chat templates are written for.

Model authors test their templates with Hugging Face transformers' ``apply_chat_template``,
so that is the dialect Hearth speaks: a sandbox with ``trim_blocks`` and ``lstrip_blocks``,
``{% break %}``/``{% continue %}``, a ``{% generation %}`` block that simply renders its
body, a ``tojson`` that keeps non-ASCII text and takes ``indent``/``separators``/
``sort_keys``, and the ``raise_exception`` and ``strftime_now`` globals. Anything less
and real templates (Command-R7B, Kimi, GLM-4.6, LFM2.5 ...) fail to compile or render.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any, overload

from jinja2 import TemplateError, nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.parser import Parser
from jinja2.runtime import Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range

# When the render in progress on this thread must stop (monotonic seconds), if any.
_deadline: ContextVar[float | None] = ContextVar("hearth_template_deadline", default=None)


class TemplateRaisedError(TemplateError):
    """The template itself refused the conversation via ``raise_exception``."""


class TemplateTimeoutError(TemplateError):
    """The template ran past its time budget (a runaway loop in an untrusted template)."""


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Bound the renders on this thread; loops over ``range`` check it as they go."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def check_budget() -> None:
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline:
        raise TemplateTimeoutError("the chat template ran too long and was stopped")


class WatchedRange(Sequence[int]):
    """``range`` as the sandbox bounds it, but checking the time budget while iterated.

    The sandbox caps one range at 100k items; nested loops still multiply, and a
    template that never writes output would otherwise spin unseen.
    """

    def __init__(self, *args: int) -> None:
        self._range = safe_range(*args)

    def __len__(self) -> int:
        return len(self._range)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...
    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        return self._range[index]

    def __iter__(self) -> Iterator[int]:
        return _watched(self._range)

    def __reversed__(self) -> Iterator[int]:
        return _watched(self._range[::-1])

    def __contains__(self, value: object) -> bool:
        return value in self._range

    def __repr__(self) -> str:
        return repr(self._range)


def _watched(values: range) -> Iterator[int]:
    for count, value in enumerate(values):
        if count % 256 == 0:
            check_budget()
        yield value


class GenerationBlock(Extension):
    """``{% generation %}...{% endgeneration %}``: marks assistant text for training masks.

    Transformers uses the block to find which characters the assistant wrote; for
    inference only its body matters, so it renders the body unchanged.
    """

    tags = {"generation"}

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_render_body")
        return nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render_body(self, caller: Macro) -> str:
        return str(caller())


def raise_exception(message: object) -> None:
    raise TemplateRaisedError(str(message))


def strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)


def _lazy_sequence(value: Any) -> list[Any]:
    """``tools | map(attribute='function') | tojson``: Jinja's map is lazy, and json.dumps
    (so transformers) refuses it; llama.cpp renders it as a list (DeepSeek R1's
    template relies on that). Only values json.dumps would refuse reach here."""
    if isinstance(value, Iterator):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | list[str] | None = None,
    sort_keys: bool = False,
) -> str:
    """JSON without Jinja's HTML escaping (templates emit prompts, not web pages)."""
    seps = tuple(separators) if separators is not None else None
    return json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=seps,  # type: ignore[arg-type]
        sort_keys=sort_keys,
        default=_lazy_sequence,
    )


def make_environment() -> ImmutableSandboxedEnvironment:
    """A fresh sandbox with transformers' settings, filters and globals."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["range"] = WatchedRange
    return env
