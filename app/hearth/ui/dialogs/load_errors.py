"""Plain words for a model worker's load failures.

The worker reports llama.cpp's own messages (allocation failures, bad files, a missing
GPU backend, a busy port); a user needs to know what to change instead. Kept apart from
the Load dialog because the main window shows these too when a load fails.
"""

from __future__ import annotations


def plain_load_error(message: str | None) -> str:
    """A plain-words headline for a worker's load failure, followed by its details."""
    text = (message or "").strip()
    low = text.lower()
    if "cannot draft for" in low:  # engine/drafters.py: the vocabularies differ
        head = (
            "The draft model can't draft for this model: a draft model must use the same "
            "vocabulary (the same tokenizer). In the Load dialog, pick a smaller model of the "
            "same family as the draft model, or set Speculation to N-gram lookup or Off."
        )
    elif any(
        k in low
        for k in ("out of memory", "failed to allocate", "cudamalloc", "oom", "could not create a")
    ):
        head = (
            "Not enough memory to load this model. Offload fewer GPU layers, use a "
            "shorter context or fewer parallel slots, or pick a smaller quantization."
        )
    elif any(
        k in low for k in ("not a gguf", "gguf signature", "truncated", "corrupt", "unknown model")
    ) or ("not found" in low and "model file" in low):
        head = (
            "This file is not a usable model: it is missing, incomplete or corrupt, "
            "or not a GGUF file. Download it again or pick another file."
        )
    elif any(
        k in low
        for k in ("no gpu", "gpu backend", "no cuda", "cuda driver", "no usable gpu", "metal")
    ):
        head = (
            "The GPU backend is missing: this build of llama.cpp cannot use the GPU. "
            "Set GPU layers to 0 to run on the CPU, or install a GPU build."
        )
    elif "address already in use" in low or ("port" in low and "in use" in low):
        head = "The endpoint's port is already in use; pick another port in the Server panel."
    else:
        return text or "The model could not be loaded."
    return head + (f"\n\nDetails: {text}" if text else "")
