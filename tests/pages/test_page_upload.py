"""The Upload & preview page through Streamlit's AppTest.

Real files (pymupdf), the real database (the `store` fixture wipes it) and the local embedder;
widgets are found by key and every run must end without an exception.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import uuid

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from rag import chunking, documents, export, ingest
from rag.chunking import SPRING_DEFAULT, ChunkSettings
from rag.chunking.settings import DEFAULT, DEFAULT_PRESET
from rag.embeddings import LocalEmbedder
from rag.store import Store
from tests.conftest import ROOT
from tests.docgen import make_encrypted_pdf, make_pdf

APP = str(ROOT / "app.py")
NEW_KB = "New knowledge base…"


def _page_text(topic: str, sentences: int = 40) -> str:
    return " ".join(
        f"Sentence {i} of the {topic} section explains revenue, costs and margins." for i in range(sentences)
    )


REPORT = make_pdf([_page_text("first"), _page_text("second")])
LOCKED = make_encrypted_pdf()


def expected_chunks(data: bytes, filename: str, settings: ChunkSettings) -> int:
    doc = documents.load_bytes(data, filename)
    return len(chunking.split(doc.text, settings, doc.pages_for_span).chunks)


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def upload(at: AppTest, *files: tuple[str, bytes]) -> AppTest:
    at.file_uploader(key="upload_files").set_value([(name, data, "application/pdf") for name, data in files])
    return run(at)


def table(at: AppTest, key: str) -> pd.DataFrame:
    return at.container(key=key).dataframe[0].value


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


@pytest.fixture
def app(store: Store) -> AppTest:
    """The app on its default page, with an empty database."""
    return run(AppTest.from_file(APP, default_timeout=120))


def test_pdf_preview_has_one_row_per_chunk_and_follows_the_chunk_size(app: AppTest) -> None:
    expected = expected_chunks(REPORT, "report.pdf", DEFAULT)
    assert expected >= 2  # otherwise the test would prove little

    upload(app, ("report.pdf", REPORT))

    assert app.session_state["uploads"] == {"report.pdf": REPORT}
    chunks = table(app, "upload_chunks_report.pdf")
    assert len(chunks) == expected
    assert list(chunks.columns) == ["#", "tokens", "characters", "pages", "first words"]
    assert set(chunks["pages"]) <= {"1", "1–2", "2"}
    assert app.selectbox(key="upload_page_report.pdf").options == ["Page 1", "Page 2"]
    assert any("chunkviz" in h.value for h in app.html)  # chunks coloured in the text
    assert len(app.image) == 1  # the PDF page with chunk boxes
    assert table(app, "upload_overview")["chunks"].tolist() == [expected]

    app.number_input(key="upload_chunk_size").set_value(120)
    run(app)

    smaller = expected_chunks(REPORT, "report.pdf", dataclasses.replace(DEFAULT, chunk_size=120))
    assert smaller > expected
    assert len(table(app, "upload_chunks_report.pdf")) == smaller


def test_a_broken_file_shows_its_reason_while_the_good_one_is_previewed(app: AppTest) -> None:
    upload(app, ("locked.pdf", LOCKED), ("report.pdf", REPORT))

    assert errors(app) == ["**locked.pdf** cannot be read: password-protected PDF: remove the password and try again"]
    assert len(table(app, "upload_chunks_report.pdf")) == expected_chunks(REPORT, "report.pdf", DEFAULT)
    overview = table(app, "upload_overview")
    assert overview["file"].tolist() == ["locked.pdf", "report.pdf"]
    assert overview["check"].tolist()[0].startswith("❌ password-protected PDF")


def test_a_rerun_with_many_files_uploaded_parses_none_of_them_again(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in a walk with 57 files: each rerun (the Ingest click's too) parsed every file again, the cache
    holding 16, so Stop and the progress came seconds late."""
    loads: list[str] = []
    load = ingest.load
    monkeypatch.setattr(ingest, "load", lambda data, name, *a: loads.append(name) or load(data, name, *a))
    files = [
        (f"note-{uuid.uuid4().hex[:8]}-{i:02}.txt", f"Note {i}: {uuid.uuid4()} {_page_text('depots', 3)}".encode())
        for i in range(24)
    ]
    upload(app, *files)
    assert sorted(loads) == sorted(name for name, _ in files)
    run(app)
    app.number_input(key="upload_chunk_size").set_value(150)
    run(app)
    assert len(loads) == len(files)  # re-chunked from the kept tokens, read once


def test_a_name_typed_before_the_first_upload_is_kept_and_asked_again_for_more_files(app: AppTest) -> None:
    """A walk typed the new knowledge base's name, then uploaded, and saw the name erased; a name typed for
    files uploaded before is still asked again when other files come."""
    assert app.selectbox(key="upload_kb_choice").value == "New knowledge base…"  # no base yet
    app.text_input(key="upload_kb_new").set_value("early")
    run(app)
    upload(app, ("report.pdf", REPORT))
    assert app.text_input(key="upload_kb_new").value == "early"
    assert not app.button(key="upload_ingest").disabled
    upload(app, ("report.pdf", REPORT), ("extra.pdf", make_pdf(["Another page about depots."])))
    assert app.text_input(key="upload_kb_new").value == ""


def test_removing_a_file_from_the_uploader_removes_it_from_the_session(app: AppTest) -> None:
    upload(app, ("locked.pdf", LOCKED), ("report.pdf", REPORT))
    assert set(app.session_state["uploads"]) == {"locked.pdf", "report.pdf"}

    upload(app, ("report.pdf", REPORT))

    assert app.session_state["uploads"] == {"report.pdf": REPORT}
    assert errors(app) == []


def test_ingest_into_a_new_knowledge_base_then_unchanged_then_delete(app: AppTest, store: Store) -> None:
    chunks = expected_chunks(REPORT, "report.pdf", DEFAULT)
    upload(app, ("report.pdf", REPORT))
    assert app.selectbox(key="upload_kb_choice").value == NEW_KB
    assert app.button(key="upload_ingest").disabled  # no name yet
    app.text_input(key="upload_kb_new").set_value("finance")
    run(app)

    app.button(key="upload_ingest").click()
    run(app)

    summary = table(app, "upload_summary")
    assert summary[["file", "status", "pages", "chunks"]].values.tolist() == [["report.pdf", "stored", 2, chunks]]
    [kb] = store.list_knowledge_bases()
    assert (kb.name, kb.documents, kb.chunks) == ("finance", 1, chunks)
    library = table(app, "lib_overview")
    assert library[["knowledge base", "documents", "chunks", "dimension"]].values.tolist() == [
        ["finance", 1, chunks, kb.dimension]
    ]
    docs = table(app, "lib_docs")
    assert docs[["filename", "pages", "chunks"]].values.tolist() == [["report.pdf", 2, chunks]]
    assert not app.download_button(key="lib_csv").disabled
    assert not app.download_button(key="lib_jsonl").disabled
    exported = list(csv.DictReader(io.StringIO(export.chunks_csv(store.iter_chunks("finance")).decode("utf-8-sig"))))
    assert len(exported) == chunks

    # The new knowledge base is now the chosen one; the same file again changes nothing.
    run(app)
    assert app.selectbox(key="upload_kb_choice").value == "finance"
    assert table(app, "upload_overview")["on ingest"].tolist() == ["already stored"]
    app.button(key="upload_ingest").click()
    run(app)
    assert table(app, "upload_summary")["status"].tolist() == ["unchanged"]
    said = "Nothing to ingest into 'finance': 1 unchanged (stored before with the same content and settings)"
    assert said in [s.label for s in app.status]
    assert store.list_knowledge_bases()[0].chunks == chunks

    # Deleting needs the confirmation first.
    assert app.selectbox(key="lib_doc::finance").value == "report.pdf"
    assert app.button(key="lib_doc_delete").disabled
    app.checkbox(key="lib_doc_confirm").check()
    run(app)
    app.button(key="lib_doc_delete").click()
    run(app)
    assert store.list_documents("finance") == []
    assert "Deleted 'report.pdf' and its chunks from 'finance'." in [s.value for s in app.success]
    assert table(app, "lib_overview")[["documents", "chunks"]].values.tolist() == [[0, 0]]
    assert "lib_doc::finance" not in [w.key for w in app.selectbox]  # no document left to delete

    assert app.button(key="lib_kb_delete").disabled
    app.checkbox(key="lib_kb_confirm").check()
    run(app)
    app.button(key="lib_kb_delete").click()
    run(app)
    assert store.list_knowledge_bases() == []
    assert any("No knowledge bases yet" in i.value for i in app.info)
    assert app.selectbox(key="upload_kb_choice").options == [f"➕ {NEW_KB}"]


def test_the_results_say_the_vector_index_is_built_in_the_background(
    app: AppTest, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ingest that takes a knowledge base past exact search leaves its graph being built after it: the results
    say so (and searches meanwhile read every chunk); below that size nothing is said."""
    from rag.store import graphs

    chunks = expected_chunks(REPORT, "report.pdf", DEFAULT)
    monkeypatch.setattr(graphs, "graph_rows", lambda dimension: chunks + 1)
    upload(app, ("report.pdf", REPORT))
    app.text_input(key="upload_kb_new").set_value("finance")
    run(app)
    app.button(key="upload_ingest").click()
    run(app)
    assert not [c.value for c in app.caption if "vector index" in c.value]

    monkeypatch.setattr(graphs, "graph_rows", lambda dimension: chunks)
    upload(app, ("other.pdf", make_pdf([_page_text("third")])), ("report.pdf", REPORT))
    app.selectbox(key="upload_kb_choice").set_value("finance")  # a new upload has none chosen
    run(app)
    app.button(key="upload_ingest").click()
    run(app)
    total = store.list_knowledge_bases()[0].chunks
    assert [c.value for c in app.caption if "vector index" in c.value] == [
        f"🕸️ The vector index of 'finance' ({total} chunks) is built in the background after the ingest: until it "
        "is ready, a search compares the question with every chunk (exact, only slower)."
    ]


def test_uploaded_files_survive_a_visit_to_the_chunk_lab(app: AppTest) -> None:
    upload(app, ("report.pdf", REPORT))

    app.switch_page("pages/chunk-lab.py")
    run(app)
    app.switch_page("pages/upload.py")
    run(app)

    # The uploader starts empty on a page shown again; the files are kept and still previewed.
    assert not app.file_uploader(key="upload_files").value
    assert app.session_state["uploads"] == {"report.pdf": REPORT}
    assert len(table(app, "upload_chunks_report.pdf")) == expected_chunks(REPORT, "report.pdf", DEFAULT)
    assert any(c.value == "Kept from earlier in this session: report.pdf." for c in app.caption)

    app.button(key="upload_forget").click()
    run(app)
    assert app.session_state["uploads"] == {}
    assert any("Upload files to see their pages" in i.value for i in app.info)


def _empty_knowledge_base(store: Store, name: str, embedder: str, dimension: int, settings: ChunkSettings) -> None:
    store.write_document(
        knowledge=name,
        embedder=embedder,
        dimension=dimension,
        chunk_settings=settings.as_dict(),
        filename="old.txt",
        path=None,
        data=b"old",
        sha256=documents.sha256_hex(b"old"),
        page_count=1,
        chunks=(),
        embeddings=np.zeros((0, dimension)),
    )


def test_the_settings_of_an_existing_knowledge_base_can_be_taken_over(app: AppTest, store: Store) -> None:
    theirs = ChunkSettings(strategy="recursive", chunk_size=300, chunk_overlap=30)
    _empty_knowledge_base(store, "manuals", LocalEmbedder.NAME, LocalEmbedder.DIMENSION, theirs)
    run(app)
    app.selectbox(key="upload_kb_choice").set_value("manuals")
    run(app)
    assert errors(app) == []
    assert any("`local:wordllama" in m.value for m in app.markdown)  # the knowledge base's embedder

    app.button(key="upload_use_kb_settings").click()
    run(app)

    assert app.radio(key="upload_strategy").value == "recursive"
    assert app.number_input(key="upload_chunk_size").value == 300
    assert app.number_input(key="upload_chunk_overlap").value == 30
    assert "upload_use_kb_settings" not in [b.key for b in app.button]


def test_settings_sent_from_the_chunk_lab_are_applied(app: AppTest) -> None:
    chosen = ChunkSettings(strategy="token", chunk_size=96, chunk_overlap=16)
    app.session_state["apply_upload_settings"] = chosen.as_dict()
    upload(app, ("report.pdf", REPORT))

    assert "apply_upload_settings" not in app.session_state
    assert app.radio(key="upload_strategy").value == "token"
    assert app.number_input(key="upload_chunk_size").value == 96
    assert app.number_input(key="upload_chunk_overlap").value == 16
    assert any("Chunk Lab" in i.value for i in app.info)
    assert len(table(app, "upload_chunks_report.pdf")) == expected_chunks(REPORT, "report.pdf", chosen)


def test_a_knowledge_base_built_with_another_embedder_is_refused_before_ingest(app: AppTest, store: Store) -> None:
    _empty_knowledge_base(store, "legacy", "ollama:nomic-embed-text", 768, SPRING_DEFAULT)
    run(app)
    upload(app, ("report.pdf", REPORT))
    app.selectbox(key="upload_kb_choice").set_value("legacy")
    run(app)

    [message] = errors(app)
    assert "'legacy' was built with `ollama:nomic-embed-text`" in message
    assert app.button(key="upload_ingest").disabled


# --- issue 13: what a new user hit in the browser ---------------------------------------------

_HANZI = "贾宝玉林黛玉薛宝钗王熙凤饭供酒袭人晴雯鸳鸯刘姥姥荣国府宁国府大观园怡红院潇湘馆"
CHINESE = "".join(_HANZI[(i * 7919) % len(_HANZI)] + ("。" if i % 97 == 96 else "") for i in range(4000)).encode()


def _base_with(store: Store, name: str, filename: str) -> None:
    store.write_document(
        knowledge=name,
        embedder=LocalEmbedder.NAME,
        dimension=LocalEmbedder.DIMENSION,
        chunk_settings=SPRING_DEFAULT.as_dict(),
        filename=filename,
        path=None,
        data=filename.encode(),
        sha256=documents.sha256_hex(filename.encode()),
        page_count=1,
        chunks=(),
        embeddings=np.zeros((0, LocalEmbedder.DIMENSION)),
    )


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


def new_session() -> AppTest:
    """A new browser session (the `app` fixture's began before the test's knowledge bases existed)."""
    return run(AppTest.from_file(APP, default_timeout=120))


def test_a_new_session_preselects_no_knowledge_base(store: Store) -> None:
    _base_with(store, "a-maths", "analysis.pdf")
    _base_with(store, "b-novel", "hongloumeng.txt")
    app = new_session()
    upload(app, ("report.pdf", REPORT))

    # Not the alphabetically first base: nothing, and Ingest waits for a choice.
    picker = app.selectbox(key="upload_kb_choice")
    assert picker.value is None
    assert app.button(key="upload_ingest").disabled
    assert any(c.startswith("To ingest: choose a knowledge base") for c in captions(app))

    picker.set_value("b-novel")
    run(app)
    assert not app.button(key="upload_ingest").disabled
    assert not any("preselected" in i.value for i in app.info)

    # Back from another page: the base this session used, said so.
    app.switch_page("pages/chunk-lab.py")
    run(app)
    app.switch_page("pages/upload.py")
    run(app)
    assert app.selectbox(key="upload_kb_choice").value == "b-novel"
    assert any(
        i.value.startswith("**b-novel** is preselected: the knowledge base this session used last") for i in app.info
    )
    assert not app.button(key="upload_ingest").disabled


def test_a_knowledge_base_deleted_elsewhere_is_no_longer_chosen(store: Store) -> None:
    _base_with(store, "a-maths", "analysis.pdf")
    _base_with(store, "b-novel", "hongloumeng.txt")
    app = new_session()
    upload(app, ("report.pdf", REPORT))
    app.selectbox(key="upload_kb_choice").set_value("b-novel")
    run(app)
    store.delete_knowledge_base("b-novel")
    run(app)
    picker = app.selectbox(key="upload_kb_choice")
    assert picker.value is None and picker.proto.set_value  # the browser is told too
    assert app.button(key="upload_ingest").disabled


def test_the_library_follows_the_chosen_base_and_deletes_after_switching(store: Store) -> None:
    _base_with(store, "a-maths", "analysis.pdf")
    _base_with(store, "b-novel", "hongloumeng.txt")
    app = new_session()
    assert app.selectbox(key="lib_kb").options == ["a-maths", "b-novel"]
    assert app.selectbox(key="lib_doc::a-maths").value == "analysis.pdf"

    app.selectbox(key="lib_kb").set_value("b-novel")
    run(app)
    # Each base has its own picker: the browser once kept showing analysis.pdf in a shared one and
    # sent it back on the next click, which unticked the confirmation every time (the browser test
    # walks this too).
    assert "lib_doc::a-maths" not in [w.key for w in app.selectbox]
    picker = app.selectbox(key="lib_doc::b-novel")
    assert picker.options == ["hongloumeng.txt"] and picker.value == "hongloumeng.txt"
    assert not app.checkbox(key="lib_doc_confirm").value

    app.checkbox(key="lib_doc_confirm").check()
    run(app)
    assert app.checkbox(key="lib_doc_confirm").value
    assert "0 chunks will be removed from 'b-novel'" in app.checkbox(key="lib_doc_confirm").label
    app.checkbox(key="lib_kb_confirm").check()  # another click: the first tick stays
    run(app)
    assert app.checkbox(key="lib_doc_confirm").value
    assert app.selectbox(key="lib_doc::b-novel").value == "hongloumeng.txt"
    app.button(key="lib_doc_delete").click()
    run(app)
    assert store.list_documents("b-novel") == []
    assert [d.original_filename for d in store.list_documents("a-maths")] == ["analysis.pdf"]


def test_a_file_type_not_read_says_what_to_do_and_blocks_a_doomed_ingest(app: AppTest) -> None:
    assert any(
        c.startswith("Read: PDF, EPUB, XPS, Word (.docx), PowerPoint (.pptx), Excel (.xlsx, .xls)")
        for c in captions(app)
    )
    upload(app, ("thesis.doc", b"PK\x03\x04 not really a Word file"))
    app.text_input(key="upload_kb_new").set_value("finance")
    run(app)

    assert errors(app) == [
        "**thesis.doc** cannot be read: .doc files are not read: open it in Word, "
        "save it as .docx (File › Save As) and upload that."
    ]
    assert table(app, "upload_overview")["on ingest"].tolist() == ["fails"]
    assert app.button(key="upload_ingest").disabled
    assert "To ingest: the file would fail (the reasons are in the preview below): fix or replace it." in captions(app)

    # One good file among them: the others go on, so Ingest is offered (once the new file's knowledge
    # base is named: a new upload has none chosen for it, issue 29).
    upload(app, ("thesis.doc", b"PK\x03\x04 not really a Word file"), ("report.pdf", REPORT))
    assert app.button(key="upload_ingest").disabled
    app.text_input(key="upload_kb_new").set_value("finance")
    run(app)
    assert not app.button(key="upload_ingest").disabled
    assert table(app, "upload_overview")["on ingest"].tolist() == ["fails", "new"]


def test_chinese_text_keeps_whole_characters_with_the_default_preset(app: AppTest) -> None:
    upload(app, ("novel.txt", CHINESE))
    assert app.selectbox(key="upload_preset").value == DEFAULT_PRESET
    chunks = table(app, "upload_chunks_novel.txt")
    assert len(chunks) > 1
    assert not any("\ufffd" in t for t in chunks["first words"])
    assert not any("U+FFFD" in w.value for w in app.warning)

    app.radio(key="upload_strategy").set_value("spring-exact")
    run(app)
    assert app.radio(key="upload_strategy").options[1] == "Spring AI exact (may split characters)"
    [flag] = [w.value for w in app.warning if "U+FFFD" in w.value]
    assert "the `spring-exact` strategy cut inside a character" in flag
    # and, as under `spring`, that its chunks end inside sentences (Spring does not cut at 。！？).
    assert any("The “Recursive 400 / 40” preset cuts at them." in w.value for w in app.warning)
    assert table(app, "upload_overview")["check"].tolist() == ["⚠️ 2 warnings"]


def test_the_page_starts_on_the_default_preset_whose_chunks_the_embedder_reads_whole(app: AppTest) -> None:
    preset = app.selectbox(key="upload_preset")
    assert preset.value == DEFAULT_PRESET == "Spring AI 320 (fits e5)"
    assert preset.options[:2] == [DEFAULT_PRESET, "Spring AI default"]
    assert "512 of its own tokens" in preset.help
    assert app.radio(key="upload_strategy").value == "spring"
    assert app.number_input(key="upload_chunk_size").value == DEFAULT.chunk_size == 320
    assert app.number_input(key="upload_min_chars").value == SPRING_DEFAULT.min_chunk_size_chars


def test_a_file_stored_with_the_old_default_is_replaced_unless_the_bases_settings_are_taken(store: Store) -> None:
    from rag import ingest
    from rag.settings import get_settings

    embedder = ingest.embedder_for_kb(store, get_settings(), "finance")
    assert ingest.ingest_bytes(store, embedder, REPORT, "report.pdf", "finance", SPRING_DEFAULT).ok
    app = new_session()
    upload(app, ("report.pdf", REPORT))
    app.selectbox(key="upload_kb_choice").set_value("finance")
    run(app)
    # The new default cuts it again (its 800-token chunks were read only to 512 e5 tokens), and says why.
    assert table(app, "upload_overview")["on ingest"].tolist() == ["replaces"]
    assert (
        "'finance' was last ingested with Spring AI default (Spring AI splitter, 800 tokens, cut after a "
        "separator beyond 350 chars)."
    ) in captions(app)
    app.button(key="upload_use_kb_settings").click()
    run(app)
    assert app.selectbox(key="upload_preset").value == "Spring AI default"
    assert table(app, "upload_overview")["on ingest"].tolist() == ["already stored"]


def test_the_preset_box_says_when_the_settings_were_changed(app: AppTest) -> None:
    preset = app.selectbox(key="upload_preset")
    assert preset.value == DEFAULT_PRESET and preset.options[-1] == "Custom"
    assert "character boundary" in preset.help

    app.number_input(key="upload_chunk_size").set_value(500)
    run(app)
    preset = app.selectbox(key="upload_preset")
    assert preset.value == "Custom"
    assert preset.options[-1] == f"{DEFAULT_PRESET}, changed"

    app.number_input(key="upload_chunk_size").set_value(800)
    run(app)
    preset = app.selectbox(key="upload_preset")
    assert preset.value == "Spring AI default"  # the default but 800 tokens
    assert preset.options[-1] == "Custom"  # nothing is changed now: no preset is offered a second time

    app.selectbox(key="upload_preset").set_value("Recursive 400 / 40")
    run(app)
    assert app.radio(key="upload_strategy").value == "recursive"
    app.number_input(key="upload_chunk_overlap").set_value(48)
    run(app)
    preset = app.selectbox(key="upload_preset")
    assert preset.value == "Custom" and preset.options[-1] == "Recursive 400 / 40, changed"
    assert preset.options[:-1] == list(chunking.PRESETS)


def test_counts_of_one_are_singular(store: Store) -> None:
    _base_with(store, "solo", "only.txt")
    app = new_session()
    app.selectbox(key="upload_kb_choice").set_value("solo")
    run(app)
    assert app.selectbox(key="upload_kb_choice").options[0] == "solo"
    assert any(c.value.endswith("· 1 document · 0 chunks") for c in app.caption)
    assert "with its 1 document and 0 chunks" in app.checkbox(key="lib_kb_confirm").label


def test_office_files_and_a_scan_say_what_read_them_and_where_each_chunk_is(app: AppTest) -> None:
    from tests.docgen import make_pptx, make_real_docx, make_scan_pdf

    scan = make_scan_pdf(["Jonathan Michael Harrison signed the lease for the Rotterdam warehouse in 2021."])
    upload(app, ("report.docx", make_real_docx()), ("review.pptx", make_pptx()), ("lease.pdf", scan))
    overview = table(app, "upload_overview")
    read_by = dict(zip(overview["file"], overview["read by"]))
    assert read_by["report.docx"] == "python-docx" and read_by["review.pptx"] == "python-pptx"
    assert (
        read_by["lease.pdf"].startswith("MuPDF + Tesseract") and "OCR on 1 page (confidence ≥ " in read_by["lease.pdf"]
    )
    assert overview["check"].tolist() == ["✅ ok"] * 3
    chunks = table(app, "upload_chunks_report.docx")
    assert list(chunks.columns) == ["#", "tokens", "characters", "where", "first words"]
    assert chunks["where"].iloc[0] == "Annual Report 2023 › Results"
    assert table(app, "upload_chunks_lease.pdf")["pages"].tolist() == ["1"]
    assert any(c.startswith("🔎 Read from the page image by OCR (Tesseract") for c in captions(app))
    # Each file's parts by their name: a Word file's are its headings' sections, not pages.
    parts = [m.label for m in app.metric if m.label in ("Pages", "Sections", "Slides")]
    assert sorted(parts) == ["Pages", "Sections", "Slides"]
    # The overview counts them under "parts" (it said "pages" of the Word file's sections), and says what they are.
    assert "pages" not in overview.columns and overview["parts"].notna().all()
    [frame] = [d for d in app.dataframe if "parts" in d.value.columns]
    help_text = json.loads(frame.proto.columns)["parts"]["help"]
    assert help_text.startswith("Pages of a PDF or text file; sections of a Word file")
    assert not app.exception


def test_a_base_built_by_sync_shows_its_folder_and_syncs_again_from_the_library(store: Store, tmp_path) -> None:
    from rag import ingest
    from rag.settings import get_settings

    folder = tmp_path / "analysis"
    folder.mkdir()
    (folder / "minutes.md").write_text("# Minutes\n\nThe committee approved the Osprey budget.", encoding="utf-8")
    embedder = ingest.embedder_for_kb(store, get_settings(), "synced")
    ingest.sync(store, embedder, folder, "synced", SPRING_DEFAULT)
    _base_with(store, "uploads", "report.pdf")
    app = new_session()
    app.selectbox(key="lib_kb").set_value("synced")
    run(app)
    assert any(c.startswith(f"📁 Kept in step with the folder `{folder.resolve()}`") for c in captions(app))
    (folder / "later.md").write_text("# Later\n\nThe Falcon X ships in May.", encoding="utf-8")
    (folder / "minutes.md").unlink()
    app.checkbox(key="lib_sync_delete").check()
    app.button(key="lib_sync").click()
    run(app)
    assert [s.value for s in app.success] == [
        f"synced {folder.resolve()} into 'synced': 1 new, 0 replaced, 0 unchanged, 1 deleted, 0 failed"
    ]
    assert [d.original_filename for d in store.list_documents("synced")] == ["later.md"]
    app.selectbox(key="lib_kb").set_value("uploads")
    run(app)
    assert "lib_sync" not in [b.key for b in app.button]  # built from uploads: nothing to sync
    assert not app.exception


def test_a_pdf_table_is_shown_as_a_table_beside_its_chunks(app: AppTest) -> None:
    from tests.docgen import make_table_pdf

    rows = [["SKU", "Product", "Price"], ["SKU-6678", "Falcon X", "$42,000.00"], ["SKU-1020", "Osprey", "$9,500.00"]]
    upload(app, ("prices.pdf", make_table_pdf("Prices of our products in 2024.", rows)))
    assert table(app, "upload_overview")["read by"].tolist() == ["MuPDF (1 table as rows)"]
    (expander,) = [e for e in app.expander if e.label == "1 table on this page, rendered"]
    shown = expander.dataframe[0].value
    assert list(shown.columns) == rows[0] and shown.values.tolist() == rows[1:]


def test_a_tables_pictures_and_links_are_shown_as_text_not_fetched(app: AppTest) -> None:
    """Issue 33: drawn as Markdown, a CSV cell `![](http://127.0.0.1:9999/x)` made the browser fetch that URL
    as soon as the file was previewed. The table is drawn as data; no Markdown element holds a live picture
    or link to the host."""
    cells = [
        ["name", "picture", "link", "price"],
        ["Falcon X", "![](http://127.0.0.1:9999/x)", "[open](http://127.0.0.1:9999/y)", "$42 | $45"],
    ]
    upload(app, ("prices.csv", "\n".join(",".join(row) for row in cells).encode()))
    drawn = [m.value for m in app.get("markdown")] + [a.value for a in app.get("alert")]
    live = [text for text in drawn if "](http://127.0.0.1:9999" in text]
    assert not live, live
    (expander,) = [e for e in app.expander if e.label.startswith("1 table on this")]
    shown = expander.dataframe[0].value
    assert list(shown.columns) == cells[0] and shown.values.tolist() == cells[1:]


# --- issue 28: one ingest path ------------------------------------------------------------------


def test_the_page_ingests_through_the_pipeline_with_the_previews_parse(
    app: AppTest, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The previewed scan is OCR'd once, by the preview: Ingest hands its parse to `ingest_files` (whose
    writer thread writes the documents), and a second Ingest finds it unchanged without reading it."""
    import threading
    from collections import Counter

    from rag import ingest
    from rag.documents import ocr
    from tests.docgen import make_scan_pdf

    # Words no other test scans: the page's parse cache (shared by the process) has not seen this file.
    scan = make_scan_pdf(["Cornelius Abernathy stored forty crates of Osprey spare parts in the Ghent depot."])
    counted: Counter[str] = Counter()
    writers: list[str] = []
    handed: list[list[ingest.Source]] = []
    load_bytes, read_image, write_document, ingest_files = (
        documents.load_bytes,
        ocr.read_image,
        Store.write_document,
        ingest.ingest_files,
    )

    def counting_load(data: bytes, filename: str, progress=None):
        counted[f"parse:{filename}"] += 1
        return load_bytes(data, filename, progress)

    def counting_ocr(png: bytes, prefer=None):
        counted["ocr"] += 1
        return read_image(png, prefer)

    def noting_writer(self: Store, **kwargs):
        writers.append(threading.current_thread().name)
        return write_document(self, **kwargs)

    def noting_sources(store_, embedder, sources, *args, **kwargs):  # noqa: ANN002
        handed.append(list(sources))
        return ingest_files(store_, embedder, handed[-1], *args, **kwargs)

    monkeypatch.setattr(documents, "load_bytes", counting_load)
    monkeypatch.setattr(ocr, "read_image", counting_ocr)
    monkeypatch.setattr(Store, "write_document", noting_writer)
    monkeypatch.setattr(ingest, "ingest_files", noting_sources)

    upload(app, ("lease.pdf", scan), ("locked.pdf", LOCKED), ("report.pdf", REPORT))
    assert (counted["parse:lease.pdf"], counted["ocr"]) == (1, 1)  # the preview read it
    app.text_input(key="upload_kb_new").set_value("leases")
    run(app)
    app.button(key="upload_ingest").click()
    run(app)

    summary = table(app, "upload_summary")
    assert summary[["file", "status"]].values.tolist() == [
        ["lease.pdf", "stored"],
        ["locked.pdf", "failed"],
        ["report.pdf", "stored"],
    ]
    # The new base drawn as existing at once: the summary tells the failure's reason (the bars are gone).
    assert summary["reason"].tolist()[1] == "password-protected PDF: remove the password and try again"
    assert app.selectbox(key="upload_kb_choice").value == "leases"
    assert (counted["parse:lease.pdf"], counted["ocr"]) == (1, 1)  # not read again
    [sources] = handed
    assert [(s.name, s.parsed is not None) for s in sources] == [
        ("lease.pdf", True),
        ("locked.pdf", False),
        ("report.pdf", True),
    ]
    assert len(writers) == 2 and all(w.startswith("rag-ingest-write") for w in writers)
    assert "Cornelius Abernathy" in " ".join(c.content for c in store.iter_chunks("leases"))
    assert RUNNING_KEY not in app.session_state  # it ran to the end: nothing for a stop to account for

    app.button(key="upload_ingest").click()
    run(app)
    assert table(app, "upload_summary")["status"].tolist() == ["unchanged", "failed", "unchanged"]
    assert (counted["parse:lease.pdf"], counted["ocr"]) == (1, 1)
    assert len(writers) == 2  # nothing written again


def test_a_stopped_ingest_keeps_the_file_being_written_and_says_what_each_file_became(
    app: AppTest, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A click on Stop ends the script run where the page next calls Streamlit, with an exception that is
    not an Exception; here the embedder raises it while b.txt is embedded, when a.txt is being written."""
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    embed = LocalEmbedder.embed

    def stopping(self: LocalEmbedder, texts, *args, **kwargs):  # noqa: ANN002
        if any("Bravo" in t for t in texts):
            raise StopException
        return embed(self, texts, *args, **kwargs)

    monkeypatch.setattr(LocalEmbedder, "embed", stopping)
    files = [
        (f"{name.lower()}.txt", f"{name} log. The keeper lit the lamp at dusk. ".encode() * 40)
        for name in ("Alpha", "Bravo", "Charlie")
    ]
    upload(app, *files)
    app.text_input(key="upload_kb_new").set_value("logs")
    run(app)
    app.button(key="upload_ingest").click()
    run(app)  # the run the stop ended
    assert [d.original_filename for d in store.list_documents("logs")] == ["alpha.txt"]
    assert RUNNING_KEY in app.session_state

    run(app)  # the next run tells what the stopped one did
    assert RUNNING_KEY not in app.session_state
    summary = table(app, "upload_summary")
    assert summary[["file", "status", "reason"]].values.tolist() == [
        ["alpha.txt", "stored", ""],
        ["bravo.txt", "stopped", "stopped during embed: nothing of it was stored"],
        ["charlie.txt", "stopped", "not started"],
    ]
    assert summary["chunks"].isna().tolist() == [False, True, True]  # none in the base, not 0 of them
    assert app.container(key="upload_summary").dataframe[0].proto.placeholder == ""  # an empty cell, not "None"
    [info] = [i.value for i in app.info if "It was stopped" in i.value]
    assert "1 of 3 files in the knowledge base" in info


RUNNING_KEY = "_upload_running"
"""pages/upload.py's record of an ingest while it runs."""


def test_the_count_of_files_done_counts_a_file_stored_before_its_result_comes(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline gives results in the files' order, a file's after the next file is embedded: a walk read
    "Ingesting 0/2 done" while the first file's bar said stored. Its stages and results here as the pipeline gives
    them (the first stored while the second is read), the labels the status box was given recorded."""
    from streamlit.elements.lib.mutable_status_container import StatusContainer

    labels: list[str] = []
    update = StatusContainer.update

    def noting(self: StatusContainer, **kwargs):
        if kwargs.get("label"):
            labels.append(kwargs["label"])
        return update(self, **kwargs)

    def in_order(store_, embedder, sources, knowledge, settings, *, on_stage, **kwargs):
        first, second = [source.name for source in sources]
        tell = on_stage(first)
        for stage in ("parse", "chunk", "embed"):
            tell(stage, 1.0, "")
        reading = on_stage(second)
        reading("parse", 0.5, "page 1 of 2")
        tell("store", 0.9, "writing")
        tell("store", 1.0, "stored")
        reading("chunk", 0.5, "")
        yield ingest.IngestResult(first, "stored", chunks=3, pages=2)
        reading("embed", 0.5, "")
        yield ingest.IngestResult(second, "stored", chunks=3, pages=2)

    monkeypatch.setattr(StatusContainer, "update", noting)
    monkeypatch.setattr(ingest, "ingest_files", in_order)
    upload(app, ("first.pdf", REPORT), ("second.pdf", make_pdf(["A second report, on the harbour's lamps."])))
    app.text_input(key="upload_kb_new").set_value("counted")
    run(app)
    app.button(key="upload_ingest").click()
    run(app)
    while_read = labels[labels.index("Ingesting 0/2 done · second.pdf: parse…") + 1 :]
    assert while_read[:2] == ["Ingesting 1/2 done · second.pdf: parse…", "Ingesting 1/2 done · second.pdf: chunk…"]
    assert "Ingesting 0/2 done" not in " ".join(while_read)
    assert table(app, "upload_summary")["status"].tolist() == ["stored", "stored"]
