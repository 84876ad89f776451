"""A loaded model's fill-in-the-middle tokens, as the infill and completion routes need them.

Models trained for FIM (code models) have prefix, suffix and middle tokens; a prompt
laid out with them asks for the code between a prefix and a suffix. Models without
them cannot infill, which a request asking for a suffix must hear clearly.
"""

from __future__ import annotations

import logging

from hearth.core.errors import InvalidRequestError
from hearth.core.fim import FimLayout
from hearth.engine.model import LlamaModel

log = logging.getLogger(__name__)


def fim_token_texts(model: LlamaModel) -> tuple[str, str, str] | None:
    """The FIM prefix/suffix/middle tokens as text, for clients that render FIM."""
    fim = model.fim_tokens()
    if fim is None:
        return None
    pre, suf, mid = (model.token_text(t) for t in fim)
    return pre, suf, mid


def fim_layout(model: LlamaModel) -> FimLayout | None:
    """The model's FIM tokens for laying out an infill prompt; None when the model was
    not trained for fill-in-the-middle."""
    fim = model.fim_tokens()
    if fim is None:
        return None
    rep, sep = model.fim_repo_tokens()
    bos = model.bos if model.add_bos and model.bos >= 0 else None
    return FimLayout(*fim, rep=rep, sep=sep, bos=bos, n_batch=model.config.n_batch)


def fim_prompt(model: LlamaModel, prefix: str, suffix: str) -> list[int]:
    """``prefix`` and ``suffix`` in the model's FIM layout, ready to generate the middle;
    special-token text inside them stays text (code may well contain it)."""
    fim = model.fim_tokens()
    if fim is None:
        raise InvalidRequestError(
            "This model has no fill-in-the-middle tokens, so 'suffix' is not supported.",
            param="suffix",
        )
    pre, suf, mid = fim
    head = [model.bos] if model.add_bos and model.bos >= 0 else []
    return [
        *head,
        pre,
        *model.tokenize(prefix, add_special=False, parse_special=False),
        suf,
        *model.tokenize(suffix, add_special=False, parse_special=False),
        mid,
    ]
