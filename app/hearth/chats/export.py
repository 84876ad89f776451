"""A conversation as Markdown (to read) and as JSON (to keep or re-import).

Images: the Markdown links each one as a file in a folder beside the export (the
caller copies them there, :func:`copy_images`), so any Markdown viewer shows them; the
JSON carries each one as a data URL, so the one file keeps the whole chat.

Tool calls and document sources: the Markdown puts each call where it came in its
reply's text, folded (``<details>``: server, tool, outcome, time and approval on its
summary line; the arguments and the result inside), and each reply's sources folded
after it (file and page or line, with the passage's opening words); the JSON keeps all
of both, whole.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hearth.chats.attachments import PassageHit
from hearth.chats.images import ChatImage, ImageData, ImageIndex
from hearth.chats.models import (
    Conversation,
    Message,
    MessageStatus,
    ToolCallRecord,
    ToolOutcome,
)
from hearth.chats.tool_calls import approval_text, pretty_arguments

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System"}
JSON_FORMAT = "hearth.conversation"
JSON_VERSION = 1  # tool calls and sources were added as new keys: version 1 still reads

_OUTCOMES = {
    ToolOutcome.OK: "ok",
    ToolOutcome.ERROR: "failed",
    ToolOutcome.DENIED: "denied",
    ToolOutcome.STOPPED: "stopped",
}
_EXCERPT_CHARS = 160


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def _fenced(text: str, lang: str = "") -> list[str]:
    """``text`` in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text, fence]


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _call_markdown(call: ToolCallRecord) -> list[str]:
    facts = [call.tool, call.server or "unknown server", _OUTCOMES[call.outcome]]
    if call.seconds is not None:
        facts.append(f"{call.seconds:.2f} s")
    if approval_text(call):
        facts.append(approval_text(call))
    lang = "json" if _is_json(call.arguments) else ""  # else: as the model wrote them
    return [
        "<details>",
        f"<summary>Tool call: {html.escape(' · '.join(facts))}</summary>",
        "",
        "Arguments:",
        "",
        *_fenced(pretty_arguments(call.arguments), lang),
        "",
        "Result:",
        "",
        *_fenced(call.result or "(nothing)"),
        "",
        "</details>",
        "",
    ]


def _sources_markdown(sources: Sequence[PassageHit]) -> list[str]:
    lines = ["<details>", f"<summary>Sources ({len(sources)})</summary>", ""]
    for hit in sources:
        words = html.escape(" ".join(hit.text.split()), quote=False)  # text, not markup
        if len(words) > _EXCERPT_CHARS:
            words = words[:_EXCERPT_CHARS].rstrip() + "…"
        lines.append(f"- **{hit.where}**: {words}" if words else f"- **{hit.where}**")
    return [*lines, "", "</details>", ""]


def _content_markdown(msg: Message) -> list[str]:
    """The reply's text with each tool call folded where it came (its ``offset``)."""
    lines: list[str] = []
    start = 0
    for call in sorted(msg.tool_calls, key=lambda c: (c.offset, c.step)):
        cut = min(max(call.offset, start), len(msg.content))
        if msg.content[start:cut].strip():
            lines += [msg.content[start:cut].strip(), ""]
        lines += _call_markdown(call)
        start = cut
    rest = msg.content[start:]
    if rest.strip() or not msg.tool_calls:
        lines += [rest.strip() if msg.tool_calls else rest.rstrip(), ""]
    return lines


def conversation_markdown(
    conv: Conversation,
    messages: list[Message],
    images: Mapping[int, Sequence[ChatImage]] | None = None,
    images_folder: str = "",
    sources: Mapping[int, Sequence[PassageHit]] | None = None,
) -> str:
    """``images`` by message id; linked as ``images_folder/<sha256>.<ext>``.
    ``sources``: the passages each reply was given, by message id."""
    images = images or {}
    sources = sources or {}
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
        lines += _content_markdown(msg)
        if sources.get(msg.id):
            lines += _sources_markdown(sources[msg.id])
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


def _call_json(call: ToolCallRecord) -> dict[str, Any]:
    return {
        "step": call.step,
        "offset": call.offset,
        "call_id": call.call_id,
        "server": call.server,
        "tool": call.tool,
        "arguments": call.arguments,  # the JSON text, as the model wrote it
        "result": call.result,
        "outcome": call.outcome.value,
        "seconds": call.seconds,
        "approval": call.approval.value if call.approval else None,
    }


def _source_json(hit: PassageHit) -> dict[str, Any]:
    return {"name": hit.name, "page": hit.page, "line": hit.line, "text": hit.text}


def _message_json(
    msg: Message, images: Sequence[ImageData] = (), sources: Sequence[PassageHit] = ()
) -> dict[str, Any]:
    stats = {k: v for k, v in vars(msg.stats).items() if v is not None}
    out: dict[str, Any] = {
        "role": msg.role,
        "content": msg.content,
        "created": _iso(msg.created),
        "status": msg.status.value,
    }
    if images:
        out["images"] = [_image_json(i) for i in images]
    if msg.tool_calls:
        out["tool_calls"] = [_call_json(c) for c in msg.tool_calls]
    if sources:
        out["sources"] = [_source_json(s) for s in sources]
    if msg.detail:
        out["detail"] = msg.detail
    if stats:
        out["stats"] = stats
    return out


def conversation_json(
    conv: Conversation,
    messages: list[Message],
    images: Mapping[int, Sequence[ImageData]] | None = None,
    sources: Mapping[int, Sequence[PassageHit]] | None = None,
) -> str:
    """``images`` by message id, each written into its message as a data URL;
    ``sources`` by message id, each reply's passages whole."""
    images = images or {}
    sources = sources or {}
    data = {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "title": conv.title,
        "created": _iso(conv.created),
        "updated": _iso(conv.updated),
        "model": conv.model,
        "system_prompt": conv.system_prompt,
        "sampling": conv.sampling.to_dict(),
        "messages": [
            _message_json(m, images.get(m.id, ()), sources.get(m.id, ())) for m in messages
        ],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
