"""The Library's Export and Import (issue #31) through AppTest: a knowledge base exported from the page and its
downloaded bytes imported back under another name; a hostile file refused in one line with nothing written;
the Chinese UI with no English on these widgets. Real database, real files, the jobs on their real threads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from rag.settings import get_settings
from rag.store import Store
from tests.pages.test_page_upload import APP, run
from tests.portable.helpers import build_kb, counts, snapshot, with_member
from tests.ui.test_i18n import english_phrases, shown_texts

WAIT = 120.0


def library(lang: str = "en") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    if lang != "en":
        at.query_params["lang"] = lang
    return run(at)


def finish(at: AppTest, job_key: str) -> AppTest:
    """Run until the job in `job_key` has ended and the page has taken its outcome (a job that ended at once,
    a file refused by its first check, was taken by the run that started it: its fragment reran the page)."""
    if job_key not in at.session_state:
        return at
    assert at.session_state[job_key].wait(WAIT), "the job did not end"
    return run(at)


@pytest.fixture
def deferred(monkeypatch: pytest.MonkeyPatch) -> dict[str, Callable[[], Any]]:
    """The callables the page gives deferred download buttons, by file name (AppTest's runtime lives only
    while a script runs, so the bytes are fetched by calling them, as Streamlit does on a click)."""
    kept: dict[str, Callable[[], Any]] = {}
    original = MediaFileManager.add_deferred

    def keep(self, data, mimetype, coordinates, file_name=None, **kwargs):
        kept[file_name] = data
        return original(self, data, mimetype, coordinates, file_name=file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep)
    return kept


def import_file_key(at: AppTest) -> str:
    """The import uploader's key now: a new one after each import that succeeded (which empties it)."""
    done = at.session_state.get("_lib_import_uploads", 0)
    return "lib_import_file" if not done else f"lib_import_file_{done}"


def import_panel(at: AppTest) -> Any:
    (panel,) = [e for e in at.expander if e.label.endswith("Import a knowledge base")]
    return panel


def upload_import(at: AppTest, name: str, data: bytes, *, as_name: str = "") -> AppTest:
    at.file_uploader(key=import_file_key(at)).set_value([(name, data, "application/zip")])
    run(at)
    at.text_input(key="lib_import_name").set_value(as_name)
    at.button(key="lib_import").click()
    run(at)
    return finish(at, "_lib_import_job")


def portable_files() -> list[Path]:
    folder = get_settings().data_dir / "portable"
    return sorted(folder.iterdir()) if folder.exists() else []


def test_export_from_the_library_and_import_the_download_under_another_name(
    store: Store, deferred: dict[str, Callable[[], Any]]
) -> None:
    build_kb(store)
    at = library()
    assert at.download_button(key="lib_csv")  # the Library shows the base
    assert not [b for b in at.get("download_button") if b.key == "lib_export_download"]
    at.button(key="lib_export").click()
    run(at)
    finish(at, "_lib_export_job")
    button = at.download_button(key="lib_export_download")
    size = (at.session_state["_lib_exported"].path).stat().st_size
    assert button.label.startswith("Download harbour.zip (") and size > 1000
    assert any(c.value == "3 documents, 10 chunks, 1 saved question." for c in at.caption)
    data = deferred["harbour.zip"]()  # what a click downloads: the file in the data folder
    assert len(data) == size and data[:2] == b"PK"

    upload_import(at, "harbour.zip", data, as_name="harbour copy")
    assert [s.value for s in at.success] == [
        "imported 'harbour copy': 3 documents, 10 chunks, 1 saved question (local:wordllama-l2_supercat-256, "
        "256-d; given new ids, as the file's are in use here)"
    ]
    assert at.selectbox(key="lib_kb").value == "harbour copy"  # the Library shows the base just imported
    # Said in the import panel (not ~450 px above it, at the top of the tab), and the file leaves the uploader.
    assert [s.value for s in import_panel(at).success] == [s.value for s in at.success]
    assert at.file_uploader(key=import_file_key(at)).value is None and at.button(key="lib_import").disabled
    original, copied = snapshot(store, "harbour"), snapshot(store, "harbour copy")
    assert [c[1] for c in sorted(original["chunks"], key=lambda c: c[1])] == [
        c[1] for c in sorted(copied["chunks"], key=lambda c: c[1])
    ]
    assert sorted(c[3] for c in original["chunks"]) == sorted(c[3] for c in copied["chunks"])  # the same vectors
    assert original["bm25"] == copied["bm25"] and original["questions"] == copied["questions"]
    assert not [p for p in portable_files() if p.name.startswith("import-")]  # the upload's copy is gone


def test_a_hostile_file_is_refused_in_one_line_and_nothing_is_written(store: Store, tmp_path: Path) -> None:
    from rag.portable import export_knowledge_base

    build_kb(store)
    exported = export_knowledge_base(store, "harbour", tmp_path / "harbour.zip").path
    evil = with_member(exported, tmp_path / "evil.zip", "../../etc/cron.d/evil", b"x")
    before = counts(store)
    at = library()
    upload_import(at, "evil.zip", evil.read_bytes(), as_name="other")
    assert [e.value for e in import_panel(at).error] == [
        "Not imported: evil.zip: member '../../etc/cron.d/evil' has an unsafe name (absolute, or with '..')"
    ]
    assert not at.success and import_file_key(at) == "lib_import_file"  # a refused file stays, to try again
    assert counts(store) == before and store.get_knowledge_base("other") is None
    assert not [p for p in portable_files() if p.name.startswith("import-")]
    upload_import(at, "not.zip", b"%PDF-1.7 not a zip", as_name="other")
    (line,) = [e.value for e in at.error]
    assert line == "Not imported: not.zip: not a knowledge base export (not a zip file)"  # said once
    assert str(get_settings().data_dir) not in line  # the upload's name, not its copy's path
    assert counts(store) == before


def test_the_export_and_import_widgets_have_no_english_in_chinese(store: Store) -> None:
    build_kb(store)
    at = library("zh")
    at.button(key="lib_export").click()
    run(at)
    finish(at, "_lib_export_job")
    keys = (
        "lib_export",
        "lib_export_sources",
        "lib_export_download",
        "lib_import_name",
        "lib_import_replace",
        "lib_import_reembed",
        "lib_import",
    )
    widgets = [w for w in at.get("download_button") if w.key == "lib_export_download"]
    widgets += [at.button(key="lib_export"), at.button(key="lib_import"), at.text_input(key="lib_import_name")]
    widgets += [at.checkbox(key=k) for k in ("lib_export_sources", "lib_import_replace", "lib_import_reembed")]
    assert sorted(w.key for w in widgets) == sorted(keys)
    texts = [w.label for w in widgets] + [str(w.help) for w in widgets if getattr(w, "help", None)]
    texts += [str(w.placeholder) for w in widgets if getattr(w, "placeholder", None)]
    uploader = at.get("file_uploader")
    texts += [u.proto.label for u in uploader if u.proto.id.endswith("lib_import_file")]
    texts += [e.label for e in at.expander if "📦" in e.label]
    texts += [c.value for c in at.caption if "保存的问题" in c.value]
    assert len(texts) >= 12, texts
    allowed = ["python -m rag kb import", "python -m rag kb export", "harbour.zip", "RAG_EMBEDDER="]
    allowed.append(f"RAG_EMBEDDER={get_settings().embedder}")
    found = english_phrases(texts, allowed)
    assert found == [], "\n".join(found)
    assert at.button(key="lib_export").label == "导出知识库"
    assert [t for t in shown_texts(at) if "📦" in t] == ["📦 导入知识库"]


def import_expander(at: AppTest) -> Any:
    (expander,) = [e for e in at.expander if "📦" in e.label]
    return expander


def test_a_name_taken_is_refused_naming_the_pages_controls_and_the_expander_stays_open(
    store: Store, tmp_path: Path
) -> None:
    """The walk of issue #31 found the page telling its user to import `--replace` or `--as NAME` (CLI flags), and
    the import expander closing on the refusal: the page names its own controls, and they overcome it."""
    from rag.portable import export_knowledge_base

    build_kb(store)
    data = export_knowledge_base(store, "harbour", tmp_path / "harbour.zip").path.read_bytes()
    at = library()
    assert not import_expander(at).proto.expanded  # a knowledge base is shown: the import waits, closed
    upload_import(at, "harbour.zip", data)
    replace, import_as = at.checkbox(key="lib_import_replace").label, at.text_input(key="lib_import_name").label
    assert [e.value for e in at.error] == [
        f"Not imported: a knowledge base named 'harbour' exists already: tick “{replace}” to replace it, or type "
        f"another name in “{import_as}”"
    ]
    assert import_expander(at).proto.expanded  # open on the outcome, beside the controls it names
    at.checkbox(key="lib_import_replace").check()
    upload_import(at, "harbour.zip", data)
    (done,) = [s.value for s in at.success]
    assert done.startswith("imported 'harbour': 3 documents, 10 chunks, 1 saved question (") and done.endswith(
        "; replaced the one before)"
    )
    assert import_expander(at).proto.expanded
    assert counts(store)["vector_store"] == 10


def test_another_embedder_is_refused_naming_the_re_embed_checkbox_which_overcomes_it(
    store: Store, tmp_path: Path
) -> None:
    from rag.portable import export_knowledge_base
    from tests.portable.helpers import EMBEDDER

    build_kb(store, embedder="ollama:nomic-embed-text", dim=16)
    data = export_knowledge_base(store, "harbour", tmp_path / "ollama.zip").path.read_bytes()
    at = library()
    upload_import(at, "ollama.zip", data, as_name="mine")
    reembed = at.checkbox(key="lib_import_reembed").label
    assert [e.value for e in at.error] == [
        f"Not imported: ollama.zip was built with ollama:nomic-embed-text, and knowledge base 'mine' would be "
        f"searched with {EMBEDDER}: tick “{reembed}” to embed its chunks again with {EMBEDDER}, or run the app "
        f"with RAG_EMBEDDER=ollama:nomic-embed-text"
    ]
    assert store.get_knowledge_base("mine") is None
    at.checkbox(key="lib_import_reembed").check()
    upload_import(at, "ollama.zip", data, as_name="mine")
    (done,) = [s.value for s in at.success]
    assert done.startswith(f"imported 'mine': 3 documents, 10 chunks, 1 saved question ({EMBEDDER}, 256-d")
    assert "; re-embedded" in done
    kb = store.get_knowledge_base("mine")
    assert kb is not None and kb.embedder == EMBEDDER


def test_the_refusals_and_the_outcome_read_in_chinese(store: Store, tmp_path: Path) -> None:
    from rag.portable import export_knowledge_base

    build_kb(store)
    data = export_knowledge_base(store, "harbour", tmp_path / "harbour.zip").path.read_bytes()
    at = library("zh")
    upload_import(at, "harbour.zip", data)
    (refused,) = [e.value for e in at.error]
    assert (
        refused
        == "未导入：名为 'harbour' 的知识库已存在：勾选“替换同名的现有知识库”以替换它，或在“导入为”中填写另一个名称"
    )
    at.checkbox(key="lib_import_replace").check()
    upload_import(at, "harbour.zip", data)
    (done,) = [s.value for s in at.success]
    assert done.startswith("已导入 'harbour'：3 个文档、10 个分块、1 个保存的问题（") and done.endswith(
        "；已替换原有的同名知识库）"
    )
    upload_import(at, "not.zip", b"%PDF-1.7 not a zip")
    assert [e.value for e in at.error] == ["未导入：not.zip：不是知识库导出文件（不是 zip 文件）"]
