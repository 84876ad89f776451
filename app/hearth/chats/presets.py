"""Presets that ship with Hearth (a system prompt plus sampling, like a Modelfile)."""

from __future__ import annotations

from hearth.chats.models import SamplingSettings

# name -> (system prompt, sampling). Seeded into a new store; never deleted.
BUILTIN_PRESETS: dict[str, tuple[str, SamplingSettings]] = {
    "Default": ("", SamplingSettings()),
    "Precise": (
        "You are a careful assistant. Answer accurately and concisely.",
        SamplingSettings(temperature=0.2, top_p=0.9, top_k=40, min_p=0.05),
    ),
    "Creative": (
        "You are an imaginative writer.",
        SamplingSettings(temperature=1.0, top_p=0.95, top_k=100, min_p=0.02, repeat_penalty=1.1),
    ),
    "Coder": (
        "You are an expert programmer. Answer with working code in fenced code blocks "
        "and keep explanations short.",
        SamplingSettings(temperature=0.2, top_p=0.95, top_k=40, min_p=0.05, repeat_penalty=1.05),
    ),
}
