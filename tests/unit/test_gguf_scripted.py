"""The scripted model's second script (gguf_scripted's ``Then``) under real llama.cpp:
the first script without the marker, the second with it anywhere in the prompt (even
thousands of tokens back), each to its end of text; the marker is one token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gguf_factory import EOS_ID
from gguf_scripted import Family, Then, write_scripted

llama_cpp = pytest.importorskip("llama_cpp")

FAMILY = Family(user_defined=("<tool_call>", "</tool_call>"))
FIRST = '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>'
SECOND = "It is noon, says the clock."
QUESTION = "<|im_start|>user\nWhat time is it?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[llama_cpp.Llama]:
    path = write_scripted(
        tmp_path_factory.mktemp("scripted") / "then.gguf",
        template=None,
        family=FAMILY,
        reply=FIRST,
        then=Then("<tool_response>", SECOND),
    )
    model = llama_cpp.Llama(model_path=str(path), n_ctx=4096, verbose=False)
    yield model
    model.close()


def _greedy(llm: llama_cpp.Llama, prompt: str) -> list[int]:
    """The token ids greedy decoding gives after ``prompt``, up to and with EOS."""
    llm.reset()
    out: list[int] = []
    for token in llm.generate(llm.tokenize(prompt.encode(), special=True), temp=0.0):
        out.append(token)
        if token == EOS_ID or len(out) > 8:
            return out
    return out


def _ids(llm: llama_cpp.Llama, *texts: str) -> list[int]:
    vocab = [llm.detokenize([i], special=True) for i in range(llm.n_vocab())]
    return [vocab.index(t.encode()) for t in texts]


def _script_ids(llm: llama_cpp.Llama) -> list[int]:
    """The four script tokens (the first script's three, the second's one): the
    vocabulary's last ids, in order (gguf_scripted.scripted_vocab)."""
    return list(range(llm.n_vocab() - 4, llm.n_vocab()))


def test_without_the_marker_the_first_script(llm: llama_cpp.Llama) -> None:
    call, end = _ids(llm, "<tool_call>", "</tool_call>")
    first = _script_ids(llm)[:3]
    assert first[0] == call and first[2] == end
    assert _greedy(llm, QUESTION) == [*first, EOS_ID]


def test_the_marker_is_one_token(llm: llama_cpp.Llama) -> None:
    (marker,) = _ids(llm, "<tool_response>")
    assert llm.tokenize(b"<tool_response>", add_bos=False) == [marker]


@pytest.mark.parametrize("filler", [0, 3000])
def test_with_the_marker_the_second_script(llm: llama_cpp.Llama, filler: int) -> None:
    prompt = (QUESTION + FIRST + "<|im_end|>\n<|im_start|>user\n<tool_response>\n"
              + "the " * filler + '{"now": "12:00"}\n</tool_response><|im_end|>\n'
              "<|im_start|>assistant\n")  # fmt: skip
    assert len(llm.tokenize(prompt.encode(), special=True)) > filler
    assert _greedy(llm, prompt) == [_script_ids(llm)[3], EOS_ID]  # SECOND: one piece
