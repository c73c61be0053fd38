"""rag.ingest.preview: the Upload page's warnings, what an ingest would do, and which embedders can
ingest now; with real files (tests/docgen.py) and plain records, no database."""
from __future__ import annotations

import pytest

import dataclasses
import uuid
from datetime import datetime

from rag import ingest
from rag.chunking import SPRING_DEFAULT, ChunkSettings
from rag.documents import page_label, sha256_hex
from rag.errors import DocumentError
from rag.status import OllamaStatus
from rag.store import KnowledgeBase, StoredDocument
from tests.docgen import make_pdf

TEXT = " ".join(f"Sentence {i} explains revenue, costs and margins." for i in range(120))


def _stored(sha: str, settings: ChunkSettings, recorded: dict | None = None) -> StoredDocument:
    return StoredDocument(uuid.uuid4(), "finance", "report.txt", None, sha, 10, 1, 3,
                          settings.stored() if recorded is None else recorded, datetime(2024, 1, 1))


def _kb(embedder: str) -> KnowledgeBase:
    return KnowledgeBase("finance", embedder, 384, SPRING_DEFAULT.as_dict(), datetime(2024, 1, 1), 1, 3)


def test_destiny_new_unchanged_replaces_fails() -> None:
    data = TEXT.encode()
    prepared = ingest.prepare(data, "report.txt", SPRING_DEFAULT)
    sha = sha256_hex(data)
    assert ingest.destiny(prepared, sha, None, SPRING_DEFAULT) == "new"
    assert ingest.destiny(prepared, sha, _stored(sha, SPRING_DEFAULT), SPRING_DEFAULT) == "unchanged"
    assert ingest.destiny(prepared, sha, _stored("0" * 64, SPRING_DEFAULT), SPRING_DEFAULT) == "replaces"
    other = dataclasses.replace(SPRING_DEFAULT, chunk_size=100)
    assert ingest.destiny(prepared, sha, _stored(sha, SPRING_DEFAULT), other) == "replaces"
    assert ingest.destiny(None, sha, _stored(sha, SPRING_DEFAULT), SPRING_DEFAULT) == "fails"
    assert ingest.unchanged(_stored(sha, SPRING_DEFAULT), sha, SPRING_DEFAULT)
    assert not ingest.unchanged(None, sha, SPRING_DEFAULT)
    # Stored by the Spring splitter before it snapped cuts to characters (no version recorded): cut again.
    old = _stored(sha, SPRING_DEFAULT, recorded=SPRING_DEFAULT.as_dict())
    assert ingest.destiny(prepared, sha, old, SPRING_DEFAULT) == "replaces"
    assert SPRING_DEFAULT.stored() == {**SPRING_DEFAULT.as_dict(), "splitter": 3}
    assert SPRING_DEFAULT.older_splitter(SPRING_DEFAULT.as_dict()) and not SPRING_DEFAULT.older_splitter(other.stored())
    # The other strategies cut as they did: a record without a version is theirs, nothing is re-embedded.
    token = ChunkSettings(strategy="token", chunk_size=64, chunk_overlap=8)
    assert ingest.unchanged(_stored(sha, token, recorded=token.as_dict()), sha, token)


def test_a_clean_file_has_no_warnings() -> None:
    prepared = ingest.prepare(TEXT.encode(), "report.txt", SPRING_DEFAULT)
    assert ingest.warnings(prepared, max_tokens=8192) == []
    assert ingest.warnings(prepared, max_tokens=None) == []


def test_scanned_pages_and_over_long_chunks_are_warned_about() -> None:
    pdf = make_pdf(["Revenue grew. " * 40, "", "", "Costs fell. " * 40])
    prepared = ingest.prepare(pdf, "scan.pdf", ChunkSettings(chunk_size=300, min_chunk_size_chars=0))
    found = ingest.warnings(prepared, max_tokens=100)
    assert found[0] == "Pages 2–3 have no extractable text: nothing there will be searchable."
    longest = max(c.tokens for c in prepared.chunk_set.chunks)
    long = sum(c.tokens > 100 for c in prepared.chunk_set.chunks)
    assert found[1] == (f"{long} chunk{'s are' if long > 1 else ' is'} longer than the 100 tokens the embedder "
                        f"reads (largest {longest}): their ends would be ignored when embedding. Lower the chunk size.")
    single = ingest.warnings(ingest.prepare(make_pdf(["Text. " * 20, ""]), "one.pdf", SPRING_DEFAULT), None)
    assert single[0].startswith("Page 2 has no extractable text: ")


def test_no_chunks_and_the_rest_in_one_chunk_are_warned_about() -> None:
    tiny = ingest.prepare(b"Hi.", "tiny.txt", dataclasses.replace(SPRING_DEFAULT, min_chunk_length_to_embed=10))
    assert ingest.warnings(tiny, None) == [
        "No chunks: every piece is shorter than the minimum length to embed (10 chars); ingesting it will fail. "
        "Lower that setting."]
    capped = ingest.prepare(TEXT.encode(), "report.txt", ChunkSettings(chunk_size=50, max_num_chunks=2))
    biggest = max(c.tokens for c in capped.chunk_set.chunks)
    assert ingest.warnings(capped, None) == [
        f"The last chunk holds {biggest} tokens: the maximum number of chunks (2) was reached and the rest "
        "became one chunk."]


def test_another_embedder_is_refused_and_ollama_must_be_ready() -> None:
    refused = ingest.embedder_blocker(_kb("local:e5"), "ollama:bge-m3", None)
    assert refused is not None and refused.refused
    assert refused.short == "the knowledge base was built with another embedder"
    assert "`local:e5`" in refused.message and "RAG_EMBEDDER=local:e5" in refused.message
    assert ingest.embedder_blocker(_kb("local:e5"), "local:e5", None) is None
    assert ingest.embedder_blocker(None, "local:e5", None) is None

    down = OllamaStatus(False, "http://127.0.0.1:1", None, ())
    blocker = ingest.embedder_blocker(None, "ollama:bge-m3", down)
    assert blocker is not None and not blocker.refused
    assert (blocker.short, blocker.message) == (
        "Ollama is not reachable",
        "This knowledge base embeds with Ollama (`bge-m3`), which is not reachable at http://127.0.0.1:1: "
        "start it with `ollama serve` before ingesting.")
    up = OllamaStatus(True, "http://127.0.0.1:1", "0.5", ("nomic-embed-text:latest",))
    lacking = ingest.embedder_blocker(None, "ollama:bge-m3", up)
    assert lacking is not None
    assert (lacking.short, lacking.message) == (
        "Ollama lacks bge-m3", "Ollama has no `bge-m3`: run `ollama pull bge-m3` before ingesting.")
    assert ingest.embedder_blocker(None, "ollama:nomic-embed-text", up) is None  # no tag means :latest


def test_ollama_model_names_and_failure_reasons() -> None:
    assert ingest.ollama_model("ollama:bge-m3") == "bge-m3"
    assert ingest.ollama_model("local:e5") is None
    assert ingest.failure_reason(DocumentError("a.pdf", "truncated PDF\n (no end-of-file marker)")) == (
        "truncated PDF (no end-of-file marker)")


CHINESE = "贾宝玉林黛玉薛宝钗王熙凤饭供酒袭人晴雯鸳鸯刘姥姥荣国府宁国府大观园怡红院潇湘馆" * 12


def test_chunks_holding_a_split_character_are_flagged() -> None:
    exact = dataclasses.replace(SPRING_DEFAULT, strategy="spring-exact", chunk_size=50)
    prepared = ingest.prepare(CHINESE.encode(), "novel.txt", exact)
    broken = [c.index for c in prepared.chunk_set.chunks if "\ufffd" in c.text]
    assert broken  # Spring AI's own cuts split characters
    [warning] = ingest.warnings(prepared, None)
    assert warning.startswith(f"{len(broken)} chunk{'s' if len(broken) > 1 else ''} (# {page_label(broken)}) ")
    assert "replacement character � (U+FFFD)" in warning
    assert "the `spring-exact` strategy cut inside a character" in warning and "choose `spring`" in warning
    # The default keeps every character whole: nothing to flag.
    assert ingest.warnings(ingest.prepare(CHINESE.encode(), "novel.txt",
                                          dataclasses.replace(exact, strategy="spring")), None) == []


def test_a_replacement_character_in_the_file_itself_is_blamed_on_the_file() -> None:
    text = "Revenue grew \ufffd per cent. " * 30
    [warning] = ingest.warnings(ingest.prepare(text.encode(), "broken.txt", SPRING_DEFAULT), None)
    assert warning.startswith("1 chunk (# 0) holds the replacement character")
    assert "the text read from the file already holds it" in warning


def test_a_file_without_chunks_fails_and_all_failing_files_block_the_ingest() -> None:
    tiny = ingest.prepare(b"Hi.", "tiny.txt", dataclasses.replace(SPRING_DEFAULT, min_chunk_length_to_embed=10))
    assert ingest.destiny(tiny, sha256_hex(b"Hi."), None, tiny.chunk_set.settings) == "fails"
    assert ingest.all_fail(["fails", "fails"])
    assert not ingest.all_fail(["fails", "new"])
    assert not ingest.all_fail(["unchanged"])
    assert not ingest.all_fail([])  # no files: nothing fails (the page asks for a file instead)


def test_files_of_types_not_read_say_what_to_do() -> None:
    assert ingest.READ_TYPES.startswith("PDF, EPUB, XPS, Word (.docx), PowerPoint (.pptx), Excel (.xlsx, .xls)")
    for name in ("report.pdf", "Book.EPUB", "notes.md", "a.txt", "scan.xps", "r.DOCX", "t.pptx", "b.xlsx", "o.xls",
                 "page.html", "p.htm", "rows.csv"):
        assert ingest.unreadable_advice(name) is None, name
    assert ingest.unreadable_advice("Thesis.DOC") == (
        ".doc files are not read: open it in Word, save it as .docx (File › Save As) and upload that.")
    assert "PowerPoint, save it as .pptx" in ingest.unreadable_advice("talk.ppt")
    assert ingest.unreadable_advice("archive.zip") == (
        f"only {ingest.READ_TYPES} files are read: convert it to one of them and upload that.")
    # Every type the loader refuses gets advice, every one it reads none.
    with pytest.raises(DocumentError, match="unsupported file type '.doc'"):
        ingest.prepare(b"PK\x03\x04", "Thesis.doc", SPRING_DEFAULT)


def test_plan_notes_say_how_long_embedding_takes_and_which_embedder_suits_chinese() -> None:
    from rag.ingest import plan_notes

    quick = plan_notes("local:e5", 4.0, 12, "Revenue grew by twelve percent.")
    assert quick.duration is None and quick.language is None
    slow = plan_notes("local:e5", 7 * 60.0, 600, "Revenue grew by twelve percent.")
    assert slow.duration is not None and "600 chunks with local:e5" in slow.duration and "about 7 min" in slow.duration
    assert "about 45 s" in plan_notes("local:e5", 45.0, 1, "").duration
    assert "1 chunk with" in plan_notes("local:e5", 45.0, 1, "").duration
    assert plan_notes("local:wordllama-l2_supercat-256", None, 600, "").duration is None  # no estimate
    chinese = "甄士隐梦幻识通灵，贾雨村风尘怀闺秀。" * 50
    assert "bge-m3" in plan_notes("ollama:nomic-embed-text", None, 3, chinese).language
    assert plan_notes("local:e5", None, 3, chinese).language is None  # e5 reads Chinese well
