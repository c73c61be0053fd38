"""A bare answer read with its question (rag.generate.fragments), and the relation 前身 (rag.generate.relations):
a Chromium walk's "华西医院的前身是什么？" answered "华西协合大学 [1]" with a green badge."""

from __future__ import annotations

import pytest

from rag import generate
from rag.generate.citations import Status
from rag.generate.claims import claim_held
from rag.generate.conversation import Turn
from rag.generate.fragments import as_claims, fragment, other_measure
from tests.generate.samples import hit

HUAXI = (
    "四川大学华西医院（四川大学华西临床医学院），成都市民俗称为“川医”，是位于中国四川省成都市国学巷的一座著名大型"
    "三级甲等医院。原称“华西医院”，2000年华西医科大学与四川大学合并后改称“四川大学华西医院”。华西医院起源于由"
    "美国、英国、加拿大等国的基督教会1892年在成都创建的仁济、存仁医院。1914年，华西协合大学建立医科，将其作为教学医院。"
)
STATUE = (
    "在广场中心，是国王路易十四的宏伟的骑马雕像，最终在1792年，法国革命期间被毁。1828年，复辟的波旁王朝国王查理十世"
    "下令兴建目前的12米高的骑马铜像，雕塑家是弗朗索瓦·约瑟夫·博西奥。"
)


def sources(text: str) -> tuple[generate.Source, ...]:
    return tuple(generate.number_sources([hit("walk.txt", (1,), text)]))


@pytest.mark.parametrize(
    ("question", "answer", "claim"),
    [
        ("华西医院的前身是什么？", "华西协合大学 [1]", "华西医院的前身是华西协合大学。"),
        ("华西医院的前身是什么？", "是华西协合大学[1]。", "华西医院的前身是华西协合大学。"),
        ("美庐别墅是什么时候建的？", "1903年 [1]。", "美庐别墅是1903年建的。"),
        ("黑龙江省博物馆有多少件藏品？", "11万余件 [1]", "黑龙江省博物馆有11万余件藏品。"),
        ("Who designed the Sydney Opera House?", "Jørn Utzon [1].", "Jørn Utzon designed the Sydney Opera House."),
        ("What year did the war end?", "1945 [2].", "1945 the war end."),
        # A sentence of its own is read as written; a question without a question word gives no claim.
        ("华西医院的前身是什么？", "华西医院起源于1892年在成都创建的仁济、存仁医院 [1]。", None),
        ("华西医院的前身是什么？", "华西协合大学，一所教会大学 [1]", None),
        ("请介绍华西医院。", "华西协合大学 [1]", None),
        # Short, but naming what was asked: a sentence (the walk's answer, green, was flagged when read as bare).
        ("黑龙江省博物馆有多少件藏品？", "黑龙江省博物馆藏品11万余件。[1]", None),
        ("Who designed the Sydney Opera House?", "The Opera House's designer [1]", None),
    ],
)
def test_a_bare_answer_makes_its_claim_of_the_question(question: str, answer: str, claim: str | None) -> None:
    assert as_claims(question, answer)[:1] == ((claim,) if claim else ())


def test_a_fragment_is_one_short_clause() -> None:
    assert fragment("1.44平方公里 [1]。") == "1.44平方公里"
    assert fragment("It was built in 1903 by the city council of Detroit [1].") is None
    assert fragment("1990年，西施殿落成 [1]") is None


@pytest.mark.parametrize(
    ("question", "answer", "other"),
    [
        ("胜利广场的骑马铜像有多重？", "12米高 [1]", True),
        ("胜利广场的骑马铜像有多重？", "约30吨 [1]", False),
        ("那它的总面积是多少？", "1.44平方公里 [1]", False),  # 平方公里 is an area, not a length
        ("它占地多大？", "占地五千多平方米 [1]。", False),
        ("它有多高？", "它重3吨 [1]。", True),
        ("How heavy is the statue?", "It is 12 m tall [1].", True),
        ("How tall is it?", "It weighs 3 kg and stands 12 m tall [1].", False),
        ("它是什么时候建的？", "1903年 [1]", False),  # no measure asked
        ("它有多重？", "很重 [1]", False),  # no unit given
        ("《台视周日卡通》是由哪家公司负责的？", "每周日上午11:00～12:00 [1]", True),  # a time for a company
        ("《台视周日卡通》是由哪家公司负责的？", "台湾电视公司 [1]", False),
        ("是哪家公司负责的？", "由台视负责，每周日上午11:00播出 [1]", False),  # a company, and a time
        ("Which company makes it?", "Every Sunday at 11:00 a.m. [1]", True),
        ("Which company makes it?", "3M, since 1990 [1]", False),
        ("它是哪一年由谁建的？", "1903年 [1]", False),  # a year is asked
    ],
)
def test_an_answer_in_units_of_another_kind_than_asked(question: str, answer: str, other: bool) -> None:
    assert other_measure(question, answer) is other


def test_the_walks_bare_wrong_answer_is_not_green_read_with_its_question() -> None:
    numbered = sources(HUAXI)
    assert generate.check_grounding("华西协合大学 [1]", numbered).grounded  # its words are all there
    read = generate.check_grounding("华西协合大学 [1]", numbered, question="华西医院的前身是什么？")
    assert not read.grounded
    assert [s.status for s in read.sentences] == [Status.NOT_SUPPORTED]
    assert read.cited == ()
    right = generate.check_grounding("仁济、存仁医院 [1]", numbered, question="华西医院起源于哪里？")
    assert right.grounded and right.cited == (1,)


def test_a_height_for_a_weight_is_not_green() -> None:
    numbered = sources(STATUE)
    assert generate.check_grounding("12米高 [1]", numbered).grounded
    weight = generate.check_grounding("12米高 [1]", numbered, question="胜利广场的骑马铜像有多重？")
    assert not weight.grounded and weight.other_measure
    assert not weight.nothing_held  # its words are the source's: not "not in the sources" (a walk saw that)
    assert generate.check_grounding("12米高 [1]", numbered, question="胜利广场的骑马铜像有多高？").grounded


def test_a_longer_answer_is_not_read_with_the_question() -> None:
    numbered = sources(HUAXI)
    answer = "华西医院起源于1892年在成都创建的仁济、存仁医院 [1]。1914年，华西协合大学建立医科 [1]。"
    assert generate.check_grounding(answer, numbered, question="华西医院的前身是什么？").grounded


def test_a_turn_reads_its_bare_answer_with_the_question_asked() -> None:
    turn = Turn(
        id="t",
        question="华西医院的前身是什么？",
        query="华西医院的前身是什么？",
        sources=sources(HUAXI),
        answer="华西协合大学 [1]",
    )
    assert not turn.grounding.grounded


@pytest.mark.parametrize(
    ("claim", "held"),
    [
        ("华西医院的前身是华西协合大学。", False),
        ("华西医院的前身是仁济、存仁医院。", True),
        ("华西医院起源于仁济、存仁医院。", True),
        ("仁济、存仁医院起源于华西医院。", False),
    ],
)
def test_a_predecessor_is_read_as_a_relation(claim: str, held: bool) -> None:
    assert claim_held(claim, HUAXI).held is held


def test_a_predecessor_in_english() -> None:
    passage = (
        "The hospital grew out of two mission clinics founded in 1892. "
        "In 1914 the university made it its teaching hospital."
    )
    assert claim_held("The hospital grew out of two mission clinics.", passage).held
    assert not claim_held("The predecessor of the hospital was the university.", passage).held


def test_a_chinese_answer_said_of_an_owned_noun_is_also_read_of_the_noun_alone() -> None:
    height = ("胜利广场的骑马铜像有12米高。", "骑马铜像有12米高。")
    assert as_claims("胜利广场的骑马铜像有多高？", "12米高 [1]") == height
    predecessor = ("华西医院的前身是华西协合大学。", "前身是华西协合大学。")
    assert as_claims("华西医院的前身是什么？", "华西协合大学 [1]") == predecessor


@pytest.mark.parametrize(
    ("question", "answer", "missing"),
    [
        ("How deep is the lake?", "The lake is the largest lake in the UK. [1]", True),  # a bench run's green answer
        ("How deep is the lake?", "It is 230 m deep [1].", False),
        ("How much did revenue grow in 2023?", "Sales rose by a tenth over the year [1].", False),
        ("How old was he?", "He was in his twenties [1].", False),
        ("黑龙江省博物馆有多少件藏品？", "藏品11万余件 [1]", False),
        ("它是哪一年建成的？", "它由英国人建造 [1]。", True),
        ("它占地多大？", "占地五千多平方米 [1]。", False),  # a Chinese numeral
        ("这款列车被配属予哪几个铁道？", "东日本旅客铁道和东海旅客铁道 [1]。", False),  # "which ones", no figure asked
        ("Who built it?", "A local woman [1].", False),
    ],
)
def test_an_answer_without_the_figure_asked_for(question: str, answer: str, missing: bool) -> None:
    from rag.generate.fragments import figure_missing

    assert figure_missing(question, answer) is missing


def test_a_held_answer_without_the_figure_asked_for_is_not_green() -> None:
    numbered = sources("The lake is the largest lake in the UK. It is 230 metres deep.")
    answer = "The lake is the largest lake in the UK [1]."
    assert generate.check_grounding(answer, numbered).grounded
    read = generate.check_grounding(answer, numbered, question="How deep is the lake?")
    assert read.figure_missing and not read.grounded and read.cited == (1,)
    assert generate.check_grounding("It is 230 metres deep [1].", numbered, question="How deep is the lake?").grounded
