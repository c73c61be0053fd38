"""Reading the model's two lines, however it decorates them."""

from __future__ import annotations

import pytest

from rag.tuning.replies import Reply, answer_candidates, parse_reply, question_messages, reply_complete


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Q: Who built it?\nA: Mara Quill", Reply("Who built it?", "Mara Quill")),
        ("**Q:** Who built it?\n**A:** Mara Quill\n", Reply("Who built it?", "Mara Quill")),
        ("Question 1: Who built it?\n\nAnswer 1: Mara Quill", Reply("Who built it?", "Mara Quill")),
        ("Sure! Here it is.\nQ：Who built it?\nA：Mara Quill", Reply("Who built it?", "Mara Quill")),
        ("Q:\nWho built it?\nA:\nMara Quill", Reply("Who built it?", "Mara Quill")),
        ("问：谁建造了白沙灯塔？\n答：李明远", Reply("谁建造了白沙灯塔？", "李明远")),
        ("问题：谁建造了白沙灯塔？\n答案：“李明远”。", Reply("谁建造了白沙灯塔？", "“李明远”。")),
        ("Q: first?\nA: one\nQ: second?\nA: two", Reply("first?", "one")),
        ("问：谁建造了白沙灯塔？答：李明远", Reply("谁建造了白沙灯塔？", "李明远")),
        ("**问题：** 谁建造了白沙灯塔？\n**答案：** 李明远", Reply("谁建造了白沙灯塔？", "李明远")),
        ("问题：谁建造了白沙灯塔？\n答案：\n李明远", Reply("谁建造了白沙灯塔？", "李明远")),
        ("提问：谁建造了白沙灯塔？\n回答：李明远", Reply("谁建造了白沙灯塔？", "李明远")),
        ("Question: Who built it? Answer: Mara Quill", Reply("Who built it?", "Mara Quill")),
        ("Q: Who built it?\n\n**Answer:** Mara Quill", Reply("Who built it?", "Mara Quill")),
    ],
)
def test_a_reply_is_read_leniently(text: str, expected: Reply) -> None:
    assert parse_reply(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Who built it?",
        "Q: Who built it?",
        "A: Mara Quill\nQ: Who built it?",
        "Q: \nA: x",
        "Q: Who built it? A:",
        "高英是北魏宣武帝元恪的第二任皇后。",  # Qwen2.5-Coder-1.5B's reply to a zh_cmrc_trial passage
    ],
)
def test_a_reply_without_both_lines_is_none(text: str) -> None:
    assert parse_reply(text) is None


def test_the_answer_is_tried_as_written_then_without_quotes_and_its_full_stop() -> None:
    assert answer_candidates('"Mara Quill."') == ['"Mara Quill."', "Mara Quill.", "Mara Quill"]
    assert answer_candidates("“李明远”。") == ["“李明远”。", "李明远”。", "李明远"]
    assert answer_candidates("1801") == ["1801"]


def test_a_reply_is_complete_once_its_answer_line_has_ended() -> None:
    assert not reply_complete("Q: Who built it?\nA: Mara Qu")
    assert not reply_complete("Q: Who built it?\nA: Mara Quill")
    assert reply_complete("Q: Who built it?\nA: Mara Quill\n")


def test_the_prompt_is_in_the_passages_language_and_holds_it() -> None:
    [english] = question_messages("The Arden lighthouse.", "en")
    [chinese] = question_messages("白沙灯塔。", "zh")
    assert english.role == "user" and "Q: <the question>" in english.content
    assert english.content.endswith("Passage:\nThe Arden lighthouse.")
    assert "问：<问题>" in chinese.content and chinese.content.endswith("段落：\n白沙灯塔。")


def test_the_prompt_shows_one_example_in_the_two_line_format_with_a_short_verbatim_answer() -> None:
    for language, example, answer in (("en", "Passage:\n", "A: the River Tweed\n"), ("zh", "段落：\n", "答：青衣江\n")):
        [message] = question_messages("x", language)
        shown = message.content.split(example, 1)[0]  # the real passage begins after the only such label
        assert message.content.count(example) == 1 and answer in shown
        reply = parse_reply("\n".join(shown.strip().splitlines()[-2:]))  # the example's two lines
        assert reply is not None and reply.answer in shown.replace(answer, "")  # copied from its passage
