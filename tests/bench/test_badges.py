"""`python -m rag bench --only badges`: the green badge measured on the labelled set, no model needed."""

from __future__ import annotations

import dataclasses
import io
import uuid
from pathlib import Path
from types import SimpleNamespace

from benchmarks.badges import KNOWN_GREEN_WRONG, badge_cases, bench_badges
from benchmarks.report import Report
from rag.store import Hit


def hit(passage: str) -> Hit:
    return Hit(uuid.uuid4(), passage, {"original_filename": "source.md", "pages": [1]}, 1.0)


def test_the_badge_bench_reports_before_and_after_per_language() -> None:
    out = io.StringIO()
    bench_badges(Report(out), quick=True)
    text = out.getvalue()
    for name in ("Chinese", "English", "all"):
        assert f"\n{name} (" in text and "): before: green precision " in text and "): after:  green precision " in text
    assert f"wrong answers still green: {', '.join(KNOWN_GREEN_WRONG) or 'none'}\n" in text
    assert "held-out-2 (30, written after the rules were frozen)" in text
    assert " ms an answer (median; worst " in text
    assert "bare answers on zh_cmrc_trial (" in text and "; read with it green precision " in text
    assert "sentences on zh_cmrc_trial (" in text and "; with it green precision " in text
    assert "substitutions on zh_cmrc_trial (" in text and "words no source writes green precision " in text
    assert "name substitutions on en_race (" in text and "names no source writes green precision " in text


def test_bare_answers_read_with_their_question_take_green_from_wrong_ones_and_keep_most_right_ones() -> None:
    """On public data: CMRC gold spans (right) and another question's span of the same passage (wrong). Measured on
    all 1,000: right green 975 -> 826, wrong green 961 -> 192 (893 and 551 before the asked check, which reads a
    long span that makes no claim of the question as a sentence)."""
    from benchmarks.badges import bare_answers

    bare = bare_answers(limit=300)
    assert bare.wrong_green[1] <= 0.25 * bare.wrong_green[0]  # 284 -> 55 on these 300
    assert bare.right_green[1] >= 0.77 * bare.right  # 237 of 300


def test_held_sentences_that_leave_out_what_was_asked_lose_green_and_most_right_ones_keep_it() -> None:
    """On public data: the CMRC passage sentence holding the gold span (right) and another sentence of it holding
    another question's (wrong), both held by the passage. Measured on all: right green 874 -> 822 of 903, wrong
    green 809 -> 203."""
    from benchmarks.badges import sentence_answers

    held = sentence_answers(limit=300)
    assert held.wrong_green[1] <= 0.3 * held.wrong_green[0]  # 239 -> 54 on these 300 (271 of each)
    assert held.right_green[1] >= 0.9 * held.right  # 245 of 271


def test_a_sentence_with_its_answer_replaced_by_words_the_passage_never_writes_loses_green() -> None:
    """On public data: the CMRC sentence holding the gold span (right), and the same sentence with that span replaced
    by another passage's answer (wrong), the words a small model puts in a source's place. Measured on all 243:
    wrong green 150 -> 24, right green 216 both ways (63 before a run ending its clause was compared, and before one
    shared character stopped making two names synonyms; 31 before a long stretch of them was not held anywhere)."""
    from benchmarks.badges import substituted_answers

    put = substituted_answers(limit=300)
    assert put.right_green[1] == put.right_green[0]  # 64 of 69 on these 300
    assert put.wrong_green[1] <= 0.2 * put.wrong_green[0]  # 44 -> 7 (9 before `claims.UNKNOWN_RUN`)


def test_an_english_sentence_with_a_name_put_in_anothers_place_loses_green() -> None:
    """On public data: en_race sentences writing a name (right) and the same with that name replaced by one of another
    passage (wrong). Measured on all 269: wrong green 257 -> 2 (a title's word, read as a line's label; "Paragraph"),
    right green 268 both ways; on these 123: 116 -> 1."""
    from benchmarks.badges import substituted_names

    put = substituted_names(limit=80)
    assert put.right >= 100
    assert put.right_green[1] == put.right_green[0]
    assert put.wrong_green[1] <= 0.05 * put.wrong_green[0]


def test_a_name_put_in_place_of_one_opening_its_sentence_loses_green() -> None:
    """The same with the name opening its sentence ("Thelma began…" for "Ellen began…"), which the check excused until
    session 47. Measured on all 37: wrong green 31 -> 0, right green 37 both ways."""
    from benchmarks.badges import substituted_names

    put = substituted_names(opening=True)
    assert put.right >= 30
    assert put.right_green[1] == put.right_green[0]
    assert put.wrong_green[1] <= 0.1 * put.wrong_green[0]


def test_the_conversation_benchs_kept_answers_are_badged_again(tmp_path: Path) -> None:
    """The model's answers a conversation run kept are read back and badged by today's checks, per language."""
    from benchmarks.badges import recorded_answers
    from benchmarks.conversation import load_answers, save_answers
    from rag import generate
    from rag.generate.conversation import Turn

    bank = "Its current chief executive officer (CEO) is Tran Minh Duc. The bank was founded in 1991."
    lake = "赛里木湖位于新疆博尔塔拉州博乐市境内，湖面海拔2071.9米。"

    def outcome(language: str, question: str, answer: str, passage: str, right: bool) -> SimpleNamespace:
        given = passage.split("，")[-1] if language == "zh" else None  # the part packing gave the prompt
        sources = tuple(dataclasses.replace(s, text=given) for s in generate.number_sources([hit(passage)]))
        turn = Turn("t", question, question, sources=sources, answer=answer)
        return SimpleNamespace(language=language, condition="alone", turn=turn, right=right, green=False)

    kept = save_answers(
        [
            outcome("en", "Who is the CEO?", "The CEO is Tran Minh Duc. [1]", bank, True),
            outcome("en", "Who is the CEO?", "The CEO is Tran Van Hoa. [1]", bank, False),
            outcome("zh", "赛里木湖的海拔是多少？", "赛里木湖湖面海拔2071.9米。[1]", lake, True),
        ],
        tmp_path / "bench" / "answers.jsonl",
    )
    read = load_answers(kept)
    assert [(language, turn.answer, right) for language, turn, right in read] == [
        ("en", "The CEO is Tran Minh Duc. [1]", True),
        ("en", "The CEO is Tran Van Hoa. [1]", False),
        ("zh", "赛里木湖湖面海拔2071.9米。[1]", True),
    ]
    assert read[0][1].sources[0].hit.content == bank and read[0][1].sources[0].text is None
    assert read[2][1].sources[0].hit.content == lake and read[2][1].sources[0].text == "湖面海拔2071.9米。"
    line = recorded_answers(kept)
    assert line.endswith(
        "(3, answers.jsonl), badged again: zh right green 1/1, wrong green 0/0; en right green 1/1, wrong green 0/1"
    )


def test_every_case_resolves_its_passage_and_is_labelled() -> None:
    cases = badge_cases()
    assert len({c.id for c in cases}) == len(cases)
    assert all(c.passage and c.answer.rstrip("。.").endswith("[1]") for c in cases)
    assert {c.kind for c in cases if c.right} == {"verbatim", "paraphrase"}
    assert {c.kind for c in cases if not c.right} == {"swapped", "relative", "number", "negation", "antonym"}
    assert {c.split for c in cases} == {"dev", "held-out-1", "held-out-2", "walk-36", "walk-36-bare"}
    assert all(c.question for c in cases if c.split == "walk-36-bare")
