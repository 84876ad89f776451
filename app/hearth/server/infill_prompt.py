"""The token layout of an ``/infill`` prompt, from the model's own FIM tokens.

llama-server's ``format_prompt_infill`` defines what llama.vscode and llama.vim expect,
and we follow its layout: context from other files first, then the code around the
cursor. A model with repository-level tokens (Qwen2.5-Coder) reads that context as
files of one repository (https://arxiv.org/abs/2409.12186)::

    [REP]myproject\\n [SEP]a.py\\n <text> [SEP]b.py\\n <text> [SEP]filename\\n
    [PRE]<prefix><prompt> [SUF]<suffix> [MID]

and any other FIM model reads it as snippets behind a plain separator. The prefix keeps
its last tokens and the suffix its first, within the batch (3:1); the extra context
fills what is left of the context, most recent chunks kept.

Two differences from llama-server, both for small contexts: the budget for the code
around the cursor is half the context when that is less than the batch (llama-server
would leave no room for extra context in a 2k context with a 2k batch), and the extra
context never pushes the prompt plus ``n_predict`` past the context. BOS, when the
vocabulary adds one, comes first rather than after the extra context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hearth.core.fim import FimLayout

Tokenize = Callable[[str], list[int]]
"""Plain text to tokens: no BOS, special-token text not parsed (it is the user's code)."""

REPO_NAME = "myproject\n"  # llama-server's fixed repository name
CURRENT_FILE = "filename\n"  # llama-server names the file being edited this way
SNIPPET_SEPARATOR = "\n\n--- snippet ---\n\n"  # between chunks for models with no [SEP]
_MIN_BATCH = 16


@dataclass(frozen=True)
class ExtraFile:
    """Context from another file (llama.vscode sends chunks of recently seen code)."""

    filename: str
    text: str


@dataclass(frozen=True)
class InfillParts:
    """What the editor sent: the code around the cursor, and context from elsewhere."""

    prefix: str
    suffix: str
    prompt: str = ""  # text right before the cursor, after the prefix
    extra: tuple[ExtraFile, ...] = ()


def infill_tokens(
    layout: FimLayout, tokenize: Tokenize, parts: InfillParts, *, n_ctx: int, n_predict: int
) -> list[int]:
    """The whole prompt as tokens; see the module docstring for the layout."""
    prefix = tokenize(parts.prefix)
    suffix = tokenize(parts.suffix)
    prompt = tokenize(parts.prompt) if parts.prompt else []
    n_batch = max(_MIN_BATCH, min(layout.n_batch, n_ctx // 2))
    take_prefix = min(len(prefix), 3 * (n_batch // 4))
    take_suffix = min(len(suffix), max(0, n_batch // 4 - (2 + len(prompt))))
    prefix = prefix[len(prefix) - take_prefix :]
    suffix = suffix[:take_suffix]
    head = [layout.bos] if layout.bos is not None else []
    fim = [layout.pre, *prefix, *prompt, layout.suf, *suffix, layout.mid]

    extra = extra_tokens(layout, tokenize, parts.extra)
    reserve = max(n_predict, 0)
    room = min(n_ctx - n_batch - 2 * reserve, n_ctx - len(head) - len(fim) - reserve - 1)
    take_extra = min(len(extra), max(0, room))
    return [*head, *extra[len(extra) - take_extra :], *fim]


def extra_tokens(layout: FimLayout, tokenize: Tokenize, files: Sequence[ExtraFile]) -> list[int]:
    """Other files' text, as one repository when the model has the tokens for it."""
    out: list[int] = []
    if layout.rep is not None:
        out += [layout.rep, *tokenize(REPO_NAME)]
    for item in files:
        if layout.sep is not None:
            out += [layout.sep, *tokenize(item.filename + "\n")]
        else:
            out += tokenize(SNIPPET_SEPARATOR)
        out += tokenize(item.text)
    if layout.sep is not None:
        out += [layout.sep, *tokenize(CURRENT_FILE)]
    return out
