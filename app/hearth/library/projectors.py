"""The vision projector on disk beside a model file (the rule: core/projector_pairing.py)."""

from __future__ import annotations

import logging
from pathlib import Path

from hearth.core.projector_pairing import is_projector, pair_projector

log = logging.getLogger(__name__)


def projector_beside(model: Path) -> Path | None:
    """The projector in ``model``'s folder that pairs with it, or None (also when the
    folder cannot be listed: the model then loads for text alone)."""
    try:
        beside = [p for p in model.parent.iterdir() if is_projector(p) and p.is_file()]
    except OSError as exc:
        log.debug("cannot list %s for a projector: %s", model.parent, exc)
        return None
    return pair_projector(model, beside)
