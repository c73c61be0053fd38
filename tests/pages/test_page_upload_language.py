"""The Upload page after the language is switched mid-session, and its Library (issue 29's follow-ups):
no English label left on a choice box, Chinese column headers, the embedder's whole name, and the base
just ingested into shown in the Library. Through Streamlit's AppTest with the real database and the
local embedder."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from rag import chunking
from rag.chunking.settings import DEFAULT_PRESET
from rag.embeddings import LocalEmbedder
from rag.store import Store
from tests.pages.test_page_upload import APP, NEW_KB, REPORT, _base_with, new_session, run, table, upload
from ui import i18n


def switch_to_chinese(app: AppTest) -> AppTest:
    """The sidebar's 中文 button: what its callback leaves (AppTest's tree lacks the sidebar's button after
    the first run)."""
    app.session_state[i18n.CHOICE_KEY] = "zh"
    return run(app)


def test_switching_to_chinese_mid_session_relabels_the_choice_boxes_in_the_browser(store: Store) -> None:
    app = new_session()
    preset = app.selectbox(key="upload_preset")
    assert preset.value == DEFAULT_PRESET and preset.options[0] == "Spring AI 320 (fits e5)"
    app.radio(key="upload_strategy").set_value("token")
    run(app)
    assert app.selectbox(key="upload_kb_choice").value == NEW_KB

    switch_to_chinese(app)
    # The browser holds a choice by its label: unless told again, it kept showing the English one (the
    # option itself, the preset's English name, did not change, so Streamlit did not send it).
    preset = app.selectbox(key="upload_preset")
    assert preset.options[0] == "Spring AI 320（适配 e5）"
    assert preset.value == chunking.CUSTOM  # the strategy was changed: '<preset>, changed'
    assert preset.proto.set_value and preset.proto.raw_value == "Spring AI 320（适配 e5）（已修改）"
    strategy = app.radio(key="upload_strategy")
    assert strategy.value == "token"  # the choice is kept, only its label follows the language
    assert strategy.proto.set_value and strategy.proto.raw_value == strategy.format_func("token") != "Token windows"
    kb = app.selectbox(key="upload_kb_choice")
    assert kb.value == NEW_KB and kb.proto.set_value and kb.proto.raw_value == "➕ 新建知识库…"

    run(app)  # told once: the next run leaves the browser's choice alone
    assert not app.selectbox(key="upload_preset").proto.set_value
    assert app.radio(key="upload_strategy").value == "token"


def test_the_default_preset_keeps_its_choice_and_says_it_in_chinese_after_the_switch(store: Store) -> None:
    app = new_session()
    switch_to_chinese(app)
    preset = app.selectbox(key="upload_preset")
    assert preset.value == DEFAULT_PRESET
    assert preset.proto.set_value and preset.proto.raw_value == "Spring AI 320（适配 e5）"
    assert not any("fits e5" in label for label in preset.options)


def headers(app: AppTest, key: str) -> dict[str, str]:
    """Each column of a keyed table and the header the browser shows for it."""
    frame = app.container(key=key).dataframe[0]
    config = json.loads(frame.proto.columns or "{}")
    return {name: (config.get(name) or {}).get("label") or name for name in map(str, frame.value.columns)}


def test_the_librarys_tables_have_chinese_headers_and_the_embedders_whole_name(store: Store) -> None:
    _base_with(store, "hlm", "hongloumeng.txt")
    app = AppTest.from_file(APP, default_timeout=120)
    app.query_params["lang"] = "zh"
    run(app)
    docs, overview = headers(app, "lib_docs"), headers(app, "lib_overview")
    assert docs == {
        "filename": "文件名",
        "pages": "页",
        "chunks": "分块",
        "size": "大小",
        "ingested at": "入库时间",
        "chunk settings": "分块设置",
    }
    assert all(label != name for name, label in overview.items()), overview
    # The embedder by its model's short name (the whole 'local:wordllama-l2_supercat-256' was cut to
    # 'local:wordll…'; 'local:e5' was once shown as 'local'), and whole in its help and the caption below.
    [metric] = [m for m in app.metric if m.label == "嵌入模型"]
    assert metric.value == "WordLlama"
    assert LocalEmbedder.NAME in metric.help
    assert any(LocalEmbedder.NAME in c.value for c in app.caption)
    english = new_session()
    [metric] = [m for m in english.metric if m.label == "Embedder"]
    assert metric.value == "WordLlama" and LocalEmbedder.NAME in metric.help


def test_after_an_ingest_the_library_shows_the_base_just_ingested_into(store: Store) -> None:
    _base_with(store, "a-maths", "analysis.pdf")
    _base_with(store, "b-novel", "hongloumeng.txt")
    app = new_session()
    assert app.selectbox(key="lib_kb").value == "a-maths"  # viewed before the ingest
    upload(app, ("report.pdf", REPORT))
    app.selectbox(key="upload_kb_choice").set_value("b-novel")
    run(app)
    app.button(key="upload_ingest").click()
    run(app)
    assert table(app, "upload_summary")["status"].tolist() == ["stored"]
    assert app.selectbox(key="lib_kb").value == "b-novel"
    assert "report.pdf" in table(app, "lib_docs")["filename"].tolist()

    # Into a new base: that one, once it exists.
    app.selectbox(key="upload_kb_choice").set_value(NEW_KB)
    run(app)
    app.text_input(key="upload_kb_new").set_value("c-reports")
    run(app)
    app.button(key="upload_ingest").click()
    run(app)
    assert app.selectbox(key="lib_kb").value == "c-reports"


def test_the_ingests_status_line_counts_in_chinese_with_a_chinese_comma(store: Store) -> None:
    _base_with(store, "hlm", "hongloumeng.txt")
    app = switch_to_chinese(new_session())
    upload(app, ("hongloumeng.txt", b"hongloumeng.txt"), ("report.pdf", REPORT))
    app.selectbox(key="upload_kb_choice").set_value("hlm")
    run(app)
    app.button(key="upload_ingest").click()
    run(app)
    # (the stored copy was cut with other settings: replaced)
    assert "已入库到“hlm”：已保存 1 个文件，已替换 1 个文件" in [s.label for s in app.status]
