"""What a loaded model can do, read off its chat template, vocabulary and metadata.

The logic is ``core/model_traits.py``, shared with the Library (which shows it before a
model is loaded); the engine calls it once at load with the vocabulary's marker tokens
and the chosen ``--chat-format``, and the server's dialects read the result.
"""

from __future__ import annotations

from hearth.core.model_traits import FAMILY_REASONING, ModelTraits, model_traits

__all__ = ["FAMILY_REASONING", "ModelTraits", "model_traits"]
