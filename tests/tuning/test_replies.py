"""Reading the model's two lines, however it decorates them."""

from __future__ import annotations

import pytest

from rag.tuning.replies import (
    Reply,
    answer_candidates,
    answer_messages,
    asks,
    bare_question,
    needs_retry,
    parse_answer,
    parse_reply,
    question_messages,
    reply_complete,
    sentence_messages,
    statement_of,
)


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
        # No label on the question (Qwen2.5-Coder-1.5B, once in 39 Chinese passages).
        ("马来穿山甲的尾巴上有多少个鳞片？\n答：30", Reply("马来穿山甲的尾巴上有多少个鳞片？", "30")),
        ("Here is one.\nWho built it?\n\nA: Mara Quill", Reply("Who built it?", "Mara Quill")),
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
        "Who built it?\nA:",
        "It was built in 1868.\nA: Mara Quill",
        "高英是北魏宣武帝元恪的第二任皇后。",  # Qwen2.5-Coder-1.5B's reply to a zh_cmrc_trial passage
        # A statement on the question's line (kept as a question in the tune bench's 80 Chinese passages).
        "问：耶利米是《圣经》中犹大国灭国前，最黑暗时的一位先知。\n答：圣经",
        "Q: The bridge was built in 1868.\nA: 1868",
    ],
)
def test_a_reply_without_both_lines_is_none(text: str) -> None:
    assert parse_reply(text) is None


@pytest.mark.parametrize(
    "question",
    ["桃溪大桥横跨哪条江", "林黛玉的父亲是谁", "What year was it built", "Name the river it crosses", "它建于哪一年？"],
)
def test_a_question_without_its_mark_still_asks(question: str) -> None:
    assert asks(question) and parse_reply(f"Q: {question}\nA: x") == Reply(question, "x")


def test_a_statement_on_the_question_line_is_asked_about_alone() -> None:
    reply = "问：耶利米是《圣经》中犹大国灭国前，最黑暗时的一位先知。\n答：圣经"
    assert needs_retry(reply) and statement_of(reply) == "耶利米是《圣经》中犹大国灭国前，最黑暗时的一位先知。"
    assert statement_of("答：圣经\n“The bridge was built in 1868.”") == "The bridge was built in 1868."
    assert statement_of("\n答：圣经\n") is None
    [message] = sentence_messages("It stands on a headland.", "en")
    assert message.role == "user" and message.content.endswith("Sentence:\nIt stands on a headland.")


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


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("莎莉公司总部设于哪里？", "莎莉公司总部设于哪里？"),
        ("问：威廉·狄尔泰的哲学中心问题是什么？\n", "威廉·狄尔泰的哲学中心问题是什么？"),
        ("Q: Who built the Garrow lighthouse?", "Who built the Garrow lighthouse?"),
        ("四加亭位于马来西亚柔佛州峇株巴辖县的小镇之一。", None),  # a statement
        ("Q: Who built it?\nA: Mara Quill", None),  # answered: parse_reply reads it
        ("问：谁建的？\n答：", None),  # an answer line, left empty
        ("", None),
    ],
)
def test_a_bare_question_is_told_from_a_statement_and_an_answered_one(text: str, question: str | None) -> None:
    assert bare_question(text) == question


def test_the_answer_asked_for_alone_is_its_first_line_without_a_label() -> None:
    [message] = answer_messages("白沙灯塔由工程师李明远于1868年建造。", "白沙灯塔是谁建造的？", "zh")
    assert message.content.startswith("段落：\n白沙灯塔") and "问题：白沙灯塔是谁建造的？" in message.content
    [english] = answer_messages("The Arden lighthouse.", "Where is it?", "en")
    assert "Question: Where is it?" in english.content
    assert parse_answer("\n答：李明远\n其余") == "李明远"
    assert parse_answer("A: Mara Quill") == "Mara Quill"
    assert parse_answer("  \n") is None
