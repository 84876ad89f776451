"""A GGUF without a chat template is rendered in its family's format where its vocabulary
has that family's turn tokens (engine/fallback_templates.py), else in ChatML: loaded in
the real engine from synthesized models, so this holds offline too (the real Gemma 3
case is in test_real_model.py)."""

from __future__ import annotations

from pathlib import Path

from gguf_scripted import Family, write_scripted
from hearth.core.generation import ChatMessage
from hearth.core.model_info import LoadConfig
from hearth.engine.engine import Engine

ASK = [ChatMessage("system", "Be brief."), ChatMessage("user", "Hi")]


def rendered(model: Path) -> str:
    engine = Engine()
    engine.load(LoadConfig(model_path=model, n_ctx=256, n_parallel=1, n_threads=2))
    try:
        return engine.render_chat(ASK)
    finally:
        engine.unload()


def test_gemma_turn_tokens_get_gemmas_format(tmp_path: Path) -> None:
    gemma = Family(controls=("<start_of_turn>", "<end_of_turn>"))
    model = write_scripted(tmp_path / "gemma-like.gguf", template=None, family=gemma, reply="ok")
    assert rendered(model) == (
        "<s><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
    )


def test_other_vocabularies_keep_chatml(tmp_path: Path) -> None:
    model = write_scripted(tmp_path / "plain.gguf", template=None, family=Family(), reply="ok")
    assert rendered(model) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
