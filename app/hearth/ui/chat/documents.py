"""A chat's documents: attach (button or drop), read and index off the Qt thread, and
give each turn what it needs of them.

Reading runs in a child process (``chats/doc_job.py``: pypdf in a thread would take the
interpreter lock from the Qt thread), awaited on an executor thread; its progress hops
back to the loop. Storing and indexing run on the store's own thread. With an embedding
model loaded in the worker (its ``/v1/models`` entry lists the "embedding" capability),
an indexed document's passages are embedded too, in small batches, and each turn fuses
both rankings (``chats/retrieval.py``). A refused file keeps its chip, in the danger
colours, with the reader's message; the chat goes on.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QEvent, QObject, Signal, SignalInstance
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog, QWidget

from hearth.chats import AsyncChatStore, ChatStore, SamplingSettings
from hearth.chats.attachments import Attachment, Mode, PassageHit, fits_inline
from hearth.chats.doc_job import DocumentReader
from hearth.chats.doc_parse import DocumentCancelled, DocumentError, ParsedDocument
from hearth.chats.retrieval import (
    EmbeddingError,
    embed_attachment,
    prompt_tokens,
    turn_documents,
    with_documents,
)
from hearth.supervisor import Supervisor, WorkerClient
from hearth.supervisor.embeddings import find_embedder
from hearth.ui.chat.document_bar import ChipState
from hearth.ui.chat.model import ChatModel
from hearth.ui.chat.rows import ConversationRef, NewConversation
from hearth.ui.chat.sources import PassageWindow
from hearth.ui.chat.turns import Turn
from hearth.ui.chat.view import ChatView
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

DEFAULT_CONTEXT = 4096
"""Tokens assumed for the inline-or-indexed choice while no model says its context."""
PROGRESS_EVERY_S = 0.1
"""A chip's progress is redrawn at most this often (a PDF reports every page)."""
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"})
"""Dropped pictures are the composer's images, not documents."""
FILE_FILTER = (
    "Documents (*.pdf *.docx *.md *.markdown *.txt *.rst *.csv *.tsv *.html *.htm *.json"
    " *.py *.js *.ts *.java *.c *.h *.cpp *.go *.rs *.rb *.sh *.sql *.yaml *.yml *.toml"
    " *.xml *.log);;All files (*)"
)


class DocumentChat(Protocol):
    """What the documents need of the chat (``ChatController`` is one): its public API,
    so neither imports the other."""

    @property
    def view(self) -> ChatView: ...
    @property
    def turns(self) -> list[Turn]: ...
    @property
    def conversation_ref(self) -> ConversationRef: ...
    @property
    def model(self) -> ChatModel: ...
    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def system_prompt(self) -> str: ...
    @property
    def sampling(self) -> SamplingSettings: ...
    @property
    def preset_id(self) -> int | None: ...
    @property
    def conversation_changed(self) -> SignalInstance: ...
    @property
    def history_changed(self) -> SignalInstance: ...
    def request_messages(self) -> list[dict[str, str]]: ...


def attachable(path: Path) -> bool:
    """A dropped path that is a document's (a file, not a picture)."""
    return path.suffix.lower() not in IMAGE_SUFFIXES and not path.is_dir()


def settled_state(attachment: Attachment, note: str = "") -> ChipState:
    if attachment.mode == "inline":
        return ChipState(f"whole in the prompt{note}")
    return ChipState(f"indexed · {attachment.passages:,} passages{note}")


def _store(
    store: ChatStore, ref: ConversationRef, new: NewConversation, doc: ParsedDocument, mode: Mode
) -> Attachment:
    """Keep the document with the chat, saving the chat first (with its settings) if it
    is new."""
    if ref.id is None:
        ref.id = store.create_conversation(
            doc.name,
            model=new.model,
            system_prompt=new.system_prompt,
            sampling=new.sampling,
            preset_id=new.preset_id,
        ).id
    return store.attachments.add(ref.id, doc, mode)


@dataclass
class Job:
    """One document being read and indexed; ``cancelled`` is read between the steps."""

    reader: DocumentReader
    cancelled: bool = False
    shown: float = 0.0  # when its progress was last drawn
    attachment: Attachment | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)


class ChatDocuments(QObject):
    """The chat's documents, their chips (``view.documents``), the Attach button, drops
    on the chat, and the windows of the sources replies show."""

    settled = Signal(int)
    """A chip's reading and indexing ended (stored, refused or cancelled): its key."""

    def __init__(
        self,
        chat: DocumentChat,
        db: AsyncChatStore | None,
        tasks: TaskSet,
        parent: QObject | None = None,
        *,
        launcher: Sequence[str] | None = None,
    ) -> None:
        super().__init__(parent)
        self.chat, self.bar, self.db, self._tasks = chat, chat.view.documents, db, tasks
        self.launcher = launcher  # how the reader re-runs Hearth (tests: a given python)
        self.jobs: dict[int, Job] = {}
        self.attachments: dict[int, Attachment] = {}  # chip key -> stored document
        self._keys = itertools.count(1)
        self.source_window: PassageWindow | None = None
        self.bar.cancel_requested.connect(self.cancel)
        self.bar.remove_requested.connect(self.remove)
        view = chat.view
        view.attach_requested.connect(lambda: self.choose(view))
        view.source_requested.connect(self.open_source)
        self.drops = DocumentDrops(self.attach, self)
        self.drops.watch(view.transcript.viewport())  # a scroll area's viewport gets drops
        self.drops.watch(view.input.viewport())
        view.composer.files_dropped.connect(self.attach)  # pasted or dropped on its edge

    # ------------------------------------------------------------------ attach
    def choose(self, parent: QWidget) -> list[asyncio.Task[None]]:
        """The Attach button: pick files, then attach them."""
        names, _ = QFileDialog.getOpenFileNames(parent, "Attach documents", "", FILE_FILTER)
        return self.attach([Path(n) for n in names])

    def attach(self, paths: Sequence[Path]) -> list[asyncio.Task[None]]:
        if self.db is None:
            return []
        started = []
        for path in paths:
            key = next(self._keys)
            job = Job(DocumentReader(path, launcher=self.launcher))
            self.jobs[key] = job
            self.bar.add(key, path.name, ChipState("reading…", busy=True))
            job.task = self._tasks.spawn(self._index(key, job, path), name="attach-document")
            started.append(job.task)
        return started

    async def _index(self, key: int, job: Job, path: Path) -> None:
        loop = asyncio.get_event_loop()

        def progress(done: int, total: int) -> None:  # on the executor thread
            loop.call_soon_threadsafe(self._show_progress, key, done, total)

        ref = self.chat.conversation_ref
        try:
            doc = await in_thread(job.reader.read, progress)
            if job.cancelled:
                raise DocumentCancelled
            remaining = (self.chat.model.known_context() or DEFAULT_CONTEXT) - prompt_tokens(
                self.chat.request_messages()
            )
            mode: Mode = "inline" if fits_inline(doc, remaining) else "indexed"
            self.bar.update_chip(key, ChipState("indexing…", busy=True))
            new_chat = ref.id is None
            assert self.db is not None
            chat = self.chat
            new = NewConversation(
                chat.model.model_id, chat.system_prompt, chat.sampling, chat.preset_id
            )
            attachment = await self.db.run(lambda s: _store(s, ref, new, doc, mode))
            job.attachment = attachment
            if key in self.bar.chips:  # still the chat on screen
                self.attachments[key] = attachment
            if new_chat:  # attaching saved this new chat: it is in the list now
                self.chat.conversation_changed.emit()
                self.chat.history_changed.emit()
            if job.cancelled:
                raise DocumentCancelled
            note = await self._embed(key, job, attachment) if mode == "indexed" else ""
            self.bar.update_chip(key, settled_state(attachment, note))
        except DocumentCancelled:
            await self._forget(key, job.attachment)
        except DocumentError as exc:
            log.info("attachment refused: %s", exc)
            self.bar.update_chip(key, ChipState(str(exc), error=True))
        except Exception:  # a store failure: said on the chip, and the chat goes on
            log.exception("attaching %s failed", path)
            self.bar.update_chip(key, ChipState("can't be kept with the chat", error=True))
        finally:
            self.jobs.pop(key, None)
            self.settled.emit(key)

    def _show_progress(self, key: int, done: int, total: int) -> None:
        job = self.jobs.get(key)
        now = time.monotonic()
        if job is None or job.cancelled or (now < job.shown + PROGRESS_EVERY_S and done < total):
            return
        job.shown = now
        unit = "pages" if total > 1 else "parts"
        self.bar.update_chip(key, ChipState(f"reading {done}/{total} {unit}", busy=True))

    async def _embed(self, key: int, job: Job, attachment: Attachment) -> str:
        """Embed an indexed document's passages when the worker has an embedding model;
        a note for its chip when that was cut short."""
        embedder = await find_embedder(self.chat.supervisor.client)
        if embedder is None or self.db is None:
            return ""

        def progress(done: int, total: int) -> None:
            self.bar.update_chip(key, ChipState(f"embedding {done}/{total}", busy=True))

        try:
            await embed_attachment(
                self.db, attachment.id, embedder, progress, lambda: job.cancelled
            )
        except EmbeddingError as exc:
            log.warning("embedding %s stopped: %s", attachment.name, exc)
            return " (keywords only)"
        return " (keywords only)" if job.cancelled else ""

    # ------------------------------------------------------------------ chips
    def cancel(self, key: int) -> None:
        """Cancel reading (or embedding) the document of chip ``key``."""
        job = self.jobs.get(key)
        if job is None:
            return
        job.cancelled = True
        job.reader.cancel()

    def remove(self, key: int) -> asyncio.Task[None]:
        """Take the document of chip ``key`` out of the chat."""
        return self._tasks.spawn(self._forget(key), name="remove-document")

    async def _forget(self, key: int, stored: Attachment | None = None) -> None:
        attachment = self.attachments.pop(key, None) or stored
        self.bar.remove(key)
        if attachment is not None and self.db is not None:
            aid = attachment.id
            await self.db.run(lambda s: s.attachments.delete(aid))

    def clear(self) -> None:
        """No chips (a new chat). Jobs still running go on into the chat they were
        started in, without chips here."""
        self.bar.clear()
        self.attachments.clear()
        self.jobs.clear()

    async def show_chat(self, conversation_id: int | None) -> None:
        """The chips of another chat (none for a new one)."""
        self.clear()
        if conversation_id is None or self.db is None:
            return
        stored = await self.db.run(lambda s: s.attachments.of_chat(conversation_id))
        for attachment in stored:
            key = next(self._keys)
            self.attachments[key] = attachment
            self.bar.add(key, attachment.name, settled_state(attachment))

    def open_source(self, index: int, passage: int) -> None:
        """A reply's source was clicked: its passage's text, in a window of its own."""
        turns = self.chat.turns
        turn = turns[index] if 0 <= index < len(turns) else None
        if turn is not None and 0 <= passage < len(turn.sources):
            self.source_window = PassageWindow(turn.sources[passage], self.chat.view)
            self.source_window.show()

    # ------------------------------------------------------------------ turns
    async def for_turn(
        self, messages: list[dict[str, Any]], client: WorkerClient | None
    ) -> tuple[list[dict[str, Any]], tuple[PassageHit, ...]]:
        """``messages`` with this chat's documents (whole, or the passages found for the
        last question), and the passages given, for the reply's sources."""
        cid = self.chat.conversation_ref.id
        if cid is None or self.db is None or not self.attachments:
            return messages, ()
        question = next((str(m["content"]) for m in reversed(messages) if m["role"] == "user"), "")
        remaining = (self.chat.model.known_context() or DEFAULT_CONTEXT) - prompt_tokens(messages)
        embedder = await find_embedder(client)
        documents = await turn_documents(self.db, cid, question, remaining, embedder)
        return with_documents(messages, documents), documents.passages


class DocumentDrops(QObject):
    """Accepts files dropped on the chat (not pictures) and hands them to ``attach``."""

    def __init__(self, attach: Callable[[list[Path]], object], parent: QObject) -> None:
        super().__init__(parent)
        self._attach = attach

    def watch(self, widget: QWidget) -> None:
        widget.setAcceptDrops(True)
        widget.installEventFilter(self)

    @staticmethod
    def _paths(event: QDropEvent | QDragEnterEvent) -> list[Path]:
        mime = event.mimeData()
        if not mime.hasUrls():
            return []
        paths = [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]
        return [p for p in paths if attachable(p)]

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            assert isinstance(event, QDragEnterEvent | QDropEvent)
            if self._paths(event):
                event.acceptProposedAction()
                return True
        elif kind == QEvent.Type.Drop:
            assert isinstance(event, QDropEvent)
            paths = self._paths(event)
            if paths:
                event.acceptProposedAction()
                self._attach(paths)
                return True
        return False
