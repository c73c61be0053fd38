"""An answer read for what its question asks about (rag.generate.asked): a sentence its source holds is not green
when it leaves that out. The conversation bench's green-but-wrong answers were such sentences."""

from __future__ import annotations

import pytest

from rag import generate
from rag.evaluation.sets import eval_set
from rag.generate.asked import ASKED_SHARE, asked_share, misses_question
from tests.generate.samples import hit

LAKE = next(p.text for p in eval_set("zh_cmrc_trial").passages if p.key == "TRIAL_839")
"""A public passage (zh_cmrc_trial) the conversation bench asks about: 赛里木湖's old name, depth, fame."""

STATION = (
    "The station opened in 1854 on the line from Bristol. Its iron roof was designed by Owen Jones, who also "
    "decorated the booking hall. The station closed in 1966 when the branch line lost its trains. The station "
    "building is now a museum of the railway."
)


def sources(text: str) -> tuple[generate.Source, ...]:
    return tuple(generate.number_sources([hit("lake.txt", (1,), text)]))


@pytest.mark.parametrize(
    ("question", "right", "wrong"),
    [
        # The conversation bench's: a follow-up as asked, its topic a pronoun, what it asks 音译 and 语言.
        (
            "这个名字是哪种语言的音译？",
            "“赛里木”为哈萨克语音译[1]。",
            "赛里木湖古称“净海”，位于中国新疆博尔塔拉州博乐市境内的北天山山脉中，紧邻伊犁州霍城县。[1]",
        ),
        ("赛里木湖古称什么？", "赛里木湖，古称“净海”[1]。", "如今的赛里木湖被誉为“天山的明珠”[1]。"),
        (
            "如今它被誉为什么？",
            "如今的赛里木湖被誉为“天山的明珠”[1]。",
            "赛里木湖属于封闭型的断陷湖，是地壳下沉形成的[1]。",
        ),
        ("赛里木湖为什么又名三台海子？", "又名三台海子，因湖东岸的三台而得名[1]。", "赛里木湖属于封闭型的断陷湖[1]。"),
    ],
)
def test_a_held_sentence_that_leaves_out_what_was_asked_is_not_green(question: str, right: str, wrong: str) -> None:
    numbered = sources(LAKE)
    assert generate.check_grounding(right, numbered, question=question).grounded
    held = generate.check_grounding(wrong, numbered, question=question)
    # Held by [1], but not what was asked (of the subject asked about: not another one).
    assert held.cited == (1,) and held.off_question and not held.other_subject and not held.grounded
    assert generate.check_grounding(wrong, numbered).grounded  # without the question: green, as before


def test_the_topic_weighs_less_than_what_the_question_asks() -> None:
    """赛里木湖 is named in many of the passage's sentences, 古称 in one: an answer naming the lake alone holds
    little of what was asked, one naming 古称 most of it."""
    topic = asked_share("赛里木湖古称什么？", "赛里木湖位于新疆", [LAKE])
    asked = asked_share("赛里木湖古称什么？", "古称“净海”", [LAKE])
    assert topic is not None and asked is not None
    assert topic < ASKED_SHARE < asked


def test_an_english_sentence_about_the_topic_alone_is_not_green() -> None:
    numbered = sources(STATION)
    asked = "Who designed the station's roof?"
    assert generate.check_grounding("Its iron roof was designed by Owen Jones [1].", numbered, question=asked).grounded
    held = generate.check_grounding(
        "The station opened in 1854 on the line from Bristol [1].", numbered, question=asked
    )
    assert held.off_question and not held.grounded


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("", "赛里木湖平均水深46.4米[1]。"),  # no question: nothing to read it with
        ("那为什么？", "赛里木湖平均水深46.4米[1]。"),  # nothing of the question in the sources
        ("赛里木湖古称什么？", "净海 [1]"),  # a bare answer: read as its claim (rag.generate.fragments)
    ],
)
def test_what_cannot_be_judged_is_left_as_it_was(question: str, answer: str) -> None:
    numbered = sources(LAKE)
    grounding = generate.check_grounding(answer, numbered, question=question)
    assert not grounding.off_question
    assert grounding.grounded == generate.check_grounding(answer, numbered).grounded


def test_words_of_the_question_the_sources_do_not_hold_are_not_asked_of_the_answer() -> None:
    """A question's own paraphrase ("规模"), which no source uses, cannot be missed: only what the sources hold
    counts, here the lake's name, which the answer says."""
    assert asked_share("赛里木湖的规模有多大？", "赛里木湖面积453平方公里", [LAKE]) == pytest.approx(1.0)
    assert not misses_question("赛里木湖的规模有多大？", "赛里木湖面积453平方公里", [LAKE])
    assert misses_question("赛里木湖古称什么？", "赛里木湖面积453平方公里", [LAKE])  # 古称 is in the sources


VILLA = next(p.text for p in eval_set("zh_cmrc_trial").passages if p.key == "TRIAL_491")
TEMPLE = next(p.text for p in eval_set("zh_cmrc_trial").passages if p.key == "TRIAL_187")
"""Public passages (zh_cmrc_trial): a villa built in 1903, a temple built 1986-1990."""


def test_a_follow_up_answered_from_a_source_about_another_subject_is_not_green() -> None:
    """A Chromium walk: "它是哪一年建成的？" after "美庐别墅是怎么得名的？" (the rewrite refused, the question searched
    after the one before) was answered with the temple's dates, cited, green."""
    numbered = tuple(generate.number_sources([hit("villa.txt", (1,), VILLA), hit("temple.txt", (1,), TEMPLE)]))
    question, searched = "它是哪一年建成的？", "美庐别墅是怎么得名的？ 它是哪一年建成的？"
    wrong = generate.check_grounding(
        "1986年奠基动工，1990年10月落成 [2]。", numbered, question=question, searched=searched
    )
    assert wrong.cited == (2,) and wrong.off_question and wrong.other_subject and not wrong.grounded
    assert generate.check_grounding("1986年奠基动工，1990年10月落成 [2]。", numbered, question=question).grounded
    right = generate.check_grounding("美庐别墅始建于1903年 [1]。", numbered, question=question, searched=searched)
    assert right.grounded
    # A follow-up that names its own subject, held by the source, is not asked about the one before.
    switched = "那西施殿呢？它是哪一年建成的？"
    other = generate.check_grounding(
        "1986年奠基动工，1990年10月落成 [2]。",
        numbered,
        question=switched,
        searched=f"美庐别墅是怎么得名的？ {switched}",
    )
    assert other.grounded


NATURE = (
    "Most people spend their free time looking for the natural world. A study found that children who moved to "
    "homes with green views did better at school. Old people live better lives when they can reach a garden."
)
FESTIVAL = (
    "On the last Wednesday evening of the year, families in Iran light small fires in the streets. People jump "
    "over the fire because they believe it takes away bad things and brings good health for the new year."
)


def test_a_bare_follow_up_answered_from_a_passage_naming_none_of_its_subject_is_not_green() -> None:
    """The conversation bench: "why?", searched as its rewrite "Why do people jump over the fire on Red Wednesday in
    Iran?", was answered from a passage on nature that shares "people" with it and none of the names, cited, green."""
    numbered = tuple(generate.number_sources([hit("nature.txt", (1,), NATURE), hit("festival.txt", (1,), FESTIVAL)]))
    question, searched = "why?", "Why do people jump over the fire on Red Wednesday in Iran?"
    said = "Old people live better lives when they can reach a garden [1]."
    wrong = generate.check_grounding(said, numbered, question=question, searched=searched)
    assert wrong.cited == (1,) and wrong.off_question and wrong.other_subject and not wrong.grounded
    assert generate.check_grounding(said, numbered, question=question).grounded  # nothing to tell it by
    right = "People jump over the fire because they believe it takes away bad things [2]."
    assert generate.check_grounding(right, numbered, question=question, searched=searched).grounded
    # Searched after the question before it, which named the festival: the right passage names it, the answer stays.
    before = "What do families in Iran do on the last Wednesday evening of the year?"
    assert generate.check_grounding(right, numbered, question=question, searched=f"{before} {question}").grounded
    assert not generate.check_grounding(said, numbered, question=question, searched=f"{before} {question}").grounded
