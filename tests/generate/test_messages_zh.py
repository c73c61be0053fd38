"""The answer side's messages (rag.generate, rag.llms, rag.embeddings) are `rag.text.Text`: the English as
before, a template the Chinese catalogue has, and the page's `tr()` shows them in Chinese, the values that
are Text themselves (a reason inside an error, the room inside a note) translated too."""

from __future__ import annotations

import uuid

import pytest
from streamlit.testing.v1 import AppTest

from rag.errors import ModelError
from rag.generate import Budget, Packed, Source, engine
from rag.llms.ollama.admin import pull_model
from rag.settings import Settings
from rag.store.records import Hit
from rag.text import Text
from ui.zh import ZH

SCRIPT = """
import uuid
import streamlit as st
from rag.errors import ModelError
from rag.generate import Budget, Packed, Source, engine
from rag.llms.ollama.admin import pull_model
from rag.store.records import Hit
from rag.settings import get_settings
from ui.i18n import tr

turn = engine.start("q", engine.Request(kbs=("fin",)), model=None, store=None, settings=get_settings())
hit = Hit(uuid.uuid4(), "Revenue rose.", {"original_filename": "report.pdf"}, 0.9)
packed = Packed((), (Source(1, hit),), (Source(2, hit), Source(3, hit)), Budget(10, 1200, 0, 5, 512, 4096), 2)
st.write(tr(turn.problem))
for note in packed.notes():
    st.write(tr(note))
try:
    pull_model("http://127.0.0.1:9", "qwen2.5:7b-instruct", lambda *_: None, timeout=2)
except ModelError as exc:
    st.write(tr(exc))
"""


def _packed() -> Packed:
    hit = Hit(uuid.uuid4(), "Revenue rose.", {"original_filename": "report.pdf"}, 0.9)
    return Packed((), (Source(1, hit),), (Source(2, hit), Source(3, hit)), Budget(10, 1200, 0, 5, 512, 4096), 2)


def test_a_problem_a_note_and_an_error_are_texts_whose_templates_have_chinese(settings: Settings) -> None:
    turn = engine.start("q", engine.Request(kbs=("fin",)), model=None, store=None, settings=settings)
    assert turn.problem == "Search failed: the database is not available (see above)."
    notes = _packed().notes()
    assert notes == [
        "Passages 2–3 of the 3 found were left out so that the prompt fits (window 4,096 tokens; "
        "1,200 tokens of sources given).",
        "Left out the 2 oldest exchanges of the conversation so that the prompt fits the model's window.",
    ]
    with pytest.raises(ModelError) as caught:
        pull_model("http://127.0.0.1:9", "qwen2.5:7b-instruct", lambda *_: None, timeout=2)
    error = caught.value.args[0]
    assert str(caught.value) == (
        "Ollama is not reachable at http://127.0.0.1:9 (connection refused): start it with "
        "'ollama serve' or set OLLAMA_HOST"
    )
    for text in (turn.problem, *notes, error, error.values["reason"], notes[0].values["room"]):
        assert isinstance(text, Text) and text.template in ZH, text


def test_tr_shows_them_in_chinese_with_their_inner_texts_translated() -> None:
    at = AppTest.from_string(SCRIPT, default_timeout=120)
    at.run()
    assert at.markdown[0].value == "Search failed: the database is not available (see above)."
    at.query_params["lang"] = "zh"
    at.run()
    assert [m.value for m in at.markdown] == [
        "检索失败：数据库不可用（见上方）。",
        "找到的 3 段中，第 2–3 段未放入，以使提示放得下（窗口 4,096 个词元；已提供 1,200 个词元的来源）。",
        "省略了对话中最早的 2 轮，使提示能放进模型的窗口。",
        "无法连接 http://127.0.0.1:9 上的 Ollama（连接被拒绝）：请用 'ollama serve' 启动它，或设置 OLLAMA_HOST",
    ]
