"""A chat's documents: inline or indexed, and passages found by BM25 with their page.

The retrieval test plants ten facts in a 300-page PDF of ordinary prose and asks ten
questions in other words than the facts use where it can: the planted passage must be in
the top 3 for at least 9 of them (the issue's target for BM25 alone)."""

from __future__ import annotations

import random
from pathlib import Path

from hearth.chats.attachments import fits_inline, match_query, passages
from hearth.chats.doc_parse import ParsedDocument, Section, parse_document
from hearth.chats.store import ChatStore
from pdf_factory import write_pdf

FILLER_WORDS = [
    "the",
    "team",
    "reviewed",
    "the",
    "quarterly",
    "report",
    "and",
    "discussed",
    "the",
    "project",
    "schedule",
    "with",
    "the",
    "client",
    "while",
    "the",
    "engineers",
    "checked",
    "the",
    "code",
    "and",
    "the",
    "budget",
    "for",
    "the",
    "next",
    "release",
    "of",
    "the",
    "system",
    "including",
    "tests",
    "documentation",
    "meetings",
    "customers",
    "support",
    "planning",
    "design",
    "review",
    "results",
    "data",
    "analysis",
    "office",
    "travel",
    "weather",
    "coffee",
    "morning",
    "afternoon",
    "update",
    "status",
    "risk",
    "change",
    "request",
    "approval",
    "version",
    "server",
    "network",
    "storage",
    "performance",
]

FACTS = [
    (
        "The Zephyr vault opens with access number 7391.",
        "Which number opens the Zephyr vault?",
        "7391",
    ),
    (
        "Marisol Quint was appointed harbour master of Port Elwyn in 1987.",
        "Who became harbour master of Port Elwyn?",
        "Marisol",
    ),
    (
        "The recipe for blackthorn jam needs 400 grams of sloes.",
        "How many grams of sloes does blackthorn jam need?",
        "400",
    ),
    (
        "Our backup generator runs on biodiesel from the Tarrow refinery.",
        "Where does the backup generator's biodiesel come from?",
        "Tarrow",
    ),
    (
        "The mascot of the chess club is a tortoise named Bishop.",
        "What is the chess club mascot called?",
        "tortoise",
    ),
    (
        "Invoices from Kestrel Logistics are paid within 45 days.",
        "When are Kestrel Logistics invoices paid?",
        "45",
    ),
    (
        "The observatory telescope has a mirror of 2.4 metres.",
        "How large is the observatory telescope mirror?",
        "2.4",
    ),
    (
        "Firmware 8.3 fixed the overheating bug in the Lumen lamp.",
        "Which firmware fixed the Lumen lamp overheating?",
        "8.3",
    ),
    (
        "The glacier at Vorund retreated 212 metres last decade.",
        "How far did the Vorund glacier retreat?",
        "212",
    ),
    (
        "Parking permits for the Oakhill campus cost 60 euros a term.",
        "What does an Oakhill campus parking permit cost?",
        "60",
    ),
]


def filler_line(rng: random.Random) -> str:
    return " ".join(rng.choice(FILLER_WORDS) for _ in range(14)).capitalize() + "."


def test_planted_facts_are_found_in_a_300_page_document(tmp_path: Path):
    rng = random.Random(7)
    pages = [[filler_line(rng) for _ in range(40)] for _ in range(300)]
    for index, (fact, _question, _answer) in enumerate(FACTS):
        page = pages[17 + index * 29]
        page.insert(rng.randrange(len(page)), fact)
    path = write_pdf(tmp_path / "handbook.pdf", pages)
    document = parse_document(path)
    assert document.pages == 300

    store = ChatStore(tmp_path / "chats.db")
    chat = store.create_conversation()
    other = store.create_conversation()
    attachment = store.attachments.add(chat.id, document, "indexed")
    assert attachment.passages > 300 and attachment.pages == 300
    found = 0
    for index, (_fact, question, answer) in enumerate(FACTS):
        hits = store.attachments.search(chat.id, question, limit=3)
        if any(answer in hit.text for hit in hits):
            found += 1
            best = next(hit for hit in hits if answer in hit.text)
            assert best.page == 18 + index * 29, best.where
            assert best.where == f"handbook.pdf, page {best.page}"
    assert found >= 9, found
    assert store.attachments.search(other.id, FACTS[0][1]) == []  # per chat
    store.close()


def test_inline_and_indexed_documents_and_deletion(tmp_path: Path):
    store = ChatStore(tmp_path / "chats.db")
    chat = store.create_conversation()
    small = ParsedDocument("notes.md", "text", (Section("# Notes\nBuy milk.", line=1),))
    inline = store.attachments.add(chat.id, small, "inline")
    assert (inline.mode, inline.passages, inline.chars) == ("inline", 1, len("# Notes\nBuy milk."))
    assert store.attachments.text(inline.id) == "# Notes\nBuy milk."
    assert store.attachments.search(chat.id, "milk") == []  # inline text is in the prompt
    big = ParsedDocument("log.txt", "text", (Section("alpha beta " * 500 + "gamma", line=1),))
    indexed = store.attachments.add(chat.id, big, "indexed")
    assert [a.name for a in store.attachments.of_chat(chat.id)] == ["notes.md", "log.txt"]
    assert store.attachments.search(chat.id, "gamma")[0].attachment_id == indexed.id
    store.attachments.delete(indexed.id)
    assert store.attachments.search(chat.id, "gamma") == []
    store.delete_conversation(chat.id)
    assert store.attachments.of_chat(chat.id) == []
    store.close()


def test_passages_overlap_and_keep_their_lines():
    text = "\n".join(f"Line number {i} of the file." for i in range(1, 301))
    cut = list(passages((Section(text, line=1),)))
    assert len(cut) > 3
    assert all(len(p.text) <= 1200 for p in cut)
    assert cut[0].line == 1 and cut[1].line is not None and cut[1].line > 1
    assert cut[1].text.split("\n")[0] in cut[0].text  # the overlap
    assert "Line number 300 of the file." in cut[-1].text


def test_what_goes_inline_and_the_query():
    doc = ParsedDocument("a.txt", "text", (Section("x" * 4000),))  # about 1,000 tokens
    assert fits_inline(doc, remaining_context_tokens=2000)
    assert not fits_inline(doc, remaining_context_tokens=1999)
    assert match_query("What is the launch code?") == '"launch" OR "code"'
    assert match_query("the of and") is None
