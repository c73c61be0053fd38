"""rag.ingest.preview: the Upload page's warnings, what an ingest would do, and which embedders can
ingest now; with real files (tests/docgen.py) and plain records, no database."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime

import pytest

from rag import chunking, ingest
from rag.chunking import SPRING_DEFAULT, ChunkSettings
from rag.chunking.settings import DEFAULT, PRESETS
from rag.documents import page_label, sha256_hex
from rag.embeddings.e5 import E5Embedder, unavailable_reason
from rag.errors import DocumentError
from rag.ingest.preview import InputWindow, input_window, over_window
from rag.status import OllamaStatus
from rag.store import KnowledgeBase, StoredDocument
from tests.docgen import make_pdf

TEXT = " ".join(f"Sentence {i} explains revenue, costs and margins." for i in range(120))


def _stored(sha: str, settings: ChunkSettings, recorded: dict | None = None) -> StoredDocument:
    return StoredDocument(
        uuid.uuid4(),
        "finance",
        "report.txt",
        None,
        sha,
        10,
        1,
        3,
        settings.stored() if recorded is None else recorded,
        datetime(2024, 1, 1),
    )


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
    assert ingest.warnings(prepared, InputWindow(8192)) == []
    assert ingest.warnings(prepared, None) == []


def test_scanned_pages_and_over_long_chunks_are_warned_about() -> None:
    pdf = make_pdf(["Revenue grew. " * 40, "", "", "Costs fell. " * 40])
    prepared = ingest.prepare(pdf, "scan.pdf", ChunkSettings(chunk_size=300, min_chunk_size_chars=0))
    found = ingest.warnings(prepared, InputWindow(100))  # no tokenizer of its own: cl100k tokens stand in
    assert found[0] == "Pages 2–3 have no extractable text: nothing there will be searchable."
    longest = max(c.tokens for c in prepared.chunk_set.chunks)
    long = sum(c.tokens > 100 for c in prepared.chunk_set.chunks)
    assert found[1] == (
        f"{long} chunk{'s are' if long > 1 else ' is'} longer than the 100 tokens the embedder "
        f"reads (largest {longest}): their ends would be ignored when embedding. Lower the chunk size."
    )
    single = ingest.warnings(ingest.prepare(make_pdf(["Text. " * 20, ""]), "one.pdf", SPRING_DEFAULT), None)
    assert single[0].startswith("Page 2 has no extractable text: ")


def test_no_chunks_and_the_rest_in_one_chunk_are_warned_about() -> None:
    tiny = ingest.prepare(b"Hi.", "tiny.txt", dataclasses.replace(SPRING_DEFAULT, min_chunk_length_to_embed=10))
    assert ingest.warnings(tiny, None) == [
        "No chunks: every piece is shorter than the minimum length to embed (10 chars); ingesting it will fail. "
        "Lower that setting."
    ]
    capped = ingest.prepare(TEXT.encode(), "report.txt", ChunkSettings(chunk_size=50, max_num_chunks=2))
    biggest = max(c.tokens for c in capped.chunk_set.chunks)
    assert ingest.warnings(capped, None) == [
        f"The last chunk holds {biggest} tokens: the maximum number of chunks (2) was reached and the rest "
        "became one chunk."
    ]


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
        "start it with `ollama serve` before ingesting.",
    )
    up = OllamaStatus(True, "http://127.0.0.1:1", "0.5", ("nomic-embed-text:latest",))
    lacking = ingest.embedder_blocker(None, "ollama:bge-m3", up)
    assert lacking is not None
    assert (lacking.short, lacking.message) == (
        "Ollama lacks bge-m3",
        "Ollama has no `bge-m3`: run `ollama pull bge-m3` before ingesting.",
    )
    assert ingest.embedder_blocker(None, "ollama:nomic-embed-text", up) is None  # no tag means :latest


def test_ollama_model_names_and_failure_reasons() -> None:
    assert ingest.ollama_model("ollama:bge-m3") == "bge-m3"
    assert ingest.ollama_model("local:e5") is None
    assert ingest.failure_reason(DocumentError("a.pdf", "truncated PDF\n (no end-of-file marker)")) == (
        "truncated PDF (no end-of-file marker)"
    )


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
    assert (
        ingest.warnings(
            ingest.prepare(CHINESE.encode(), "novel.txt", dataclasses.replace(exact, strategy="spring")), None
        )
        == []
    )


def test_a_replacement_character_in_the_file_itself_is_blamed_on_the_file() -> None:
    text = "Revenue grew \ufffd per cent. " * 30
    [warning] = ingest.warnings(ingest.prepare(text.encode(), "broken.txt", SPRING_DEFAULT), None)
    assert warning.startswith("1 chunk (# 0) holds the replacement character")
    assert "the file itself holds it" in warning


def test_a_file_without_chunks_fails_and_all_failing_files_block_the_ingest() -> None:
    tiny = ingest.prepare(b"Hi.", "tiny.txt", dataclasses.replace(SPRING_DEFAULT, min_chunk_length_to_embed=10))
    assert ingest.destiny(tiny, sha256_hex(b"Hi."), None, tiny.chunk_set.settings) == "fails"
    assert ingest.all_fail(["fails", "fails"])
    assert not ingest.all_fail(["fails", "new"])
    assert not ingest.all_fail(["unchanged"])
    assert not ingest.all_fail([])  # no files: nothing fails (the page asks for a file instead)


def test_files_of_types_not_read_say_what_to_do() -> None:
    assert ingest.READ_TYPES.startswith("PDF, EPUB, XPS, Word (.docx), PowerPoint (.pptx), Excel (.xlsx, .xls)")
    for name in (
        "report.pdf",
        "Book.EPUB",
        "notes.md",
        "a.txt",
        "scan.xps",
        "r.DOCX",
        "t.pptx",
        "b.xlsx",
        "o.xls",
        "page.html",
        "p.htm",
        "rows.csv",
    ):
        assert ingest.unreadable_advice(name) is None, name
    assert ingest.unreadable_advice("Thesis.DOC") == (
        ".doc files are not read: open it in Word, save it as .docx (File › Save As) and upload that."
    )
    assert "PowerPoint, save it as .pptx" in ingest.unreadable_advice("talk.ppt")
    assert ingest.unreadable_advice("archive.zip") == (
        f"only {ingest.READ_TYPES} files are read: convert it to one of them and upload that."
    )
    # Every type the loader refuses gets advice, every one it reads none.
    with pytest.raises(DocumentError, match=r"unsupported file type '\.doc'"):
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


# --- chunks longer than the embedder reads, in its own tokens (issue 27) -------------------------


class _Counting:
    """An embedder with a tokenizer of its own: one token a word, plus 2 of its own (as e5's
    prefix and special tokens); it remembers how often it was asked."""

    def __init__(self, name: str = "fake:words", max_input_tokens: int | None = 40) -> None:
        self.name, self.max_input_tokens, self.calls = name, max_input_tokens, 0

    def passage_tokens(self, text: str) -> int:
        self.calls += 1
        return len(text.split()) + 2


@pytest.fixture(autouse=True)
def _fresh_windows(monkeypatch) -> None:
    from rag.ingest import preview

    monkeypatch.setattr(preview, "_windows", {})  # each test's fake embedders count for themselves


def test_the_window_counts_in_the_embedders_own_tokens_and_remembers_them() -> None:
    embedder = _Counting("fake:words-a")
    window = input_window(embedder)
    assert window is not None and window.max_tokens == 40
    assert input_window(_Counting("fake:words-a")) is window  # a new object each rerun, the same counts
    assert input_window(None) is None and input_window(_Counting("fake:unbounded", None)) is None
    # Without a tokenizer of its own (Ollama's models), the chunks' cl100k tokens stand in.
    from rag.embeddings.ollama import OllamaEmbedder

    assert input_window(OllamaEmbedder("http://127.0.0.1:9", "nomic-embed-text")) == InputWindow(2048)

    text = " ".join(f"Word{i}." for i in range(2000))  # ~3 cl100k tokens a word, 1 of the embedder's
    prepared = ingest.prepare(text.encode(), "words.txt", ChunkSettings(chunk_size=60, min_chunk_size_chars=0))
    chunks = prepared.chunk_set.chunks
    assert sum(c.tokens > 40 for c in chunks) > 10  # longer than the window in cl100k tokens, yet they fit
    assert ingest.warnings(prepared, window) == []
    asked = embedder.calls
    assert ingest.warnings(prepared, window) == [] and embedder.calls == asked  # counted once

    wide = ingest.prepare(text.encode(), "words.txt", ChunkSettings(chunk_size=200, min_chunk_size_chars=0))
    counts = [len(c.text.split()) + 2 for c in wide.chunk_set.chunks]
    over = [n for n in counts if n > 40]
    [warning] = ingest.warnings(wide, window)
    assert warning == (
        f"{len(over)} chunks are longer than the 40 tokens the embedder reads (largest {max(over)}): "
        "their ends would be ignored when embedding. Lower the chunk size."
    )
    assert max(over) < max(c.tokens for c in wide.chunk_set.chunks)  # its count, not cl100k's


def test_a_chunk_short_enough_in_characters_is_not_counted_and_a_big_file_is_partly_estimated(monkeypatch) -> None:
    from rag.ingest import preview

    embedder = _Counting("fake:words-b", 30)
    window = input_window(embedder)
    # 28 characters or fewer cannot make more than 30 tokens with 2 of them the embedder's.
    prepared = ingest.prepare(
        ("Abc de. " * 400).encode(), "short.txt", ChunkSettings(chunk_size=6, min_chunk_size_chars=0)
    )
    assert all(len(c.text) <= 28 for c in prepared.chunk_set.chunks)
    assert ingest.warnings(prepared, window) == [] and embedder.calls == 1  # the prefix's count only

    text = " ".join(f"Word{i}." for i in range(3000))
    big = ingest.prepare(text.encode(), "big.txt", ChunkSettings(chunk_size=200, min_chunk_size_chars=0))
    chunks = big.chunk_set.chunks
    monkeypatch.setattr(preview, "COUNTED_CHARS", 3 * len(chunks[0].text))
    over, estimated = over_window(chunks, window)
    assert estimated and len(over) >= len(chunks) - 1  # all but maybe the last are over; most were estimated
    assert embedder.calls <= 1 + 4  # the prefix once, and the 3 or 4 chunks the budget covers
    [warning] = ingest.warnings(big, window)
    assert warning.startswith(
        f"About {len(over)} chunks are longer than the 30 tokens the embedder reads (largest about "
    )


needs_e5 = pytest.mark.skipif(unavailable_reason() is not None, reason=f"e5 cannot run here: {unavailable_reason()}")


@needs_e5
def test_long_english_and_chinese_under_the_default_have_no_over_long_warning_with_e5() -> None:
    from tests.chunking.texts import chinese_spec_text, rfc_like_text

    window = input_window(E5Embedder())
    assert window is not None and window.max_tokens == 512
    for name, text in (("rfc2616.txt", rfc_like_text(12)), ("规范.txt", chinese_spec_text(30))):
        prepared = ingest.prepare(text.encode(), name, DEFAULT)
        assert len(prepared.chunk_set.chunks) > 20
        # (Spring's chunks of Chinese end mid-sentence, which another warning says.)
        assert not [w for w in ingest.warnings(prepared, window) if "longer than" in w], name


@needs_e5
def test_an_over_long_custom_setting_is_warned_about_in_e5_tokens() -> None:
    from tests.chunking.texts import rfc_like_text

    embedder = E5Embedder()
    prepared = ingest.prepare(rfc_like_text(12).encode(), "rfc2616.txt", SPRING_DEFAULT)
    counts = [embedder.passage_tokens(c.text) for c in prepared.chunk_set.chunks]
    over = [n for n in counts if n > 512]
    assert len(over) > 10
    [warning] = ingest.warnings(prepared, input_window(embedder))
    assert warning == (
        f"{len(over)} chunks are longer than the 512 tokens the embedder reads (largest {max(over)}): "
        "their ends would be ignored when embedding. Lower the chunk size."
    )
    assert max(over) != max(c.tokens for c in prepared.chunk_set.chunks)  # e5's tokens, not cl100k's


def test_a_text_files_blank_parts_are_no_pages_without_text() -> None:
    """RFC 2616 as text ends with a form feed: its blank 177th "page" was warned about as a page with no
    extractable text, as a scan would be. A text file has no text it could not read."""
    raw = ("Hypertext Transfer Protocol. " * 30 + "\f") * 3 + "\f" + "The end of it all. " * 20 + "\f\n"
    prepared = ingest.prepare(raw.encode(), "rfc2616.txt", SPRING_DEFAULT)
    assert prepared.document.page_count == 5  # the blank end after the last form feed is no page
    assert prepared.document.dropped_pages == ()
    assert ingest.warnings(prepared, None) == []


def test_glyphs_without_unicode_in_a_pdf_are_blamed_on_its_fonts_not_on_an_encoding() -> None:
    """A PDF whose maths symbols extract as private-use codes or U+FFFD was told to "convert it to UTF-8
    text first": the PDF's fonts are why, on the pages named."""
    from tests.docgen import make_unmapped_glyph_pdf

    pdf = make_unmapped_glyph_pdf(["Plain prose. " * 5, "Let @f/@x = 0 where # is the flux. " * 3, "Prose.", "@ again"])
    prepared = ingest.prepare(pdf, "geotopo.pdf", ChunkSettings(chunk_size=30, min_chunk_size_chars=0))
    found = ingest.warnings(prepared, None)
    assert found[0] == (
        "Some characters on pages 2, 4 could not be extracted: the PDF's fonts give them no Unicode mapping, "
        "so they are kept as � or private-use codes and a search for them finds nothing. A copy saved with "
        "Unicode fonts, or OCR of the pages, may read them."
    )
    (broken,) = [w for w in found if "U+FFFD" in w]
    assert broken.endswith(
        "the PDF's fonts give some characters no Unicode mapping, so they could not be extracted "
        "(see the warning about its pages)."
    )
    assert not any("UTF-8" in w for w in found)
    single = ingest.warnings(ingest.prepare(make_unmapped_glyph_pdf(["Text.", "d is @"]), "one.pdf", DEFAULT), None)
    assert single[0].startswith("Some characters on page 2 could not be extracted: ")
    # A text file holding U+FFFD was damaged before it came: no encoding to convert it from (it is UTF-8).
    damaged = ingest.prepare(("Caf\ufffd au lait. " * 20).encode(), "menu.txt", DEFAULT)
    assert ingest.warnings(damaged, None)[0].endswith(
        "the file itself holds it (its text was damaged when it was converted or saved before): "
        "check it against the original."
    )


ZH_TEXT = "".join(f"第{i}回讲甄士隐梦幻识通灵，贾雨村风尘怀闺秀，众人在园中饮酒赏花，说了许多闲话。" for i in range(60))


def test_chunks_spring_cannot_cut_at_a_sentence_end_say_why_and_what_to_choose() -> None:
    """A Chinese PDF under the default preset: 92 % of its chunks ended mid-word and nothing said why."""
    chinese = ingest.prepare(ZH_TEXT.encode(), "红楼梦.txt", DEFAULT)
    share = chunking.stats(chinese.chunk_set).mid_sentence_share
    assert share >= 0.5
    assert ingest.warnings(chinese, None) == [
        f"{share:.0%} of the chunks end inside a sentence: Spring cuts only after . ? ! or a line break, and "
        "Chinese sentences end in 。！？. The “Recursive 400 / 40” preset cuts at them."
    ]
    recursive = ingest.prepare(ZH_TEXT.encode(), "红楼梦.txt", PRESETS["Recursive 400 / 40"])
    assert chunking.stats(recursive.chunk_set).mid_sentence_share < 0.5 and ingest.warnings(recursive, None) == []
    # English windows shorter than the minimum before a cut: kept whole, so lower that minimum.
    short = dataclasses.replace(DEFAULT, chunk_size=64)
    english = ingest.prepare(TEXT.encode(), "report.txt", short)
    found = ingest.warnings(english, None)
    share = chunking.stats(english.chunk_set).mid_sentence_share
    assert len(found) == 1 and found[0].startswith(f"{share:.0%} of the chunks end inside a sentence: a window of 64")
    assert "than the 350 characters Spring wants" in found[0]
    cut = dataclasses.replace(short, min_chunk_size_chars=int(found[0].split("to about ")[1].split(",")[0]))
    assert ingest.warnings(ingest.prepare(TEXT.encode(), "report.txt", cut), None) == []
