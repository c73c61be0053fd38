"""Finding the model's answer in the document: verbatim, or a close paraphrase mapped to the passage's words."""

from __future__ import annotations

import pytest

from rag.evaluation.normalise import NormalisedText
from rag.tuning import checks, generate_questions
from rag.tuning.checks import find_answer, first_clause, rescue_paraphrase
from rag.tuning.replies import answer_candidates
from tests.tuning.samples import chinese_document, chinese_reply, english_document, english_reply
from tests.tuning.standin import ReplyingModel

ENGLISH = (
    "Life was hard for the girl after that winter. Several weeks ago, Mary's mother had been killed in front "
    "of her in the 1990s floods. The shop sold Nike, Jawbone and FitBit devices until the spring."
)
CHINESE = "乐队的总部位于美国明尼苏达州的明尼阿波利斯，公司创立于1940年。山东女子学院有市中校区和长清校区两个校区。"


def _find(text: str, answer: str) -> tuple[tuple[int, int] | None, str | None]:
    return find_answer(NormalisedText.of(text), text, answer_candidates(answer), (0, len(text)))


@pytest.mark.parametrize(
    ("text", "answer", "quoted"),
    [
        (
            ENGLISH,
            "Several weeks ago, Mary's mother was killed before her.",
            "Several weeks ago, Mary's mother had been killed",
        ),
        (ENGLISH, "Nike, Jawbone, and FitBit devices", "Nike, Jawbone and FitBit devices"),  # the Oxford comma
        (ENGLISH, "in the 1990 floods", "1990s floods"),  # widened to the whole word
        (CHINESE, "明尼苏达洲", "明尼苏达"),  # one character of five wrong
        (CHINESE, "美国明尼苏达州明尼阿波利斯", "美国明尼苏达州的明尼阿波利斯"),
    ],
)
def test_a_close_paraphrase_is_mapped_to_the_passages_own_words(text: str, answer: str, quoted: str) -> None:
    span, reason = _find(text, answer)
    assert span is not None and reason is None
    assert text[span[0] : span[1]] == quoted  # exact text of the document, not the model's wording


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        (ENGLISH, "The passage discusses the sad life of a girl and her family."),  # a summary, not a quote
        (ENGLISH, "They have very hard lives."),  # "lives" is not in the passage
        (ENGLISH, "Mary and the spring"),  # its words are there, but a sentence apart
        (CHINESE, "总部在纽约"),
        (CHINESE, "明尼苏省"),  # 3 of 4 characters: every one is needed below 5
        (CHINESE, "美国的公司"),  # 美 and 公司 are 10 characters apart
        (CHINESE, "公司创立于1950年"),
        (CHINESE, "1940年创立"),  # the passage's characters, in another order
        (CHINESE, "1940年山东女子学院"),  # in order, but across a full stop
        (
            CHINESE,
            "阿部重次是美国明尼苏达州的明尼阿波利斯的公司，创立于1940年，位于北部海岸的岬角上",
        ),  # too long  # 6 of 7 units, but not the number
        (ENGLISH, "a device"),  # one word alone is not stemmed: "devices" is another word
        (ENGLISH, "some 1990 floods in 1993"),
    ],
)
def test_a_paraphrase_not_close_enough_is_refused(text: str, answer: str) -> None:
    assert _find(text, answer) == (None, checks.NOT_FOUND)


def test_a_verbatim_answer_is_found_as_before_and_wins_over_a_rescue() -> None:
    span, _ = _find(ENGLISH, '"Mary\'s mother."')
    assert span is not None and ENGLISH[span[0] : span[1]] == "Mary's mother"


def test_the_rescue_stays_in_the_passage() -> None:
    text = "Ruth Calder built the tower. " + "x" * 40 + " The tower was painted blue."
    passage = (text.index("The tower was"), len(text))
    assert rescue_paraphrase(text, passage, "Ruth Calder built it") is None
    assert rescue_paraphrase(text, (0, passage[0]), "Ruth Calder built it") == (0, len("Ruth Calder built"))


def test_a_long_quote_from_a_sentence_start_is_cut_to_its_first_clause() -> None:
    sentence = "Stopping and getting off a bike is easier than stopping and getting out of your car"
    text = f"Ride more. {sentence}. " + "You can bike to work and benefit from the exercise. " * 4
    span, reason = _find(text, text[len("Ride more. ") :])
    assert reason is None and span is not None and text[span[0] : span[1]] == sentence


def test_a_long_quote_from_mid_sentence_is_too_long() -> None:
    text = "The gallery can be seen from 26 miles away on a clear night, " + "and the keepers lived there. " * 8
    assert _find(text, text[len("The gallery can be ") :]) == (None, checks.TOO_LONG)
    assert _find(text, "an invented answer " * 12) == (None, checks.TOO_LONG)


@pytest.mark.parametrize(
    ("answer", "clause"),
    [
        (
            "Edison failed 10,000 times before he invented it. When he was asked",
            "Edison failed 10,000 times before he invented it",
        ),
        ("It was 1.5 million kilometers away, he said", "It was 1.5 million kilometers away"),
        ("黄鳍紫鱼，又称黄鳍姬鲷。", "黄鳍紫鱼"),
        ("no clause end", "no clause end"),
    ],
)
def test_the_first_clause_ends_at_punctuation_not_in_a_number(answer: str, clause: str) -> None:
    assert first_clause(answer) == clause


def test_a_rescued_answer_is_kept_as_the_documents_own_text() -> None:
    def english(passage: str) -> str:
        reply = english_reply(passage)  # "A: <engineer>", reworded below
        engineer = reply.split("A: ", 1)[1].split("\n", 1)[0]
        return reply.replace(f"A: {engineer}", f"A: engineer, {engineer}.", 1)

    def chinese(passage: str) -> str:
        question, answer = chinese_reply(passage).split("答：", 1)
        return f"{question}答：“工程师：{answer.strip()}”\n"

    for document, reply, quoted in (
        (english_document(), english, "engineer "),
        (chinese_document(), chinese, "工程师"),
    ):
        result = generate_questions(document, ReplyingModel(reply), 3)
        assert len(result.questions) == 3, result.rejected
        for q in result.questions:
            assert document[q.start : q.end] == q.answer and q.answer.startswith(quoted)


@pytest.mark.parametrize(
    ("answer", "question", "left"),
    [
        ("在景栋出生及长大。", "Sao Saimong是缅甸总理，他在哪里出生及长大的？", "景栋"),
        ("由工程师李明远于1801年主持建造", "白沙灯塔由哪位工程师于1801年主持建造？", "李明远"),
        ("南宁市", "南宁二中位于哪个城市？", None),  # nothing of its own: it gives itself away
        ("是", "楚昭辅是著名收藏家吗？", None),
        (
            "青衣江",
            "桃溪大桥横跨哪条江？",
            "青衣",
        ),  # trimmed, though the caller only asks for an answer that gives itself away
        ("Sydney is Australia's most exciting city.", "What is Sydney's most exciting city?", "Australia"),
        ("Liu Xiang was a hurdler from Shanghai", "Who was Liu Xiang?", "a hurdler from Shanghai"),
        ("the River Tweed", "Which river does the bridge over the Tweed cross?", None),  # all echoed
    ],
)
def test_an_answer_echoing_its_question_is_trimmed_to_what_it_adds(
    answer: str, question: str, left: str | None
) -> None:
    text = f"前文。{answer}后文。"
    span = (3, 3 + len(answer))
    trimmed = checks.trim_echo(text, span, question)
    assert (text[trimmed[0] : trimmed[1]] if trimmed else None) == left


def test_a_quote_made_unique_is_not_ended_with_punctuation_it_did_not_have() -> None:
    # "二〇〇一年" and "于二〇〇一年" are in both sentences; "二〇〇一年，" only in the second, but so is
    # "址于二〇〇一年": the longer quote without the comma is taken (the comma was, shown as an answer in a walk).
    text = "墓葬发掘于二〇〇一年。遗址于二〇〇一年，被公布为全国重点文物保护单位。"
    doc = NormalisedText.of(text)
    at = text.rindex("二〇〇一年")
    span = checks.unique_quote(doc, text, (at, at + 5))
    assert span is not None and text[span[0] : span[1]] == "址于二〇〇一年"
    # With no other way to make it unique, the punctuation is taken all the same.
    text = "二〇〇一年。二〇〇一年，"
    span = checks.unique_quote(NormalisedText.of(text), text, (6, 11))
    assert span is not None and text[span[0] : span[1]] == "二〇〇一年，"
