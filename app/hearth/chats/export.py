"""A conversation as Markdown (to read) and as JSON (to keep or re-import).

Images: the Markdown links each one as a file in a folder beside the export (the
caller copies them there, :func:`copy_images`), so any Markdown viewer shows them; the
JSON carries each one as a data URL, so the one file keeps the whole chat.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hearth.chats.images import ChatImage, ImageData, ImageIndex
from hearth.chats.models import Conversation, Message, MessageStatus

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System"}
JSON_FORMAT = "hearth.conversation"
JSON_VERSION = 1


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def conversation_markdown(
    conv: Conversation,
    messages: list[Message],
    images: Mapping[int, Sequence[ChatImage]] | None = None,
    images_folder: str = "",
) -> str:
    """``images`` by message id; linked as ``images_folder/<sha256>.<ext>``."""
    images = images or {}
    lines = [f"# {conv.title}", ""]
    facts = [f"- Created: {_iso(conv.created)}"]
    if conv.model:
        facts.append(f"- Model: {conv.model}")
    sampling = conv.sampling.to_dict()
    if sampling:
        facts.append("- Sampling: " + ", ".join(f"{k}={v}" for k, v in sampling.items()))
    lines += [*facts, ""]
    if conv.system_prompt:
        lines += ["## System prompt", "", conv.system_prompt, ""]
    for msg in messages:
        lines += [f"## {ROLE_TITLES.get(msg.role, msg.role)}", ""]
        for n, image in enumerate(images.get(msg.id, ()), start=1):
            where = f"{images_folder}/{image.filename}" if images_folder else image.filename
            lines += [f"![Image {n} ({image.width}x{image.height})]({where})", ""]
        lines += [msg.content.rstrip(), ""]
        if msg.status is not MessageStatus.COMPLETE:
            note = msg.detail or msg.status.value
            lines += [f"*({msg.status.value}: {note})*", ""]
    return "\n".join(lines).rstrip() + "\n"


def copy_images(
    index: ImageIndex, images: Mapping[int, Sequence[ChatImage]], folder: Path
) -> list[Path]:
    """Copy each shown image's file into ``folder`` once; the copies (missing files are
    skipped: the Markdown still names them)."""
    copied: list[Path] = []
    unique = {i.sha256: i for found in images.values() for i in found}
    for image in unique.values():
        source = index.path(image)
        if not source.is_file():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        copied.append(Path(shutil.copyfile(source, folder / image.filename)))
    return copied


def _image_json(item: ImageData) -> dict[str, Any]:
    image = item.image
    data = base64.b64encode(item.data).decode("ascii")
    return {
        "sha256": image.sha256,
        "mime": image.mime,
        "width": image.width,
        "height": image.height,
        "data_url": f"data:{image.mime};base64,{data}",
    }


def _message_json(msg: Message, images: Sequence[ImageData] = ()) -> dict[str, Any]:
    stats = {k: v for k, v in vars(msg.stats).items() if v is not None}
    out: dict[str, Any] = {
        "role": msg.role,
        "content": msg.content,
        "created": _iso(msg.created),
        "status": msg.status.value,
    }
    if images:
        out["images"] = [_image_json(i) for i in images]
    if msg.detail:
        out["detail"] = msg.detail
    if stats:
        out["stats"] = stats
    return out


def conversation_json(
    conv: Conversation,
    messages: list[Message],
    images: Mapping[int, Sequence[ImageData]] | None = None,
) -> str:
    """``images`` by message id, each written into its message as a data URL."""
    images = images or {}
    data = {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "title": conv.title,
        "created": _iso(conv.created),
        "updated": _iso(conv.updated),
        "model": conv.model,
        "system_prompt": conv.system_prompt,
        "sampling": conv.sampling.to_dict(),
        "messages": [_message_json(m, images.get(m.id, ())) for m in messages],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
