"""Errors that cross layer boundaries.

Each carries a user-facing message that says what happened and what to do, so the
HTTP layer and the GUI can show it as is. The HTTP layer maps the class to a status.
"""

from __future__ import annotations


class HearthError(Exception):
    """Base of every error Hearth reports to a user or client."""

    code: str = "internal_error"

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class InvalidRequestError(HearthError):
    """The request itself is malformed or has out-of-range values."""

    code = "invalid_request"


class ContextOverflowError(InvalidRequestError):
    """The prompt (plus the requested completion) does not fit the context window."""

    code = "context_length_exceeded"

    def __init__(self, n_prompt: int, max_tokens: int, n_ctx: int) -> None:
        super().__init__(
            f"This prompt has {n_prompt} tokens and asks for up to {max_tokens} more, "
            f"but the model's context window holds {n_ctx} tokens per request. "
            "Shorten the conversation, lower max_tokens, or load the model with a larger "
            "context size.",
            param="messages",
        )
        self.n_prompt = n_prompt
        self.max_tokens = max_tokens
        self.n_ctx = n_ctx


class ModelNotFoundError(HearthError):
    """The client named a model that this worker does not serve."""

    code = "model_not_found"


class ModelNotLoadedError(HearthError):
    """No model is loaded yet, or the last load failed."""

    code = "model_not_loaded"


class ModelLoadError(HearthError):
    """llama.cpp could not load the file (missing, corrupt, too large for memory)."""

    code = "model_load_failed"


class LoadCancelledError(ModelLoadError):
    """The user cancelled a model load before it finished."""

    code = "model_load_cancelled"


class QueueFullError(HearthError):
    """Every slot is busy and the wait queue is full; the client should retry later."""

    code = "server_busy"

    def __init__(self, message: str, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class EngineFailedError(HearthError):
    """llama.cpp failed while decoding; the request cannot continue."""

    code = "engine_failed"


class ImagesNotSupportedError(InvalidRequestError):
    """A request has images, and the model that would answer it cannot see them.

    Refused, never answered as if the images had been seen."""

    code = "images_not_supported"

    def __init__(self, model: str, n_images: int, *, remote: bool = False) -> None:
        count = "an image" if n_images == 1 else f"{n_images} images"
        if remote:
            why = (
                f"This request has {count}, and Hearth does not pass images on to remote "
                f"engines ({model!r}). Send the message without images, or choose a local "
                "vision model."
            )
        else:
            why = (
                f"This request has {count}, but the model {model!r} reads text only: no "
                "vision projector (mmproj) is loaded with it. Choose a vision model loaded "
                "with its projector, or send the message without images."
            )
        super().__init__(why, param="messages")
        self.model = model
        self.n_images = n_images


class ModelsBusyError(QueueFullError):
    """A model must load, but the memory (or the model count) it needs is held by models
    with requests running, and they did not finish within the wait's bound."""

    code = "models_busy"
