"""LoadConfig's context: the default never passes the trained context; an explicit one wins."""

from __future__ import annotations

from pathlib import Path

from hearth.core.model_info import DEFAULT_CONTEXT, LoadConfig


def test_default_context_is_capped_by_the_trained_context() -> None:
    config = LoadConfig(model_path=Path("m.gguf"))
    assert config.n_ctx is None
    assert config.context_for(256) == 256
    assert config.context_for(32_768) == DEFAULT_CONTEXT
    assert config.context_for(0) == DEFAULT_CONTEXT  # the GGUF does not say


def test_explicit_context_is_kept_even_past_the_trained_one() -> None:
    config = LoadConfig(model_path=Path("m.gguf"), n_ctx=1024)
    assert config.context_for(256) == 1024
    assert config.context_for(0) == 1024
