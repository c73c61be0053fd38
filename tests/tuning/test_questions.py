"""Generating questions from a document with a stand-in model: what is kept, what is dropped and why,
progress, stopping, and a model that fails."""

from __future__ import annotations

import re
import threading

import pytest

from rag.errors import ModelError
from rag.evaluation.keyword import ChunkBM25
from rag.evaluation.normalise import normalise
from rag.tuning import checks, generate_questions
from rag.tuning.passages import windows
from rag.tuning.questions import TEMPERATURE
from tests.tuning.samples import chinese_document, chinese_reply, english_document, english_reply
from tests.tuning.standin import ReplyingModel


def test_each_passage_gives_one_question_whose_answer_span_is_in_the_document() -> None:
    document = english_document()
    model = ReplyingModel(english_reply)
    result = generate_questions(document, model, 6)
    assert (result.passages, result.planned, len(result.questions), result.stopped) == (6, 6, 6, False)
    assert set(result.dropped.values()) == {0} and result.kept_share == 1.0
    for q in result.questions:
        assert document[q.start : q.end] == q.answer
        assert q.passage_start <= q.start and q.language == "en"
        assert q.text.startswith("Who built the ") and q.answer in document[q.passage_start : q.passage_start + 500]
    # Spread over the document: the passages start in six different sixths of it.
    sixths = {q.passage_start * 6 // len(document) for q in result.questions}
    assert sixths == set(range(6))
    assert model.temperatures == [TEMPERATURE] * 6
    assert all(p.startswith("Read the passage") for p in model.prompts)
    # The model's second question is never waited for: the reply ends after the answer's line.
    assert all("another" not in s for s in model.streamed)


def test_a_chinese_passage_is_asked_in_chinese_and_the_answer_found_in_it() -> None:
    document = chinese_document()
    model = ReplyingModel(chinese_reply)
    result = generate_questions(document, model, 4)
    assert len(result.questions) == 4
    assert all(p.startswith("阅读下面的段落") for p in model.prompts)
    for q in result.questions:
        assert q.language == "zh" and document[q.start : q.end] == q.answer and len(q.answer) == 3
        assert q.text.endswith("主持建造的？")


def test_a_mixed_document_asks_each_passage_in_its_own_language() -> None:
    document = english_document(6) + "\n\n" + chinese_document(12)
    result = generate_questions(
        document, ReplyingModel(lambda p: chinese_reply(p) if "灯塔" in p else english_reply(p)), 8
    )
    languages = [q.language for q in result.questions]
    assert "en" in languages and "zh" in languages and languages == sorted(languages)  # English first


def _scripted(replies: list[str]) -> ReplyingModel:
    calls = iter(replies)
    return ReplyingModel(lambda passage: next(calls))


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I cannot think of a question.", checks.NO_REPLY),
        ("Q: Who built the Garrow lighthouse?\nA: Isambard Brunel", checks.NOT_FOUND),
        ("Q: What does the paragraph say?\nA: " + english_document(7)[-260:], checks.TOO_LONG),
        # The sentence about the white cottage is in three paragraphs word for word.
        ("Q: Where are the Garrow lighthouse's logbooks kept?\nA: county archive", checks.AMBIGUOUS),
        ("Q: Who was the engineer Ruth Calder of the Garrow lighthouse?\nA: Ruth Calder", checks.GIVES_AWAY),
        ("Q: Who was the engineer?\nA: Ruth Calder", checks.GENERIC),
        # Every paragraph has its steps and gallery: BM25 cannot tell the passage apart.
        ("Q: How many steps do visitors climb to reach the gallery?\nA: 166", checks.ELSEWHERE),
    ],
)
def test_a_question_is_dropped_for_its_reason(reply: str, reason: str) -> None:
    # One passage: the middle one of twelve, the Garrow lighthouse's (paragraph 7). A reply with no question
    # is asked for once more, and given the same reply.
    model = _scripted([reply, reply])
    result = generate_questions(english_document(), model, 1)
    assert result.questions == () and result.passages == 1
    assert [r.reason for r in result.rejected] == [reason] and result.dropped[reason] == 1
    assert len(model.prompts) == (2 if reason == checks.NO_REPLY else 1)


def test_a_question_dropped_after_its_answer_was_placed_keeps_the_answer_span() -> None:
    # Dropped by the keyword filter (the bench sweeps such questions to measure the filter): the span is the
    # one the question would have been kept with; a question dropped before its answer was placed has none.
    document = english_document()
    reply = "Q: How many steps do visitors climb to reach the gallery?\nA: 166"
    (dropped,) = generate_questions(document, _scripted([reply]), 1).rejected
    assert dropped.reason == checks.ELSEWHERE and dropped.start is not None and dropped.end is not None
    assert "166" in document[dropped.start : dropped.end] and dropped.passage_start <= dropped.start
    (unplaced,) = generate_questions(document, _scripted(["Q: Who built it?\nA: Isambard Brunel"]), 1).rejected
    assert unplaced.reason == checks.NOT_FOUND and unplaced.start is None and unplaced.end is None


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_statement_instead_of_a_question_is_asked_about_alone_then_answered(language: str) -> None:
    # Qwen2.5-Coder-1.5B copied a sentence of the passage as its question for 18 of 77 Chinese passages.
    document = chinese_document() if language == "zh" else english_document()
    said: dict[str, str] = {}

    def reply(text: str) -> str:
        call = len(model.prompts)
        if call == 1:  # the passage: a sentence of it, labelled as the question
            found = re.search(
                r"(\w\w)灯塔位于[^。]*。它由工程师(\w{3})于"
                if language == "zh"
                else r"The (\w+) lighthouse stands[^.]*\. It was built in \d+ by the engineer (\w+ \w+)",
                text,
            )
            assert found is not None
            said.update(name=found.group(1), engineer=found.group(2))
            if language == "zh":
                return f"问：{said['name']}灯塔由工程师{said['engineer']}主持建造。"
            return f"Q: The {said['name']} lighthouse was built by the engineer {said['engineer']}."
        if call == 2:  # the statement alone
            said["statement"] = text
            return (
                f"{said['name']}灯塔是由哪位工程师主持建造的？"
                if language == "zh"
                else f"Who built the {said['name']} lighthouse?"
            )
        return said["engineer"]  # its answer, from the passage

    model = ReplyingModel(reply)
    result = generate_questions(document, model, 1)
    asked_alone, answered = model.conversations[1], model.conversations[2]
    heading = "句子：\n" if language == "zh" else "Sentence:\n"
    assert len(asked_alone) == 1 and asked_alone[0].content.endswith(heading + said["statement"])
    assert said["engineer"] in said["statement"] and not said["statement"].startswith(("问", "Q:"))
    assert "not a yes-or-no question" in asked_alone[0].content or "不要用“吗”" in asked_alone[0].content
    shown = answered[0].content.split("\n\n")[0].split("\n", 1)[1]  # the prompt's passage, before its question
    assert shown in document and said["name"] in answered[0].content.split("\n\n")[1]
    [kept] = result.questions
    assert kept.language == language and kept.answer == said["engineer"] and said["name"] in kept.text


@pytest.mark.parametrize("answer", ["是", "Yes.", "否。"])
def test_a_yes_or_no_answer_gives_its_question_away(answer: str) -> None:
    # "是" is in every Chinese passage: found there it was kept as some other sentence's "经是暹".
    reply = f"Q: Does the Garrow lighthouse stand on a cliff?\nA: {answer}"
    result = generate_questions(english_document(), _scripted([reply]), 1)
    assert result.questions == () and [r.reason for r in result.rejected] == [checks.GIVES_AWAY]


def test_a_quote_found_elsewhere_too_is_lengthened_until_it_is_unique() -> None:
    # "brass compasses that sailors carried" is in every paragraph; with the name before it, only in one.
    document = english_document(3).replace("shows the brass", "shows Arden's brass", 1)
    reply = "Q: What does the museum of the Arden lighthouse gallery show?\nA: brass compasses"
    result = generate_questions(document, _scripted([reply] * 3), 3)
    [q] = result.questions
    assert result.passages == 3  # the other two dropped: the same question again
    assert q.answer == "Arden's brass compasses" and document.count(q.answer) == 1
    assert document[q.start : q.end] == q.answer


def test_the_answer_is_found_after_normalisation_and_without_its_quotes_and_full_stop() -> None:
    document = english_document(4).replace("Mara Quill", "MARA\n  QUILL")
    reply = 'Q: Which engineer built the Arden lighthouse on the headland?\nA: "Mara Quill."'
    [q] = generate_questions(document, _scripted([reply]), 1).questions
    assert q.answer == "MARA\n  QUILL" and normalise(q.answer) == "mara quill"


def test_the_occurrence_inside_the_passage_is_preferred_then_the_nearest() -> None:
    # "Tobias Venn" (the Belmont lighthouse's engineer, paragraph 2) is named at the very end too.
    document = english_document(8) + " A bust of Tobias Venn stands near the archive."
    tiles = windows(document)
    reply = "Q: Which engineer built the Belmont lighthouse and its harbour walls?\nA: Tobias Venn"
    nothing = "No question."  # asked for once more, and said again
    result = generate_questions(document, _scripted([nothing, nothing, reply] + [nothing] * 12), 8)  # a paragraph each
    [q] = result.questions
    assert q.passage_start == tiles[1].start and tiles[1].start <= q.start < tiles[1].end
    assert q.answer == "engineer Tobias Venn"  # lengthened: the name alone is in the document twice
    # From the first passage, which does not hold it, the nearest occurrence is taken: Belmont's again.
    result = generate_questions(document, _scripted([reply, reply] + [nothing] * 12), 8)
    assert result.questions[0].start == q.start and result.dropped[checks.DUPLICATE] == 1


def test_progress_is_reported_after_each_passage_and_stop_returns_what_was_kept() -> None:
    stop = threading.Event()
    seen: list[tuple[int, int]] = []
    model = ReplyingModel(english_reply)

    def progress(done: int, total: int) -> None:
        seen.append((done, total))
        if done == 3:
            stop.set()

    result = generate_questions(english_document(), model, 8, progress=progress, stop=stop)
    assert seen == [(1, 8), (2, 8), (3, 8)]
    assert result.stopped and result.passages == 3 and len(result.questions) == 3 and len(model.prompts) == 3


def test_a_stop_during_a_reply_ends_it_and_drops_it() -> None:
    stop = threading.Event()
    model = ReplyingModel(english_reply, piece=1)
    model.on_call = lambda call: stop.set() if call == 2 else None
    result = generate_questions(english_document(), model, 5, stop=stop)
    assert result.stopped and result.passages == 1 and len(result.questions) == 1
    assert model.streamed[1] == "Q"  # the second reply was cut after its first token


def test_a_model_error_on_the_first_passage_is_raised_later_ones_are_counted() -> None:
    with pytest.raises(ModelError, match="fell over"):
        generate_questions(english_document(), ReplyingModel(english_reply, fail_on=[1]), 4)
    result = generate_questions(english_document(), ReplyingModel(english_reply, fail_on=[2]), 4)
    assert len(result.questions) == 3 and result.dropped[checks.FAILED] == 1 and result.passages == 4


def test_a_document_of_figures_and_boilerplate_gives_no_passages() -> None:
    table = "\n".join(f"{i} .......... {i * 3}" for i in range(200))
    model = ReplyingModel(english_reply)
    result = generate_questions(table + "\nCopyright 2024. All rights reserved.", model, 5)
    assert result.planned == 0 and result.questions == () and model.prompts == []


@pytest.mark.parametrize("count", [0, 101])
def test_the_count_is_checked(count: int) -> None:
    with pytest.raises(ValueError, match="ask for 1 to 100 questions"):
        generate_questions(english_document(), ReplyingModel(english_reply), count)


def test_the_windows_beside_the_passage_do_not_make_its_question_generic() -> None:
    # The window before an article's passage often holds the article's first sentence (its topic words).
    texts = [
        "Gardens and parks of the old town, with fountains and benches.",
        "The fast food chain Dairy Queen was founded in Illinois.",
        "Dairy Queen has its headquarters in Minnesota, and thousands of stores.",
        "Rivers and bridges of the region, with ferries and locks.",
        "Mountains and valleys, with hiking trails and huts.",
        "Lakes and islands, with boats.",
        "Castles and towers, with guided tours.",
        "Markets and squares, with stalls.",
    ]
    question = "Where does Dairy Queen have its headquarters?"
    assert not checks.matches_elsewhere(question, ChunkBM25(texts), 2)
    # Far away, a window or two that match it as well are no reason to drop it (they were, with a margin
    # over every other window: the questions kept then copied their passage's words); three are.
    rival = "Where does Dairy Queen have its headquarters? Nobody here knows."
    for far in (4, 5):
        texts[far] = rival
        assert not checks.matches_elsewhere(question, ChunkBM25(texts), 2)
    texts[6] = rival
    assert checks.matches_elsewhere(question, ChunkBM25(texts), 2)
    assert checks.matches_elsewhere("Which moons orbit Saturn?", ChunkBM25(texts), 2)  # no word of its own window


def test_a_question_written_without_its_answer_is_asked_for_the_answer() -> None:
    # Qwen2.5-Coder-1.5B wrote three of 16 Chinese questions alone ("莎莉公司总部设于哪里？") and stopped.
    document = chinese_document()

    def reply(text: str) -> str:
        whole = chinese_reply(text.split("\n\n问题：")[0])
        question, answer = (line.split("：", 1)[1] for line in whole.splitlines())
        if "\n\n问题：" in text:
            assert text.split("\n\n问题：", 1)[1].startswith(question)  # asked about its own question
            return f"{answer}\n（摘自段落）"
        return question  # no label, no answer

    model = ReplyingModel(reply)
    result = generate_questions(document, model, 3)
    assert len(result.questions) == 3 and result.dropped[checks.NO_REPLY] == 0
    assert len(model.prompts) == 6  # each passage: its question, then its answer
    for q in result.questions:
        assert document[q.start : q.end] == q.answer and len(q.answer) == 3 and q.text.endswith("主持建造的？")


def test_a_statement_that_gives_no_question_when_asked_about_alone_is_no_reply() -> None:
    model = _scripted(["The Garrow lighthouse stands on the cliff."] * 3)
    result = generate_questions(english_document(), model, 1)
    assert result.dropped[checks.NO_REPLY] == 1 and len(model.prompts) == 2  # not asked for an answer
    assert model.prompts[1].endswith("Sentence:\nThe Garrow lighthouse stands on the cliff.")


def test_an_answer_that_echoes_its_question_keeps_what_it_adds() -> None:
    document = chinese_document()

    def reply(passage: str) -> str:
        name = re.search(r"(\w\w)灯塔位于", passage).group(1)  # type: ignore[union-attr]
        engineer, year = re.search(r"由工程师(\w{3})于(\d{4})年", passage).groups()  # type: ignore[union-attr]
        return f"问：{name}灯塔由哪位工程师于{year}年主持建造？\n答：由工程师{engineer}于{year}年主持建造\n"

    result = generate_questions(document, ReplyingModel(reply), 3)
    assert len(result.questions) == 3 and result.dropped[checks.GIVES_AWAY] == 0
    for q in result.questions:
        assert len(q.answer) == 3 and document[q.start : q.end] == q.answer and q.answer not in q.text
        assert f"由工程师{q.answer}于" in document
