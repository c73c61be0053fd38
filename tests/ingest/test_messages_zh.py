"""The messages the Upload page shows from rag.documents, rag.ingest and rag.chunking reach it as
`rag.text.Text` (English as before, with its template) and ui.i18n.tr shows them in Chinese."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from rag import chunking, ingest
from rag.documents import load_bytes
from rag.errors import DocumentError
from rag.text import Text
from tests.docgen import make_pdf
from ui.zh import ZH


def test_the_librarys_messages_are_texts_whose_templates_have_their_chinese() -> None:
    with pytest.raises(DocumentError) as caught:
        load_bytes(b"", "empty.pdf")
    reason = ingest.failure_reason(caught.value)
    assert reason == "empty file (0 bytes)" and isinstance(reason, Text) and reason.template in ZH
    [warning] = ingest.warnings(ingest.prepare(make_pdf(["Text. " * 20, ""]), "one.pdf", chunking.SPRING_DEFAULT), None)
    assert isinstance(warning, Text) and warning.template in ZH
    summary = chunking.summary(chunking.SPRING_DEFAULT)
    assert isinstance(summary, Text) and summary.template in ZH and summary.values["preset"].template in ZH


def test_they_are_shown_in_chinese() -> None:
    script = """
import streamlit as st
from rag import chunking, ingest
from rag.documents import load_bytes
from rag.errors import DocumentError
from tests.docgen import make_pdf
from ui.i18n import tr

try:
    load_bytes(b"", "empty.pdf")
except DocumentError as exc:
    st.write(tr(exc))
    st.write(tr(ingest.failure_reason(exc)))
prepared = ingest.prepare(make_pdf(["Text. " * 20, ""]), "one.pdf", chunking.SPRING_DEFAULT)
for warning in ingest.warnings(prepared, None):
    st.write(tr(warning))
st.write(tr(ingest.unreadable_advice("Thesis.doc")))
st.write(tr(chunking.summary(chunking.SPRING_DEFAULT)))
st.write(tr(ingest.IngestResult("a.txt", "stored", 3, 1).line()))
"""
    at = AppTest.from_string(script, default_timeout=120)
    at.run()
    english = [m.value for m in at.markdown]
    assert english[:2] == ["empty.pdf: empty file (0 bytes)", "empty file (0 bytes)"]
    at.query_params["lang"] = "zh"
    at.run()
    assert [m.value for m in at.markdown] == [
        "empty.pdf：空文件（0 字节）",
        "空文件（0 字节）",
        "第 2 页没有可提取的文字：那里的内容都无法检索。",
        "不读取 .doc 文件：请在 Word 中打开，另存为 .docx（文件 › 另存为）后上传。",
        "Spring AI 默认（Spring AI 分块器，800 个词元，在 350 个字符之后的分隔符处切分）",
        "a.txt：已保存（1 页，3 个分块）",
    ]
