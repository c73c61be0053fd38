"""The UI's two languages: every message id of a translated page has its Chinese with the same
placeholders, no Chinese is left unused, and the Chat page run in Chinese shows no English phrase of
its own (what the model wrote, file and model names, code and the library's messages aside)."""

from __future__ import annotations

import re
import string

import pytest
from pytest_httpserver import HTTPServer
from streamlit.testing.v1 import AppTest

from rag.agent import routes
from rag.store import Store
from tests.conftest import ROOT
from tests.pages.test_page_chat import (  # noqa: F401 - kb and ollama are fixtures
    FINAL,
    PAGE,
    chunk,
    expect_chat,
    expect_show,
    kb,
    ollama,
    run,
    turns,
)
from ui import i18n
from ui.zh import ZH

TRANSLATED = (
    "app.py",
    "pages/chat.py",
    "pages/upload.py",
    "pages/chunk-lab.py",
    "pages/tools.py",
    "pages/gpu.py",
    "ui/widgets.py",
    "ui/gate.py",
    "ui/i18n.py",
)
"""The files whose words are all in the catalogue (the other pages are English for now)."""
DYNAMIC = (
    # passed to _() through a name, not a literal
    "Vector",
    "Keyword",
    "Hybrid",
    "chosen by you",
    "small talk: no tools needed",
    "the default route",
    "Database",
    "Model server",
    "Embedder",
    "GPU",  # the Status checks' names (rag.status)
    "1 min",  # the GPU page's windows (pages/gpu.WINDOWS, shown through format_func)
    "2 min",
    "5 min",
    "10 min",
    "from Ollama",  # how the chat page knows a model's window
    # the Upload page's ingest stages, results and page units (rag.ingest, rag.documents)
    "parse",
    "chunk",
    "embed",
    "store",
    "stored",
    "replaced",
    "unchanged",
    "failed",
    "page",
    "slide",
    "sheet",
    "section",
    "table",
    "Slide",
    "Sheet",
    "Section",
    "Table",
    "Text",
    "text",  # what read a TXT/MD file (rag.documents.READERS)
    "On the page",
    "Chunk sizes",  # the Chunk Lab's views
    "New knowledge base…",  # the Upload page's last knowledge-base option
    "ok",
    "error",
    "invalid",
    "refused",
    "not allowed",  # an agent step's status (rag.agent.loop.Step)
)


def used_ids() -> set[str]:
    ids = {m for f in TRANSLATED for m in i18n.message_ids(str(ROOT / f))}
    ids |= {t for path in sorted((ROOT / "rag").rglob("*.py")) for t in text_templates(path)}  # rag.text.Text
    ids |= set(i18n.COLUMNS)  # the tables' column labels
    ids |= set(i18n.PLOTLY_WORDS)  # Plotly's toolbar (i18n.chart_config)
    from rag import chunking
    from rag.generate import kb_tools
    from rag.gpu import nvml

    chunk_words = {
        chunking.CUSTOM,
        *chunking.PRESETS,
        *chunking.PRESET_HELP.values(),
        *chunking.STRATEGY_LABELS.values(),
    }
    chunk_words |= {f.label for f in chunking.FIELDS} | {f.help for f in chunking.FIELDS}  # the settings widget
    return (
        ids
        | set(DYNAMIC)
        | chunk_words
        | {constant("pages/chat.py", "BADGE_LEGEND"), constant("pages/upload.py", "LEGEND")}
        | {constant("pages/gpu.py", "DEFAULT_PROMPT")}
        | set(nvml.NVML_MESSAGES)  # NVML's own words, shown translated
        | {kb_tools.tool_description(name) for name in kb_tools.EVERY_TOOL}  # the Tools page's descriptions
    )


def text_templates(path) -> list[str]:
    """The templates a library module makes `Text` of (their literal first arguments)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        n.args[0].value
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "Text"
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and isinstance(n.args[0].value, str)
    ]


def constant(path: str, name: str) -> str:
    """A page's string constant that it shows through _() (read without running the page)."""
    import ast

    for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is gone from {path}")


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_message_has_its_chinese_with_the_same_placeholders_and_none_is_stale() -> None:
    ids = used_ids()
    missing = sorted(ids - set(ZH))
    assert not missing, f"no Chinese for: {missing}"
    stale = sorted(set(ZH) - ids)
    assert not stale, f"Chinese for messages no page shows: {stale}"
    for message in ids:
        if "{" in message and message.startswith("`{sources}`"):
            continue  # shown as is: the braces are the prompt's placeholder, not ours
        assert placeholders(message) == placeholders(ZH[message]), message
    assert {routes.pick_route(q, routes.DEFAULT_ROUTES).reason for q in ("Hi", "When?")} <= set(ZH)


def test_counted_things_and_the_language_choice() -> None:
    at = AppTest.from_string(
        "from ui.i18n import _, count, language, size\nimport streamlit as st\n"
        "st.write(language(), _('Stop'), count(3, 'turn'), count(1, 'turn'), size(688), size(2_621_440))"
    )
    at.run()
    assert at.markdown[0].value == "en Stop 3 turns 1 turn 688 bytes 2.6 MB"
    at.query_params["lang"] = "zh"
    at.run()
    assert at.markdown[0].value == "zh 停止 3 轮 1 轮 688 字节 2.6 MB"


_CODE = re.compile(r"`[^`]*`|https?://\S+|\*\*|\\|:[a-z]+-badge\[")
_PHRASE = re.compile(r"\b[A-Za-z]{3,}(?:[ '-]+[A-Za-z]{2,})+\b")


def english_phrases(texts: list[str], allowed: list[str]) -> list[str]:
    found = []
    for text in texts:
        cleaned = text
        for known in sorted(allowed, key=len, reverse=True):
            cleaned = cleaned.replace(known, " ")
        cleaned = _CODE.sub(" ", cleaned)
        found += [f"{m.group(0)!r} in {text[:80]!r}" for m in _PHRASE.finditer(cleaned)]
        # Chinese sets no space after its full stop (a walk saw "TXT 和 Markdown。 扫描页…": two messages joined).
        found += [f"{m.group(0)!r} in {text[:80]!r}" for m in re.finditer("。 +[\u4e00-\u9fff]", text)]
    return found


def shown_texts(at: AppTest) -> list[str]:
    texts: list[str] = []
    for kind in ("title", "caption", "markdown", "info", "warning", "error", "success"):
        texts += [str(e.value) for e in getattr(at, kind)]
    texts += [e.label for e in at.expander]
    for kind in (
        "button",
        "toggle",
        "selectbox",
        "multiselect",
        "slider",
        "number_input",
        "text_input",
        "text_area",
        "radio",
        "checkbox",
    ):
        for widget in getattr(at, kind):
            texts.append(widget.label)
            help_text = getattr(widget, "help", None)
            if help_text:
                texts.append(str(help_text))
    return texts


def test_the_chat_page_in_chinese_shows_no_english_of_its_own(kb: Store, ollama: HTTPServer) -> None:  # noqa: F811
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("营收增长了百分之十一 [1]。"), FINAL)
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["lang"] = "zh"
    run(at)
    assert at.title[0].value == "💬 对话"
    at.chat_input(key="chat_input").set_value("营收增长了多少？")
    run(at)
    (turn,) = turns(at)
    from rag.agent import agent_available
    from ui.format import md, md_lines

    allowed = [turn.model, turn.model.removeprefix("ollama:"), "report.pdf", turn.answer]
    for source in turn.sources:  # (their ranking and location are the page's words: "hybrid #1", "p. 1")
        for text in (source.hit.content, source.passage):
            allowed += [md(text), md_lines(text), text]
    # The library's own words are English for now (the note says so): its notes, and why a
    # model cannot run agent mode (the toggle's help).
    allowed += list(turn.notes) + [agent_available(turn.model)[1]]
    allowed += ["Spring AI", "deepseek-r1", "qwen3", "Ollama", "original_filename"]
    found = english_phrases(shown_texts(at), allowed)
    assert found == [], "\n".join(found)
    assert any(e.label.startswith("📚 ") and "个来源" in e.label for e in at.expander)
    assert any(c.value.startswith("系统 ") for c in at.caption)  # the budget, in Chinese
    # A source card names its page and search ranks in Chinese: "[1] report.pdf 第 2 页 · 混合 #1 · 向量 #1 (0.02)
    # · 关键词：未找到", not "p. 2 · hybrid #1 · vector #1 (0.02) · keyword: not found".
    cards = [e.label for e in at.expander if "report.pdf" in e.label]
    assert cards and all(re.search(r"report\.pdf 第 \d+(–\d+)? 页 · 混合 \\#\d · 向量 \\#\d", c) for c in cards), cards
    assert not any(word in c for c in cards for word in ("p. ", "hybrid", "vector", "keyword", "not found")), cards
    (button,) = [b.label for b in at.button if b.label.startswith("[1] ")]
    assert re.fullmatch(r"\[1\] report\.pdf 第 \d+ 页", button), button


@pytest.mark.parametrize("lang, expected", [("en", "Status"), ("zh", "状态")])
def test_the_sidebar_and_navigation_follow_the_language(lang: str, expected: str, store: Store) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params["lang"] = lang
    at.run()
    assert any(m.value == f"### {expected}" for m in at.sidebar.markdown)
    lines = [m.value for m in at.sidebar.markdown]
    if lang == "zh":  # the status lines, rag.status's Text, in Chinese too
        assert any(line.startswith("🟢 **数据库**: PostgreSQL ") and "内置" in line for line in lines), lines
        assert any(line.startswith("🟠 **模型服务**: 无法连接 Ollama") for line in lines), lines


def test_a_language_named_by_the_url_stays_after_a_click_in_the_sidebar(store: Store) -> None:
    """Opened with `?lang=zh` and never switched: Streamlit's navigation drops the query parameters, and the
    next page fell back to the browser's language (English here)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params["lang"] = "zh"
    at.run()
    assert any(m.value == "### 状态" for m in at.sidebar.markdown)
    at.query_params.clear()  # what a click on a page of the sidebar does to the URL
    at.switch_page("pages/upload.py")
    at.run()
    assert [t.value for t in at.title] == ["📄 上传与预览"]  # "📄 Upload & preview" before


def test_the_upload_page_in_chinese_shows_no_english_of_its_own(store: Store) -> None:
    """A PDF and a scan previewed in Chinese; the chunk settings' own words (rag.chunking.FIELDS),
    the status lines and the library's warnings are English for now (the issue's note says so)."""
    from rag import chunking
    from rag.documents import READ_TYPES, ocr
    from tests.docgen import make_pdf, make_scan_pdf
    from tests.pages.test_page_upload import upload

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params["lang"] = "zh"
    run(at)
    assert at.title[0].value == "📄 上传与预览"
    upload(
        at,
        ("report.pdf", make_pdf(["Quarterly report. Revenue rose eleven percent.", "Page two."])),
        ("scan.pdf", make_scan_pdf(["Harbour log: the keeper lit the lamp."])),
    )
    allowed = [
        READ_TYPES,
        ocr.ENABLE_HINT,
        ocr.engine_name(),
        "report.pdf",
        "scan.pdf",
        "Spring AI",
        "Excel",
        "JSONL",
        "Markdown",
        "python -m rag sync",
        "Spring AI",
        "spring-exact",
        "TokenTextSplitter",
    ]
    from rag.documents import load_bytes

    allowed += [load_bytes(make_scan_pdf(["Harbour log: the keeper lit the lamp."]), "scan.pdf").reader]
    allowed += [chunking.summary(s) for s in chunking.PRESETS.values()]  # rag.chunking's summary line
    for page in at.session_state["_upload_files"].values() if "_upload_files" in at.session_state else ():
        allowed.append(page)
    texts = [t for t in shown_texts(at) if not t.startswith(("Quarterly report", "Page two", "Harbour log"))]
    found = english_phrases(texts, allowed)
    assert found == [], "\n".join(found)
    assert any(m.value == "#### 预览" for m in at.markdown)


def test_the_upload_pages_tables_and_statuses_are_in_chinese(store: Store) -> None:
    """The overview's and the summary's cells were English in Chinese ("text", "1 warning", "new", "stored"),
    and a page's chunks read as a count ("Chunks on this page: 0")."""
    from tests.docgen import make_pdf
    from tests.pages.test_page_upload import table, upload

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params["lang"] = "zh"
    run(at)
    notes = ("The depot opens at six. " * 20 + "\f").encode()  # a form feed at the end: no blank page
    upload(at, ("notes.txt", notes), ("report.pdf", make_pdf(["Quarterly report. Revenue rose eleven percent.", ""])))
    at.text_input(key="upload_kb_new").set_value("finance")
    run(at)
    overview = table(at, "upload_overview")
    assert overview[["file", "read by", "check", "on ingest"]].values.tolist() == [
        ["notes.txt", "纯文本", "✅ 正常", "新增"],
        ["report.pdf", "MuPDF", "⚠️ 1 个警告", "新增"],
    ]
    captions = [c.value for c in at.caption]
    assert any(c.startswith("本页上的分块：#0。交替") for c in captions), captions
    assert not any("Chunks on this page" in c for c in captions)
    at.button(key="upload_ingest").click()
    run(at)
    assert table(at, "upload_summary")["status"].tolist() == ["已保存", "已保存"]


def test_the_tools_page_in_chinese_shows_no_english_of_its_own(store: Store, tmp_path, monkeypatch) -> None:
    from rag.agent import mcp_client

    monkeypatch.setenv(mcp_client.CONFIG_ENV, str(tmp_path / "absent.json"))
    monkeypatch.chdir(tmp_path)
    at = AppTest.from_file(str(ROOT / "pages/tools.py"), default_timeout=240)
    at.query_params["lang"] = "zh"
    run(at)
    assert at.title[0].value == "🛠️ 工具"
    # The tools' descriptions, English for the models that read them, are shown translated (a walk saw them English).
    found = english_phrases(shown_texts(at), ["Claude Desktop"])
    assert found == [], "\n".join(found)
    assert any("在知识库中检索与查询最接近的段落" in t for t in shown_texts(at)) or any(
        "列出可以检索的知识库" in t for t in shown_texts(at)
    ), shown_texts(at)
    # So are the default routes' purposes, and a route without tools (the same walk saw them English).
    from tests.pages.test_page_upload import table

    shown_routes = table(at, "tools_routes")
    assert shown_routes["what for"].tolist()[0] == "问候、致谢和闲聊：不用工具直接回答", shown_routes
    assert shown_routes["tools"].tolist()[0] == "无", shown_routes


def test_the_chunk_lab_in_chinese_shows_no_english_of_its_own(store: Store) -> None:

    at = AppTest.from_file(str(ROOT / "pages/chunk-lab.py"), default_timeout=240)
    at.query_params["lang"] = "zh"
    run(at)
    assert at.title[0].value == "🧩 分块实验室"
    allowed = ["Northwind", "Spring AI", "TokenTextSplitter", "spring-exact", "hit@k", "MRR", "BM25", "CSV"]
    found = english_phrases(shown_texts(at), allowed)
    assert found == [], "\n".join(found)


def test_a_library_error_is_shown_in_chinese_with_its_values_translated_too() -> None:
    script = (
        "from rag.errors import DocumentError\nfrom rag.text import Text\n"
        "from ui.i18n import tr\nimport streamlit as st\n"
        "exc = DocumentError('a.pdf', Text('{filename}: {reason}', filename='inner', reason='x'))\n"
        "st.write(tr(exc))\nst.write(tr(str(exc)))"
    )
    at = AppTest.from_string(script)
    at.query_params["lang"] = "zh"
    at.run()
    # The exception keeps its template (str(exc) would not: it is the English line), and a Text value
    # inside is translated by its own template.
    assert [m.value for m in at.markdown] == ["a.pdf：inner：x", "a.pdf: inner: x"]


def test_the_gpu_page_in_chinese_shows_no_english_of_its_own() -> None:
    """Without an NVIDIA GPU (this machine) the page says why, in Chinese, and shows CPU and RAM."""
    at = AppTest.from_file(str(ROOT / "pages/gpu.py"), default_timeout=240)
    at.query_params["lang"] = "zh"
    run(at)
    assert at.title[0].value.endswith("GPU 监控")
    allowed = ["NVIDIA", "NVML", "CUDA", "Ollama", "VRAM", "CPU", "RAM", "keep_alive", "GiB", "ollama serve"]
    allowed += [e.value.split("“", 1)[1].split("”", 1)[0] for e in at.info if "“" in e.value]  # NVML's own words
    found = english_phrases(shown_texts(at), allowed)
    assert found == [], "\n".join(found)


def test_table_columns_are_labelled_in_chinese_and_keep_their_data_keys() -> None:
    script = (
        "import pandas as pd, streamlit as st\nfrom ui.i18n import columns\n"
        "frame = pd.DataFrame({'file': ['a.pdf'], 'chunks': [3], 'score': [0.5]})\n"
        "config = columns(frame, {'chunks': st.column_config.NumberColumn(format='%d')})\n"
        "st.write({k: (v or {}).get('label') for k, v in config.items()})\n"
        "st.write(sorted(config), list(frame.columns))"
    )
    at = AppTest.from_string(script)
    at.query_params["lang"] = "zh"
    at.run()
    import json

    assert json.loads(at.json[0].value) == {"chunks": "分块", "file": "文件"}  # 'score' is not a page's column
    assert [json.loads(j.value) for j in at.json[1:3]] == [["chunks", "file"], ["file", "chunks", "score"]]
    at.query_params["lang"] = "en"
    at.run()
    assert json.loads(at.json[0].value) == {"chunks": None}  # English: the page's own config, untouched


def test_a_chunks_location_is_said_in_chinese_and_a_heading_or_sheet_name_kept() -> None:
    """rag.documents writes a chunk's place in English ('p. 4', 'lines 7–9', 'slide 3'): the Chinese UI says
    '第 4 页', '第 7–9 行', '第 3 张幻灯片'; a heading, a sheet's name, and a heading that only looks like a unit
    stay as they are."""
    script = (
        "import json, uuid\nimport streamlit as st\nfrom rag.store import Hit\nfrom ui import i18n\n"
        "def hit(name, **meta):\n"
        "    return Hit(uuid.uuid4(), 'x', {'original_filename': name, **meta}, 0.5, fused_rank=2, keyword_rank=1,"
        " keyword_score=7.44)\n"
        "hits = [hit('a.pdf', pages=[4]), hit('a.pdf', pages=[4, 5]), hit('r.txt', location='第二回 · lines 120–164'),"
        " hit('g.md', location='line 7'), hit('d.pptx', location='slide 3'), hit('b.xlsx', location='sheet Sales'),"
        " hit('w.docx', location='sheet metal · lines 2–3'), hit('w.docx', location='Report › Results')]\n"
        "st.json([i18n.location(h) for h in hits])\n"
        "st.json([i18n.ranking(hits[0]), i18n.ranking(Hit(uuid.uuid4(), 'x', {}, 0.25)),"
        " i18n.ranking(Hit(uuid.uuid4(), 'x', {}, 0.7, vector_rank=1, vector_score=0.7, found_by='rewrite')),"
        " i18n.ranking(Hit(uuid.uuid4(), 'x', {}, 0.7, fused_rank=3, keyword_rank=2, keyword_score=7.0,"
        " found_by='question')),"
        " i18n.ranking(Hit(uuid.uuid4(), 'x', {}, 0.7, vector_rank=2, vector_score=0.6, found_by='with previous'))])\n"
        "from rag.store import Copy\n"
        "st.json([i18n.copy_place(Copy('b.pdf', (8, 9))), i18n.copy_place(Copy('d.pptx', (3,), 'slide 3')),"
        " i18n.copy_place(Copy('n.txt'))])\n"
    )
    at = AppTest.from_string(script)
    at.query_params["lang"] = "zh"
    at.run()
    import json

    assert json.loads(at.json[0].value) == [
        "第 4 页",
        "第 4–5 页",
        "第二回 · 第 120–164 行",
        "第 7 行",
        "第 3 张幻灯片",
        "工作表 Sales",
        "sheet metal · lines 2–3",
        "Report › Results",
    ]
    assert json.loads(at.json[1].value) == [
        "混合 #2 · 向量：未找到 · 关键词 #1 (BM25 7.4)",
        "得分 0.250",
        "改写检索：向量 #1 (0.70)",  # which of a follow-up's two searches ranked it
        "原问题检索：混合 #3 · 向量：未找到 · 关键词 #2 (BM25 7.0)",
        "连同上一问检索：向量 #2 (0.60)",  # a refused rewrite: the question searched after the one before it
    ]
    # A copy of a source's passage is placed as a source is (rag.retrieve.copies).
    assert json.loads(at.json[2].value) == ["b.pdf 第 8–9 页", "d.pptx 第 3 张幻灯片", "n.txt"]
    at.query_params["lang"] = "en"
    at.run()
    locations = json.loads(at.json[0].value)
    assert locations[:5] == ["p. 4", "pp. 4–5", "第二回 · lines 120–164", "line 7", "slide 3"]
    # English: word for word what the library says (the CLI and the MCP tools show Hit.ranking).
    assert json.loads(at.json[1].value) == [
        "hybrid #2 · vector: not found · keyword #1 (BM25 7.4)",
        "score 0.250",
        "rewrite: vector #1 (0.70)",
        "question: hybrid #3 · vector: not found · keyword #2 (BM25 7.0)",
        "with previous: vector #2 (0.60)",
    ]
    assert json.loads(at.json[2].value) == ["b.pdf pp. 8–9", "d.pptx slide 3", "n.txt"]


def test_counts_are_grouped_by_thousands_in_both_languages(monkeypatch) -> None:
    """'The vector index of 'big' (10001 chunks)' beside '1,442 of 4,096 tokens' (a walk saw both)."""
    from ui import i18n

    monkeypatch.setattr(i18n, "language", lambda: "en")
    assert (i18n.count(10_001, "chunk"), i18n.count(1, "chunk"), i18n.count(999, "page")) == (
        "10,001 chunks",
        "1 chunk",
        "999 pages",
    )
    monkeypatch.setattr(i18n, "language", lambda: "zh")
    assert i18n.count(10_001, "chunk") == "10,001 个分块"


def test_an_exported_conversation_is_written_in_the_users_language(monkeypatch) -> None:
    """A walk: the Chinese UI's Markdown export said "# Conversation", "**Sources**", "Searched for: …" and "score
    1.000" for every first source (the fused score), where the page shows each search's rank and score."""
    import dataclasses

    from rag import generate
    from rag.generate import Turn
    from tests.generate.samples import SOURCES

    ranked = dataclasses.replace(
        SOURCES[0], hit=dataclasses.replace(SOURCES[0].hit, fused_rank=1, vector_rank=1, vector_score=0.62)
    )
    turn = Turn(id="t", question="他是谁？", query="李明是谁？", answer="创始人[1]。", sources=(ranked,), model="m")
    monkeypatch.setattr(i18n, "language", lambda: "zh")
    text = generate.export_markdown([turn], say=i18n.tr, source_line=i18n.export_source)
    assert text.startswith("# 对话\n\n模型：m\n") and "**来源**" in text and "*检索语句：李明是谁？ 以及原问题*" in text
    assert f"（混合 #1 · 向量 #1 (0.62) · 关键词：未找到，分块 {ranked.hit.id}）" in text
    monkeypatch.setattr(i18n, "language", lambda: "en")
    english = generate.export_markdown([turn], say=i18n.tr, source_line=i18n.export_source)
    assert english == generate.export_markdown([turn])  # the library's own English, word for word
    miscited = dataclasses.replace(turn, answer="Revenue rose eleven percent [2].", sources=tuple(SOURCES))
    monkeypatch.setattr(i18n, "language", lambda: "zh")
    text = generate.export_markdown([miscited], say=i18n.tr, source_line=i18n.export_source)
    assert "*⚠️ 1 句中有 1 句引用的来源并不包含它，包含它的是 [1]*" in text
    assert f"(hybrid #1 · vector #1 (0.62) · keyword: not found, chunk {ranked.hit.id})" in english


def test_nvmls_own_words_are_shown_in_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Chinese sidebar said "没有找到 NVIDIA GPU（NVML: NVML Shared Library Not Found）" on every machine
    without an NVIDIA driver; the GPU page's chart kept "RAM used"."""
    from rag import status

    check = status.gpu_check(status.GpuPresence(False, (), status._nvml_error(Exception("Driver Not Loaded"))))
    monkeypatch.setattr(i18n, "language", lambda: "zh")
    assert i18n.tr(check.summary) == "没有找到 NVIDIA GPU（NVML：驱动未加载）"
    assert i18n.tr(status._nvml_error(Exception("Some {new} error"))) == "NVML：Some {new} error"  # as NVML says it
    monkeypatch.setattr(i18n, "language", lambda: "en")
    assert i18n.tr(check.summary) == "no NVIDIA GPU found (NVML: Driver Not Loaded)"
