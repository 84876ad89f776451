"""Images in the chat: attached by button, paste and drop, checked, removed; kept with the
chat and shown again when it is reopened; in both exports; sent as the worker reads
them; and, with a model that can't see, the attach button says so and offers a pick."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication, QImage, QTextCursor, QTextDocument
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from hearth.chats import ChatStore, SamplingSettings
from hearth.chats.images import ImageData, check_image
from hearth.core.images import MAX_IMAGES_PER_REQUEST
from hearth.server.openai_schemas import ChatCompletionRequest
from hearth.supervisor import LoadOptions, WorkerState
from hearth.ui.chat.image_hint import VisionState
from hearth.ui.chat.image_view import IMAGE_SCHEME, ImageViewer, insert_images
from hearth.ui.chat.rows import ConversationRef, NewConversation, TurnState, setup_rows
from hearth.ui.chat.turns import Turn
from hearth.ui.shell.main_window import MainWindow
from image_files import big_jpeg_bytes, png_bytes

pytestmark = pytest.mark.ui


@pytest.fixture
def window(offline_window: MainWindow) -> MainWindow:
    offline_window.show()
    offline_window.chat_view.set_can_send(True)  # the composer shows (no worker needed)
    return offline_window


def _image_file(folder: Path, name: str = "red.png", **kw: object) -> Path:
    path = folder / name
    path.write_bytes(png_bytes(**kw))  # type: ignore[arg-type]
    return path


def _read_all(qtbot: QtBot, composer: object) -> None:
    """Wait until the composer has read every image attached (a worker thread reads,
    checks and scales them)."""
    images = composer.images  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: not images.reading, timeout=30_000)


def _drop(widget: object, mime: QMimeData) -> None:
    event = QDropEvent(
        QPointF(10, 10),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    widget.dropEvent(event)  # type: ignore[attr-defined]


def test_attach_by_button_then_remove_a_thumbnail(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    composer = window.chat_view.composer
    assert not composer.tray.isVisible()
    red = _image_file(tmp_path, "red.png", color=(255, 0, 0))
    blue = _image_file(tmp_path, "blue.png", color=(0, 0, 255))
    composer.attach_files([red, blue])  # what the file dialog hands over
    _read_all(qtbot, composer)
    assert [i.name for i in composer.images.items] == ["red.png", "blue.png"]
    qtbot.waitUntil(composer.tray.isVisible)
    assert len(composer.tray.thumbs) == 2
    assert "red.png · 24x16" in composer.tray.thumbs[0].toolTip()
    qtbot.mouseClick(composer.tray.remove_buttons[0], Qt.MouseButton.LeftButton)
    assert [i.name for i in composer.images.items] == ["blue.png"]
    assert len(composer.tray.thumbs) == 1
    qtbot.mouseClick(composer.tray.remove_buttons[0], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not composer.tray.isVisible())


def test_a_bad_file_is_refused_with_a_message(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    composer = window.chat_view.composer
    broken = tmp_path / "broken.png"
    broken.write_bytes(png_bytes(64, 64)[:50])
    composer.attach_files([broken])
    _read_all(qtbot, composer)
    assert composer.images.items == []
    assert "broken.png is damaged or cut short" in composer.tray.error.text()
    assert composer.tray.error.isVisible()
    composer.attach_files([_image_file(tmp_path)])  # a good one clears the line
    _read_all(qtbot, composer)
    assert composer.tray.error.text() == ""


def test_paste_an_image_or_text(qtbot: QtBot, window: MainWindow) -> None:
    view = window.chat_view
    clipboard = QGuiApplication.clipboard()
    picture = QImage(30, 20, QImage.Format.Format_RGB32)
    picture.fill(Qt.GlobalColor.green)
    clipboard.setImage(picture)
    view.input.setFocus()
    view.input.paste()
    _read_all(qtbot, view.composer)
    assert len(view.composer.images.items) == 1
    pasted = view.composer.images.items[0].image
    assert (pasted.mime, pasted.width, pasted.height) == ("image/png", 30, 20)
    assert view.input.toPlainText() == ""  # nothing pasted as text
    clipboard.setText("plain words")
    view.input.paste()
    assert view.input.toPlainText() == "plain words"
    assert len(view.composer.images.items) == 1


def test_drop_images_and_other_files(qtbot: QtBot, window: MainWindow, tmp_path: Path) -> None:
    composer = window.chat_view.composer
    dropped: list[list[Path]] = []
    composer.files_dropped.connect(dropped.append)
    image = _image_file(tmp_path)
    doc = tmp_path / "notes.pdf"
    doc.write_bytes(b"%PDF-1.4")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(image)), QUrl.fromLocalFile(str(doc))])
    _drop(composer, mime)
    _read_all(qtbot, composer)
    assert [i.name for i in composer.images.items] == ["red.png"]
    assert dropped == [[doc]]
    _drop(composer.input, mime)  # onto the message box: the same, not a path as text
    _read_all(qtbot, composer)
    assert len(composer.images.items) == 2 and dropped == [[doc], [doc]]
    assert composer.input.toPlainText() == ""


def test_a_model_that_cant_see_says_so_on_the_button(
    qtbot: QtBot, arun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model_q8: Path
) -> None:
    """A real worker with a text-only model: the attach button says it can't see and
    offers the vision pick that fits; an image dropped is not attached."""
    window = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=LoadOptions(n_ctx=512, n_parallel=1),
        chats_db=tmp_path / "chats.db",
    )
    qtbot.addWidget(window)
    window.show()
    composer = window.chat_view.composer
    repos: list[str] = []
    composer.discover_requested.connect(repos.append)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # no Hub from tests

    async def scenario() -> None:
        window.open_model(tiny_model_q8)
        await arun.wait_until(
            lambda: window.supervisor.status.state is WorkerState.READY, 120, "the model"
        )
        await arun.wait_until(lambda: composer.attach_button.blind, 30, "the vision check")

    arun(scenario())
    state = composer.attach_button.state
    assert state.model == window.supervisor.model_id
    assert "can't see images" in composer.attach_button.toolTip()
    expected = arun(window.vision.best_pick())
    assert state.pick == expected
    if expected is not None:
        assert expected.vision and expected.name in composer.attach_button.toolTip()
    qtbot.mouseClick(composer.attach_button, Qt.MouseButton.LeftButton)
    popover = composer.attach_button.popover
    qtbot.waitUntil(popover.isVisible)
    assert "can't see images" in popover.label.text()
    qtbot.mouseClick(popover.button, Qt.MouseButton.LeftButton)
    assert repos == [expected.repo if expected else ""]
    discover = window.discover_page  # one click opens Discover on the pick
    assert window.pages.currentWidget() is discover or discover.isAncestorOf(
        window.pages.currentWidget()
    )
    if expected is not None:
        assert discover.stack.currentWidget() is discover.model_page
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(_image_file(tmp_path)))])
    _drop(composer, mime)
    assert composer.images.items == []
    assert popover.isVisible()
    window.close()


def test_a_sent_image_is_kept_shown_exported_and_sent_again(
    qtbot: QtBot, arun, window: MainWindow, tmp_path: Path
) -> None:
    """The rows a turn writes (real SQLite), the chat reopened, its request, exports."""
    red = check_image(png_bytes(40, 30, (255, 0, 0)), "red.png")
    user = Turn("user", "What colour is this?", images=[red])
    state = TurnState(user=user, reply=Turn("assistant", ""), ref=ConversationRef())
    new = NewConversation("tiny", "", SamplingSettings(), None)
    window.chats_db.sync(lambda s: setup_rows(s, state, new))
    cid = state.ref.id
    assert cid is not None
    kept = tmp_path / "images" / red.image.filename
    assert kept.read_bytes() == red.data  # in the data folder, beside chats.db

    arun(window.chat.open_conversation(cid))
    chat, transcript = window.chat, window.chat_view.transcript
    assert [(i.image, i.data) for i in chat.turns[0].images] == [(red.image, red.data)]
    assert red.image.sha256 in transcript.images  # drawn in the bubble
    viewer = transcript.show_image(red.image.sha256)  # a click on the thumbnail
    assert viewer is not None
    qtbot.waitUntil(lambda: viewer.loaded)  # decoded on a worker thread
    assert (viewer.picture.image.width(), viewer.picture.image.height()) == (40, 30)
    assert viewer.picture.image.pixelColor(0, 0).getRgb()[:3] == (255, 0, 0)
    viewer.close()

    # The next turn sends it again, as the worker's OpenAI decoder reads it.
    decoded = ChatCompletionRequest(messages=chat.request_messages()).chat_messages()
    assert decoded[0].content.endswith("What colour is this?")
    (image,) = decoded[0].images
    assert (image.width, image.height) == (40, 30)
    assert image.rgb[:3] == bytes((255, 0, 0))

    md = arun(window.sidebar.export(cid, tmp_path / "out" / "chat.md", "md"))
    assert f"(chat-images/{red.image.filename})" in md.read_text(encoding="utf-8")
    assert (tmp_path / "out" / "chat-images" / red.image.filename).read_bytes() == red.data
    js = arun(window.sidebar.export(cid, tmp_path / "out" / "chat.json", "json"))
    sent = json.loads(js.read_text(encoding="utf-8"))["messages"][0]["images"][0]
    assert sent["sha256"] == red.image.sha256 and sent["data_url"].startswith("data:image/png")

    arun(window.sidebar.delete(cid))  # no other chat shows it: the file goes too
    assert not kept.exists()
    assert window.chats_db.sync(ChatStore.list_conversations) == []


def test_send_to_a_model_that_cant_see_keeps_the_images(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    """Send with a model known not to see: the images stay in the composer and the
    popover says why (nothing is lost, nothing is sent)."""
    composer = window.chat_view.composer
    composer.attach_files([_image_file(tmp_path)])
    _read_all(qtbot, composer)
    composer.set_vision(VisionState(sees=False, model="text-only"))
    images = window.chat_view.take_images()
    assert len(images) == 1 and composer.images.items == []
    assert window.chat.send("What is this?", images) is None
    assert composer.images.items == images
    assert window.chat.turns == []
    assert composer.attach_button.popover.isVisible()
    assert "text-only can't see images" in composer.attach_button.popover.label.text()


def test_send_past_the_image_limit_keeps_the_images(window: MainWindow) -> None:
    """A chat's images all go with each turn: one past the worker's limit is not sent;
    the tray says why and keeps every image (nothing is lost, no turn starts)."""
    composer = window.chat_view.composer
    red = check_image(png_bytes(color=(255, 0, 0)), "red.png")
    images = [red] * (MAX_IMAGES_PER_REQUEST + 1)
    assert window.chat.send("Compare these", images) is None
    assert composer.images.items == images
    assert window.chat.turns == []
    assert f"{MAX_IMAGES_PER_REQUEST} images at most" in composer.tray.error.text()
    assert not composer.tray.error.isHidden()


def test_editing_a_message_puts_its_images_back_in_the_composer(
    qtbot: QtBot, arun, window: MainWindow
) -> None:
    red = check_image(png_bytes(color=(255, 0, 0)), "red.png")
    user = Turn("user", "And this one?", images=[red])
    state = TurnState(user=user, reply=Turn("assistant", ""), ref=ConversationRef())
    new = NewConversation("tiny", "", SamplingSettings(), None)
    window.chats_db.sync(lambda s: setup_rows(s, state, new))
    assert state.ref.id is not None
    arun(window.chat.open_conversation(state.ref.id))
    view = window.chat_view
    window.chat.begin_edit(0)
    assert view.input.toPlainText() == "And this one?"
    assert [i.image for i in view.composer.images.items] == [red.image]
    qtbot.keyClick(view.input, Qt.Key.Key_Escape)  # cancel the edit: the tray empties too
    assert view.composer.images.items == [] and view.input.toPlainText() == ""


class TickProbe:
    """A 5 ms timer on the Qt event loop and the longest gap between its ticks past
    its interval: how long the loop was stalled (bench/ui.py's probe)."""

    def __init__(self, interval_ms: int = 5) -> None:
        self.interval = interval_ms / 1000
        self.ticks = 0
        self.max_gap = 0.0
        self._last = 0.0
        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)

    def start(self) -> None:
        self._last = time.perf_counter()
        self.timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.ticks += 1
        self.max_gap = max(self.max_gap, now - self._last - self.interval)
        self._last = now

    def stop(self) -> float:
        self.timer.stop()
        return max(self.max_gap, 0.0)


@pytest.fixture(scope="module")
def photo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40-megapixel JPEG (7300x5480, under the 8 MB limit): about a second to
    decode on a slow machine."""
    path = tmp_path_factory.mktemp("photo") / "photo.jpg"
    path.write_bytes(big_jpeg_bytes(7300, 5480))
    return path


def test_a_large_photo_is_read_off_the_qt_thread(
    qtbot: QtBot, window: MainWindow, photo: Path
) -> None:
    """A spinner holds the photo's place at once; the event loop keeps turning while
    the photo is decoded, checked and scaled; then its thumbnail takes the place."""
    composer = window.chat_view.composer
    probe = TickProbe()
    probe.start()
    composer.attach_files([photo])
    assert composer.images.reading and composer.images.items == []
    (spinner,) = composer.tray.spinners
    qtbot.waitUntil(spinner.isVisible)
    assert spinner.turning
    qtbot.waitUntil(lambda: not composer.images.reading, timeout=60_000)
    ticks, stall = probe.ticks, probe.stop()
    print(f"read with {ticks} ticks, longest stall {stall * 1000:.1f} ms")
    # Decoding 40 MP on the Qt thread stalls it for 0.3-1.5 s (machine-dependent);
    # off it, the timer keeps ticking.
    assert stall < 0.15, f"the event loop stalled {stall * 1000:.0f} ms"
    assert ticks >= 5
    (item,) = composer.images.items
    assert (item.image.width, item.image.height) == (7300, 5480)
    assert composer.tray.spinners == []
    (thumb,) = composer.tray.thumbs
    assert isinstance(thumb, QLabel)
    assert (thumb.pixmap().width(), thumb.pixmap().height()) == (56, 42)
    assert "photo.jpg · 7300x5480" in thumb.toolTip()


def test_removing_an_image_being_read_cancels_it_and_keeps_order(
    qtbot: QtBot, window: MainWindow, photo: Path, tmp_path: Path
) -> None:
    """Images keep the order they were attached in, whichever is read first; one
    removed while it reads is gone at once, and the message waits for the others."""
    composer = window.chat_view.composer
    red = _image_file(tmp_path, "red.png", color=(255, 0, 0))
    composer.attach_files([photo, red])
    assert len(composer.tray.thumbs) == 2
    qtbot.waitUntil(lambda: composer.images.items != [], timeout=60_000)
    composer.input.setPlainText("Look")
    composer.attach_files([red])  # a third, still to read: Send waits for it
    qtbot.keyClick(composer.input, Qt.Key.Key_Return)
    assert composer.input.toPlainText() == "Look"
    assert "still being read" in composer.tray.error.text()
    qtbot.waitUntil(lambda: not composer.images.reading, timeout=60_000)
    assert [i.name for i in composer.images.items] == ["photo.jpg", "red.png", "red.png"]

    composer.images.clear()
    composer.attach_files([photo, red])
    qtbot.mouseClick(composer.tray.remove_buttons[0], Qt.MouseButton.LeftButton)
    assert [e.name for e in composer.images.entries] == ["red.png"]
    qtbot.waitUntil(lambda: not composer.images.reading, timeout=60_000)
    assert [i.name for i in composer.images.items] == ["red.png"]


def test_a_large_photo_in_the_transcript_is_kept_small(photo: Path) -> None:
    """The transcript draws a sent photo from a picture read at its drawn size (a JPEG
    decoded scaled down), not the whole 40 megapixels; the viewer keeps the bytes."""
    item = check_image(photo.read_bytes(), photo.name)
    document = QTextDocument()
    kept = insert_images(QTextCursor(document), document, [item])
    assert kept == {item.image.sha256: item.data}
    name = QUrl(IMAGE_SCHEME + item.image.sha256)
    drawn = document.resource(QTextDocument.ResourceType.ImageResource, name)
    assert isinstance(drawn, QImage)
    assert (drawn.width(), drawn.height()) == (213, 160)  # 7300x5480 in 320x160


def _open_chat_with(arun, window: MainWindow, item: ImageData) -> None:
    """A chat whose first message carries ``item``, opened in the window."""
    state = TurnState(user=Turn("user", "Look", images=[item]), reply=Turn("assistant", ""),
                      ref=ConversationRef())  # fmt: skip
    new = NewConversation("tiny", "", SamplingSettings(), None)
    window.chats_db.sync(lambda s: setup_rows(s, state, new))
    assert state.ref.id is not None
    arun(window.chat.open_conversation(state.ref.id))


def test_a_large_photo_opens_full_size_off_the_qt_thread(
    qtbot: QtBot, arun, window: MainWindow, photo: Path
) -> None:
    """A click on a photo's thumbnail opens the viewer at once, sized for the photo,
    with a spinner; the event loop keeps turning while the 40 megapixels are decoded;
    then the whole photo shows. Closed while it decodes, the viewer drops the decode."""
    item = check_image(photo.read_bytes(), photo.name)
    _open_chat_with(arun, window, item)
    transcript = window.chat_view.transcript
    probe = TickProbe()
    probe.start()
    viewer = transcript.show_image(item.image.sha256)
    assert viewer is not None and not viewer.loaded
    assert viewer.picture.accessibleName() == "Image, 7300 by 5480 pixels"
    qtbot.waitUntil(viewer.spinner.isVisible)
    assert viewer.spinner.turning and viewer.picture.image.isNull()
    qtbot.waitUntil(lambda: viewer.loaded, timeout=60_000)
    ticks, stall = probe.ticks, probe.stop()
    print(f"opened with {ticks} ticks, longest stall {stall * 1000:.1f} ms")
    # Decoding 40 MP on the Qt thread stalls it for 0.3-1.5 s (machine-dependent).
    assert stall < 0.15, f"the event loop stalled {stall * 1000:.0f} ms"
    assert ticks >= 5
    assert (viewer.picture.image.width(), viewer.picture.image.height()) == (7300, 5480)
    assert viewer.area.isVisible() and not viewer.spinner.isVisible()
    viewer.close()

    again = transcript.show_image(item.image.sha256)
    assert again is not None
    again.close()  # before the decode is done: its result is dropped
    qtbot.waitUntil(again.task.done, timeout=60_000)
    assert again.task.cancelled() and not again.loaded


def test_an_image_that_cant_be_decoded_says_so_in_the_viewer(qtbot: QtBot, qloop) -> None:
    """Bytes that are no picture (a damaged file in the data folder) give a line that
    says so in the viewer, not an empty window nor an error."""
    viewer = ImageViewer(png_bytes(40, 30)[:60])
    qtbot.addWidget(viewer)
    viewer.show()
    qtbot.waitUntil(lambda: viewer.loaded)
    assert viewer.message.isVisible() and "can't be shown" in viewer.message.text()
    assert not viewer.area.isVisible()
