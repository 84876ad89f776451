"""What the Library says a model can do, from its header alone, agrees with what the
worker advertises for it once loaded (both come from core.model_traits)."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

import gguf_factory
from hearth.library import read_metadata
from hearth.library.capabilities import model_capabilities

QWEN3_LIKE = gguf_factory.CHATML_TEMPLATE + (
    "{% if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>"
    "<tool_call>{% endif %}"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>{% endif %}"
)


def _keys(path: Path, kind: str = "model") -> list[str]:
    return [c.key for c in model_capabilities(read_metadata(path), kind)]


def test_a_template_with_tools_and_thinking(tmp_path: Path) -> None:
    path = gguf_factory.write_tiny_llama(tmp_path / "q.gguf", chat_template=QWEN3_LIKE)
    caps = model_capabilities(read_metadata(path))
    assert [c.label for c in caps] == ["Tools", "Fill-in-middle", "Reasoning"]
    assert "hermes format" in caps[0].tooltip and "think markers" in caps[2].tooltip


def test_gemma4_reads_as_its_own_family(tmp_path: Path, llama_cpp_templates: Path) -> None:
    template = (llama_cpp_templates / "google-gemma-4-31B-it.jinja").read_text(encoding="utf-8")
    path = gguf_factory.write_tiny_llama(tmp_path / "g.gguf", chat_template=template)
    caps = {c.key: c for c in model_capabilities(read_metadata(path))}
    assert set(caps) == {"tools", "insert", "thinking"}
    assert "gemma4 format" in caps["tools"].tooltip
    assert "gemma4 markers" in caps["thinking"].tooltip


def test_a_plain_chat_template_only_completes(tmp_path: Path) -> None:
    path = gguf_factory.write_tiny_llama(tmp_path / "p.gguf")
    assert _keys(path) == ["insert"]  # the tiny llama has FIM tokens, nothing else


def test_an_encoder_without_a_template_is_an_embedding_model(tmp_path: Path) -> None:
    path = tmp_path / "embed.gguf"
    writer = gguf.GGUFWriter(path, "bert")
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert _keys(path) == ["embedding"]


def test_a_vision_projector_and_an_unread_file(tmp_path: Path) -> None:
    path = gguf_factory.write_tiny_llama(tmp_path / "p.gguf")
    assert _keys(path, kind="mmproj") == ["vision"]
    assert _keys(path, kind="adapter") == []
    assert model_capabilities(None) == ()
