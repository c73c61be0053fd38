"""Numbered sources and the grounded prompt (rag.generate.prompt)."""

from __future__ import annotations

import pytest

from rag import generate
from rag.llms import Message
from tests.generate.samples import SOURCES, hit


def test_sources_are_numbered_with_file_and_pages() -> None:
    assert [s.label for s in SOURCES] == ["[1] report.pdf p. 3", "[2] notes.md pp. 1–2"]
    text = generate.format_sources(SOURCES)
    assert text.index("[1] report.pdf p. 3\nRevenue rose") < text.index("[2] notes.md pp. 1–2\nThe board")


def test_system_prompt_comes_first_then_history_then_question() -> None:
    history = [Message("user", "earlier"), Message("assistant", "reply")]
    messages = generate.build_messages("How much did revenue rise?", SOURCES, history=history)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0].content.startswith(generate.SYSTEM_PROMPT_EN.split("{cite}")[0])
    assert "[1] report.pdf p. 3" in messages[0].content and messages[-1].content == "How much did revenue rise?"


def test_chinese_question_gets_chinese_prompt_and_custom_template_keeps_sources() -> None:
    zh = generate.build_messages("收入增长了多少？", SOURCES)
    assert zh[0].content.startswith("你是一个严谨的助手")
    custom = generate.build_messages("q", SOURCES, system_template="Be brief.")
    assert custom[0].content.startswith("Be brief.") and "[2] notes.md" in custom[0].content


def test_the_defaults_are_recognised_and_an_edited_prompt_is_not() -> None:
    assert generate.is_default_prompt(generate.SYSTEM_PROMPT_EN + "\n")
    assert generate.is_default_prompt(generate.SYSTEM_PROMPT_ZH)
    assert not generate.is_default_prompt("Be brief. {sources}")


@pytest.mark.parametrize("question", ["Who built the lighthouse?", "灯塔是谁建造的？"])
def test_the_citation_example_only_names_numbers_the_sources_have(question: str) -> None:
    one = generate.build_messages(question, SOURCES[:1])
    assert "[1]" in one[0].content and "[2]" not in one[0].content and "{cite}" not in one[0].content
    two = generate.build_messages(
        question, generate.number_sources([hit("a.txt", (1,), "One."), hit("b.txt", (2,), "Two.")])
    )
    joiner = " 或 " if "灯塔" in question else " or "
    assert f"[1]{joiner}[1][2]" in two[0].content and "[3]" not in two[0].content
