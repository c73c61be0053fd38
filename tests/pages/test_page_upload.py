"""The Upload & preview page through Streamlit's AppTest.

Real files (pymupdf), the real database (the `store` fixture wipes it) and the local embedder;
widgets are found by key and every run must end without an exception.
"""
from __future__ import annotations

import csv
import dataclasses
import io

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from rag import chunking, documents, export
from rag.chunking import SPRING_DEFAULT, ChunkSettings
from rag.embeddings import LocalEmbedder
from rag.store import Store
from tests.conftest import ROOT
from tests.docgen import make_encrypted_pdf, make_pdf

APP = str(ROOT / "app.py")
NEW_KB = "New knowledge base…"


def _page_text(topic: str, sentences: int = 40) -> str:
    return " ".join(f"Sentence {i} of the {topic} section explains revenue, costs and margins." for i in range(sentences))


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
    expected = expected_chunks(REPORT, "report.pdf", SPRING_DEFAULT)
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

    smaller = expected_chunks(REPORT, "report.pdf", dataclasses.replace(SPRING_DEFAULT, chunk_size=120))
    assert smaller > expected
    assert len(table(app, "upload_chunks_report.pdf")) == smaller


def test_a_broken_file_shows_its_reason_while_the_good_one_is_previewed(app: AppTest) -> None:
    upload(app, ("locked.pdf", LOCKED), ("report.pdf", REPORT))

    assert errors(app) == ["**locked.pdf** cannot be read: password-protected PDF: remove the password and try again"]
    assert len(table(app, "upload_chunks_report.pdf")) == expected_chunks(REPORT, "report.pdf", SPRING_DEFAULT)
    overview = table(app, "upload_overview")
    assert overview["file"].tolist() == ["locked.pdf", "report.pdf"]
    assert overview["check"].tolist()[0].startswith("❌ password-protected PDF")


def test_removing_a_file_from_the_uploader_removes_it_from_the_session(app: AppTest) -> None:
    upload(app, ("locked.pdf", LOCKED), ("report.pdf", REPORT))
    assert set(app.session_state["uploads"]) == {"locked.pdf", "report.pdf"}

    upload(app, ("report.pdf", REPORT))

    assert app.session_state["uploads"] == {"report.pdf": REPORT}
    assert errors(app) == []


def test_ingest_into_a_new_knowledge_base_then_unchanged_then_delete(app: AppTest, store: Store) -> None:
    chunks = expected_chunks(REPORT, "report.pdf", SPRING_DEFAULT)
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
        ["finance", 1, chunks, kb.dimension]]
    docs = table(app, "lib_docs")
    assert docs[["filename", "pages", "chunks"]].values.tolist() == [["report.pdf", 2, chunks]]
    assert not app.download_button(key="lib_csv").disabled
    assert not app.download_button(key="lib_jsonl").disabled
    exported = list(csv.DictReader(io.StringIO(export.chunks_csv(store.iter_chunks("finance")).decode("utf-8-sig"))))
    assert len(exported) == chunks

    # The new knowledge base is now the chosen one; the same file again changes nothing.
    run(app)
    assert app.selectbox(key="upload_kb_choice").value == "finance"
    assert table(app, "upload_overview")["on ingest"].tolist() == ["unchanged"]
    app.button(key="upload_ingest").click()
    run(app)
    assert table(app, "upload_summary")["status"].tolist() == ["unchanged"]
    assert store.list_knowledge_bases()[0].chunks == chunks

    # Deleting needs the confirmation first.
    assert app.selectbox(key="lib_doc").value == "report.pdf"
    assert app.button(key="lib_doc_delete").disabled
    app.checkbox(key="lib_doc_confirm").check()
    run(app)
    app.button(key="lib_doc_delete").click()
    run(app)
    assert store.list_documents("finance") == []
    assert "Deleted 'report.pdf' and its chunks from 'finance'." in [s.value for s in app.success]
    assert table(app, "lib_overview")[["documents", "chunks"]].values.tolist() == [[0, 0]]
    assert "lib_doc" not in [w.key for w in app.selectbox]  # no document left to delete

    assert app.button(key="lib_kb_delete").disabled
    app.checkbox(key="lib_kb_confirm").check()
    run(app)
    app.button(key="lib_kb_delete").click()
    run(app)
    assert store.list_knowledge_bases() == []
    assert any("No knowledge bases yet" in i.value for i in app.info)
    assert app.selectbox(key="upload_kb_choice").options == [f"➕ {NEW_KB}"]


def test_uploaded_files_survive_a_visit_to_the_chunk_lab(app: AppTest) -> None:
    upload(app, ("report.pdf", REPORT))

    app.switch_page("pages/chunk-lab.py")
    run(app)
    app.switch_page("pages/upload.py")
    run(app)

    # The uploader starts empty on a page shown again; the files are kept and still previewed.
    assert not app.file_uploader(key="upload_files").value
    assert app.session_state["uploads"] == {"report.pdf": REPORT}
    assert len(table(app, "upload_chunks_report.pdf")) == expected_chunks(REPORT, "report.pdf", SPRING_DEFAULT)
    assert any(c.value == "Kept from earlier in this session: report.pdf." for c in app.caption)

    app.button(key="upload_forget").click()
    run(app)
    assert app.session_state["uploads"] == {}
    assert any("Upload files to see their pages" in i.value for i in app.info)


def _empty_knowledge_base(store: Store, name: str, embedder: str, dimension: int, settings: ChunkSettings) -> None:
    store.write_document(
        knowledge=name, embedder=embedder, dimension=dimension, chunk_settings=settings.as_dict(),
        filename="old.txt", path=None, data=b"old", sha256=documents.sha256_hex(b"old"), page_count=1,
        chunks=(), embeddings=np.zeros((0, dimension)),
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
