"""Images kept with chats: checks, content-addressed files, rows, deletion and export."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from hearth.chats import ChatStore
from hearth.chats.images import ImageFileError, check_image, read_image_file
from hearth.config.paths import chat_images_dir
from image_files import huge_header_png, jpeg_bytes, png_bytes


def test_check_reads_format_size_and_sha() -> None:
    item = check_image(png_bytes(24, 16), "cat.png")
    assert (item.image.mime, item.image.width, item.image.height) == ("image/png", 24, 16)
    assert item.image.filename == f"{item.image.sha256}.png"
    assert check_image(jpeg_bytes()).image.mime == "image/jpeg"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"not an image at all", "not an image"),
        (png_bytes(64, 64)[:60], "damaged"),
        (huge_header_png(), "megapixels"),
        (huge_header_png(8000, 7000), "8000x7000"),
    ],
    ids=["empty", "garbage", "truncated", "bomb", "over-limit"],
)
def test_bad_files_are_refused_with_a_message(data: bytes, words: str) -> None:
    with pytest.raises(ImageFileError, match=words):
        check_image(data, "x.png")


def test_a_file_too_big_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    with big.open("wb") as out:
        out.truncate(9 * 1024 * 1024)
    with pytest.raises(ImageFileError, match="MB"):
        read_image_file(big)
    with pytest.raises(ImageFileError, match="can't be read"):
        read_image_file(tmp_path / "missing.png")


def _chat_with_images(store: ChatStore, *images: bytes) -> tuple[int, int]:
    conv = store.create_conversation("pics")
    msg = store.add_message(conv.id, "user", "what is this?")
    store.images.add(msg.id, [check_image(d, f"{n}.png") for n, d in enumerate(images)])
    store.add_message(conv.id, "assistant", "a red square")
    return conv.id, msg.id


def test_images_persist_in_order_and_the_same_picture_is_one_file(tmp_path: Path) -> None:
    db = tmp_path / "chats.db"
    store = ChatStore(db)
    red, blue = png_bytes(color=(255, 0, 0)), png_bytes(color=(0, 0, 255))
    cid, mid = _chat_with_images(store, red, blue)
    _chat_with_images(store, red)
    store.close()
    store = ChatStore(db)
    shown = store.images.of_messages(m.id for m in store.messages(cid))
    assert [i.sha256 for i in shown[mid]] == [check_image(d).image.sha256 for d in (red, blue)]
    assert [d.data for d in store.images.load(shown[mid])] == [red, blue]
    assert len(list(chat_images_dir(db).iterdir())) == 2  # red once, though in two chats


def test_deleting_a_chat_deletes_only_images_no_other_chat_shows(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats.db")
    red, blue = png_bytes(color=(255, 0, 0)), png_bytes(color=(0, 0, 255))
    first, _ = _chat_with_images(store, red, blue)
    second, _ = _chat_with_images(store, red)
    folder = chat_images_dir(tmp_path / "chats.db")
    store.delete_conversation(first)
    assert [p.name for p in folder.iterdir()] == [check_image(red).image.filename]
    store.delete_conversation(second)
    assert list(folder.iterdir()) == []


def test_deleting_messages_from_an_edited_turn_prunes_its_images(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats.db")
    cid, mid = _chat_with_images(store, png_bytes())
    store.delete_messages_from(cid, mid)
    assert list(chat_images_dir(tmp_path / "chats.db").iterdir()) == []


def test_markdown_export_links_copied_files_and_json_carries_data_urls(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats.db")
    red = png_bytes(color=(255, 0, 0))
    cid, _ = _chat_with_images(store, red)
    name = check_image(red).image.filename
    markdown = store.export_markdown(cid, "chat-images")
    assert f"![Image 1 (24x16)](chat-images/{name})" in markdown
    assert markdown.index(name) < markdown.index("what is this?")
    copied = store.export_image_files(cid, tmp_path / "out" / "chat-images")
    assert [p.read_bytes() for p in copied] == [red]
    data = json.loads(store.export_json(cid))
    image = data["messages"][0]["images"][0]
    assert image["mime"] == "image/png" and (image["width"], image["height"]) == (24, 16)
    prefix = "data:image/png;base64,"
    assert base64.b64decode(image["data_url"].removeprefix(prefix)) == red
    assert "images" not in data["messages"][1]
