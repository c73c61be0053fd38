"""Files that must not go into the wrong knowledge base (issue 29, item 5): a new upload has no base
chosen for it, whatever the session did before, and a file whose content a base already holds says
which. Through Streamlit's AppTest with the real database and the local embedder."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from rag.store import Store
from tests.docgen import make_pdf
from tests.pages.test_page_upload import (
    APP,
    NEW_KB,
    REPORT,
    _base_with,
    _page_text,
    captions,
    new_session,
    run,
    table,
    upload,
)

OTHER = make_pdf([_page_text("third"), _page_text("fourth")])


def test_after_an_ingest_a_new_upload_has_no_knowledge_base_chosen(store: Store) -> None:
    app = run(AppTest.from_file(APP, default_timeout=120))
    upload(app, ("report.pdf", REPORT))
    assert app.selectbox(key="upload_kb_choice").value == NEW_KB  # no base yet: a new one, to be named
    app.text_input(key="upload_kb_new").set_value("finance")
    run(app)
    app.button(key="upload_ingest").click()
    run(app)
    assert table(app, "upload_summary")["status"].tolist() == ["stored"]
    # At once, not at the next click: the base exists, its files are stored (the page drawn before the ingest
    # had offered to create it and said "new" of the file, and an Ingest pressed again said "unchanged").
    assert app.selectbox(key="upload_kb_choice").value == "finance"  # the same files: the base they went to
    assert table(app, "upload_overview")["on ingest"].tolist() == ["already stored"]
    assert not [t for t in app.text_input if t.key == "upload_kb_new"]
    assert "Ingested into 'finance': 1 stored" in [s.label for s in app.status]  # the ingest's last status

    # Another file: 'finance' was chosen for the report, not for it.
    upload(app, ("report.pdf", REPORT), ("minutes.pdf", OTHER))
    picker = app.selectbox(key="upload_kb_choice")
    assert picker.value is None
    assert app.button(key="upload_ingest").disabled
    assert any(c.startswith("To ingest: choose a knowledge base") for c in captions(app))
    assert any(c.startswith("Choose the knowledge base the files go into: none is preselected") for c in captions(app))
    assert not any("preselected: the knowledge base this session used last" in i.value for i in app.info)
    assert not any("→ **finance**" in m.value for m in app.markdown)

    # Chosen again, it ingests; and a page switch does not bring a base back for a new upload either.
    app.selectbox(key="upload_kb_choice").set_value("finance")
    run(app)
    assert not app.button(key="upload_ingest").disabled
    app.switch_page("pages/chunk-lab.py")
    run(app)
    app.switch_page("pages/upload.py")
    run(app)
    upload(app, ("minutes.pdf", OTHER))
    assert app.selectbox(key="upload_kb_choice").value is None
    assert app.button(key="upload_ingest").disabled


def test_after_a_new_base_was_named_a_new_upload_asks_for_the_name_again(store: Store) -> None:
    _base_with(store, "hlm", "hongloumeng.txt")
    app = new_session()
    upload(app, ("report.pdf", REPORT))
    app.selectbox(key="upload_kb_choice").set_value(NEW_KB)
    run(app)
    app.text_input(key="upload_kb_new").set_value("office")
    run(app)
    assert not app.button(key="upload_ingest").disabled

    upload(app, ("report.pdf", REPORT), ("minutes.pdf", OTHER))
    assert app.selectbox(key="upload_kb_choice").value is None
    assert app.button(key="upload_ingest").disabled


def test_a_file_already_stored_says_in_which_knowledge_base(store: Store) -> None:
    _base_with(store, "hlm", "hongloumeng.txt")  # its content: the bytes of its name
    _base_with(store, "office", "memo.txt")
    [stored] = store.list_documents("hlm")
    day = f"{stored.ingested_at:%Y-%m-%d}"
    app = new_session()
    upload(app, ("hongloumeng.txt", b"hongloumeng.txt"), ("copy.txt", b"hongloumeng.txt"), ("report.pdf", REPORT))

    notes = [i.value for i in app.info if "is already in" in i.value]
    assert len(notes) == 1
    lines = notes[0].split("  \n")
    assert sorted(lines) == sorted(
        [
            f"hongloumeng.txt is already in 'hlm' (stored {day}).",
            f"copy.txt is already in 'hlm' as hongloumeng.txt (stored {day}).",
        ]
    )
    assert app.selectbox(key="upload_kb_choice").value is None  # told, not chosen for the user

    # Still said while another base is chosen: that is when it matters.
    app.selectbox(key="upload_kb_choice").set_value("office")
    run(app)
    assert any("hongloumeng.txt is already in 'hlm'" in i.value for i in app.info)
    # With the base that holds it chosen, a file it holds under its own name is left to the preview ("unchanged");
    # one it holds under another name is still said (ingested, it would be there twice).
    app.selectbox(key="upload_kb_choice").set_value("hlm")
    run(app)
    notes = [i.value for i in app.info if "is already in" in i.value]
    assert notes == [f"copy.txt is already in 'hlm' as hongloumeng.txt (stored {day})."], notes


def test_many_files_already_stored_are_summed_up_by_knowledge_base(store: Store) -> None:
    """Twenty files already stored made twenty lines above the preview: more than `LISTED_COPIES` are one line a
    knowledge base, the files listed in an expander."""
    names = [f"note-{i}.txt" for i in range(6)]
    for i, name in enumerate(names):
        _base_with(store, "hlm" if i < 4 else "office", name)
    app = new_session()
    upload(app, *((name, name.encode()) for name in names), ("report.pdf", REPORT))
    notes = [i.value for i in app.info if "already" in i.value]
    assert notes == ["6 of the files are already stored: 4 in 'hlm'; 2 in 'office'."]
    [listed] = [e for e in app.expander if e.label == "Which files, where"]
    assert (
        len(listed.markdown[0].value.split("  \n")) == 6
        and "note-5.txt is already in 'office'" in listed.markdown[0].value
    )

    app.query_params["lang"] = "zh"
    run(app)
    assert "其中 6 个文件已经保存过：4 个在“hlm”；2 个在“office”。" in [i.value for i in app.info]


def test_the_notes_are_in_chinese_in_the_chinese_ui(store: Store) -> None:
    _base_with(store, "hlm", "hongloumeng.txt")
    app = AppTest.from_file(APP, default_timeout=120)
    app.query_params["lang"] = "zh"
    run(app)
    upload(app, ("hongloumeng.txt", b"hongloumeng.txt"))
    assert any("hongloumeng.txt 已在“hlm”中" in i.value for i in app.info), [i.value for i in app.info]
    assert any(c.startswith("选择文件要存入的知识库") for c in captions(app))
