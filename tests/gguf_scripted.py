"""Scripted GGUF models: greedy decoding emits a chosen token sequence, whatever the prompt.

Random weights can't be made to write a tool call, so these models are built by hand:

- one llama block whose attention output and FFN down projections are zero, so the
  residual stream at the last position is just the current token's embedding;
- every ordinary token embeds along axis 0, and the i-th script token along axis i + 1;
- the output matrix maps axis 0 to the first script token, axis i + 1 to script token
  i + 1, and the last axis to EOS.

So after any prompt (whose last token is ordinary) the model "answers" with exactly the
script. A script token equal to the prompt's last one (a lone "\n" after a generation
prompt ending in a newline) would be taken for it, so scripts avoid such short pieces.
The next token depends on the current one only, and llama.cpp wants token texts unique,
so a script never repeats a token (a marker's later uses are ordinary text). Markers
that are control tokens in the family's real vocabulary are CONTROL here too, so the
engine must keep them as text the way llama-server does, or the reply cannot be parsed.

**A second script after a marker** (``then=Then(marker, reply)``): the model answers
with the first script unless ``marker`` (a distinct vocabulary token, e.g. the
``<tool_response>`` a template wraps a tool's result in) is anywhere in the prompt, and
then with the second: a tool call first, a genuine answer once the result is in. The
first script is unchanged; three more axes at the top of the residual carry the switch:

- the marker embeds along its own axis M;
- attention head 0 finds it: its query is the same for every token (each normalised
  embedding is 16 on exactly one axis, and the query row reads every axis alike), its
  key is large on the marker only, and zero elsewhere: the marker scores 50, every other
  token 0. Query and key sit in the head's last, slowest rotary pair, where RoPE turns
  them by at most 0.55 rad across 4096 positions (the score stays above 42), so softmax
  puts all but e^-34 of the weight on the marker when it is there, and spreads it evenly
  over zero values when it is not (an exact 0). The value reads axis M, and the output
  projection writes it to a "mode" axis (16 with the marker, 0 without);
- the FFN computes "ordinary token AND mode" (SwiGLU: silu(gate) * up, the gate reading
  mode and the up reading axis 0): non-zero only at an ordinary token with the marker in
  the prompt, where it writes a "go" axis (exactly 0 otherwise, so without the marker
  the model is the plain scripted one);
- the output matrix maps "go" to the second script's first token (strongly enough to
  beat axis 0's pull to the first script), and chains the second script like the first.

Both scripts share one vocabulary, so no token may repeat across them, and the marker
must not be a script token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from gguf_factory import (
    EOS_ID,
    IM_END,
    IM_START,
    LlamaSpec,
    Vocab,
    prefixes,
    tensor_shapes,
    write_llama,
)

SPEC = LlamaSpec(n_embd=256, n_ff=256, n_layer=1, n_head=4, n_head_kv=4, context_length=4096)
_SCALE = 4.0  # embedding length; RMSNorm makes the scale irrelevant, it only must not be 0


@dataclass(frozen=True)
class Piece:
    """One script token: its text, and whether the family's vocabulary has it as a
    CONTROL token (dropped from text unless kept) or USER_DEFINED (always text)."""

    text: str
    kind: str = "normal"  # normal | control | user


@dataclass(frozen=True)
class Then:
    """A second script: the reply once ``marker`` (a token of its own) is in the prompt."""

    marker: str
    reply: str


@dataclass(frozen=True)
class Family:
    """A model family as the scripted model needs it: its control and user-defined
    marker tokens (the prompt's and the reply's)."""

    controls: tuple[str, ...] = ()
    user_defined: tuple[str, ...] = ()


def split_script(reply: str, family: Family) -> list[Piece]:
    """``reply`` cut at the family's markers: each marker one token of its kind, the text
    between one ordinary token each. A script cannot repeat a token, so a marker's later
    uses are spelled inside the ordinary text around them (harmony's second message:
    ``<|channel|>final<|message|>The answer.``); the reply's text is the same."""
    markers = sorted(
        [(m, "control") for m in family.controls] + [(m, "user") for m in family.user_defined],
        key=lambda item: -len(item[0]),
    )
    pieces: list[Piece] = []
    seen: set[str] = set()
    text = ""
    i = 0
    while i < len(reply):
        hit = next(((m, k) for m, k in markers if reply.startswith(m, i)), None)
        if hit is None or hit[0] in seen:  # a marker's second time is ordinary text
            step = len(hit[0]) if hit else 1
            text += reply[i : i + step]
            i += step
            continue
        seen.add(hit[0])
        if text:
            pieces.append(Piece(text))
            text = ""
        pieces.append(Piece(hit[0], hit[1]))
        i += len(hit[0])
    if text:
        pieces.append(Piece(text))
    return pieces


def _ordinary_pieces() -> list[str]:
    """Characters and a few words, so any prompt tokenizes (bytes cover the rest)."""
    out = ["\u2581"] + [chr(c) for c in range(33, 127)]
    for word in ("the", "user", "assistant", "system", "tool", "weather", "Paris"):
        out += prefixes("\u2581" + word)
    return out


def scripted_vocab(family: Family, script: Sequence[Piece]) -> tuple[Vocab, list[int]]:
    """The vocabulary, and the id of each script position.

    llama.cpp requires every token text to be unique, so a script may not repeat a
    token: its markers are its own entries, and ordinary pieces that equal a script
    text are left out (byte fallback still spells them in prompts).
    """
    texts = [p.text.replace(" ", "\u2581") if p.kind == "normal" else p.text for p in script]
    repeated = sorted({t for t in texts if texts.count(t) > 1})
    if repeated:
        raise ValueError(f"a script cannot repeat a token: {repeated}")
    taken = set(texts)
    tt = gguf.TokenType
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    types = [tt.UNKNOWN, tt.CONTROL, tt.CONTROL] + [tt.BYTE] * 256
    prompt_markers = [(m, tt.CONTROL) for m in (IM_START, IM_END, *family.controls)]
    prompt_markers += [(m, tt.USER_DEFINED) for m in family.user_defined]
    for marker, kind in prompt_markers:
        if marker not in tokens and marker not in taken:
            tokens.append(marker)
            types.append(kind)
    n_head = len(tokens)
    for piece in _ordinary_pieces():
        if piece not in tokens and piece not in taken:
            tokens.append(piece)
            types.append(tt.NORMAL)
    ids = list(range(len(tokens), len(tokens) + len(texts)))
    kinds = {"normal": tt.NORMAL, "control": tt.CONTROL, "user": tt.USER_DEFINED}
    tokens += texts
    types += [kinds[p.kind] for p in script]
    scores = [0.0] * n_head + [-float(i) for i in range(len(tokens) - n_head)]
    for i in ids:  # never preferred by the tokenizer over the ordinary pieces
        scores[i] = -1e6
    return Vocab(tokens=tokens, scores=scores, types=[int(t) for t in types]), ids


def _weights(vocab: Vocab, ids: Sequence[int]) -> dict[str, np.ndarray]:
    if len(ids) + 1 > SPEC.n_embd:
        raise ValueError(f"a script of {len(ids)} tokens needs n_embd > {len(ids)}")
    names = {k: gguf.TENSOR_NAMES[k].format(bid=0) + ".weight" for k in gguf.MODEL_TENSOR}
    shapes = tensor_shapes(SPEC, len(vocab.tokens))
    t = gguf.MODEL_TENSOR
    embd = np.zeros(shapes[names[t.TOKEN_EMBD]], dtype=np.float32)
    embd[:, 0] = _SCALE
    output = np.zeros(shapes[names[t.OUTPUT]], dtype=np.float32)
    for axis, token in enumerate(ids, start=1):
        embd[token, 0] = 0.0
        embd[token, axis] = _SCALE
    chain = [*ids, EOS_ID]
    for axis, nxt in enumerate(chain):  # axis 0 (any ordinary token) -> the first
        output[nxt, axis] = 1.0
    return {
        names[t.TOKEN_EMBD]: embd,
        names[t.OUTPUT]: output,
        names[t.ATTN_OUT]: np.zeros(shapes[names[t.ATTN_OUT]], dtype=np.float32),
        names[t.FFN_DOWN]: np.zeros(shapes[names[t.FFN_DOWN]], dtype=np.float32),
    }


# The switch's axes (the top of the residual) and head-0 dimensions; see the docstring.
_MARKER_AXIS, _MODE_AXIS, _GO_AXIS = SPEC.n_embd - 3, SPEC.n_embd - 2, SPEC.n_embd - 1
_QK_DIM = SPEC.head_dim - 2  # head 0's last rotary pair: the slowest to turn
_QK_GAIN = 1.25  # query x key gain: score 16 * 16 * 1.25 ** 2 / sqrt(64) = 50 on the marker
_GO_GAIN = 4.0  # "go" (~60 before the norm) x 4 outweighs axis 0 (4 x 1)


def _switch_weights(
    vocab: Vocab, first: Sequence[int], second: Sequence[int], marker: int
) -> dict[str, np.ndarray]:
    """The first script's weights plus the marker switch and the second script's chain."""
    weights = _weights(vocab, [*first, *second])
    names = {k: gguf.TENSOR_NAMES[k].format(bid=0) + ".weight" for k in gguf.MODEL_TENSOR}
    shapes = tensor_shapes(SPEC, len(vocab.tokens))
    t = gguf.MODEL_TENSOR
    embd, output = weights[names[t.TOKEN_EMBD]], weights[names[t.OUTPUT]]
    embd[marker] = 0.0
    embd[marker, _MARKER_AXIS] = _SCALE
    # _weights chained the two scripts as one: the first's last token ends the reply, and
    # the second starts from "go", not from the first's last token.
    output[:, len(first)] = 0.0
    output[EOS_ID, len(first)] = 1.0
    output[second[0], _GO_AXIS] = _GO_GAIN
    zero = {k: np.zeros(shapes[names[k]], dtype=np.float32)
            for k in (t.ATTN_Q, t.ATTN_K, t.ATTN_V, t.ATTN_OUT, t.FFN_GATE, t.FFN_UP,
                      t.FFN_DOWN)}  # fmt: skip
    zero[t.ATTN_Q][_QK_DIM, :] = _QK_GAIN  # the same query whatever the token
    zero[t.ATTN_K][_QK_DIM, _MARKER_AXIS] = _QK_GAIN  # a key on the marker only
    zero[t.ATTN_V][0, _MARKER_AXIS] = 1.0  # head 0, value dimension 0: "marker seen"
    zero[t.ATTN_OUT][_MODE_AXIS, 0] = 1.0
    zero[t.FFN_GATE][0, _MODE_AXIS] = 1.0  # unit 0 opens with the mode...
    zero[t.FFN_UP][0, 0] = 1.0  # ...at an ordinary token
    zero[t.FFN_DOWN][_GO_AXIS, 0] = 1.0
    weights.update({names[k]: v for k, v in zero.items()})
    return weights


def write_scripted(
    path: Path,
    *,
    template: str | None,
    family: Family,
    reply: str,
    name: str = "scripted",
    then: Then | None = None,
) -> Path:
    """A GGUF whose greedy reply is ``reply`` (cut at ``family``'s markers), with
    ``template`` as its chat template; with ``then``, ``then.reply`` is its reply
    whenever ``then.marker`` is in the prompt (see the module's docstring)."""
    script = split_script(reply, family)
    if then is None:
        vocab, ids = scripted_vocab(family, script)
        weights = _weights(vocab, ids)
    else:
        second = split_script(then.reply, family)
        if then.marker in {p.text for p in [*script, *second]}:
            raise ValueError(f"the marker {then.marker!r} cannot be a script token")
        if len(script) + len(second) + 4 > SPEC.n_embd:
            raise ValueError("the two scripts need more axes than the model has")
        extended = Family(family.controls, (*family.user_defined, then.marker))
        vocab, ids = scripted_vocab(extended, [*script, *second])
        marker = vocab.tokens.index(then.marker)
        weights = _switch_weights(vocab, ids[: len(script)], ids[len(script) :], marker)
    return write_llama(
        path, SPEC, vocab, name=name, dtype="F32", chat_template=template, weights=weights
    )
