"""`python -m rag bench --only badges`: the green badge measured on the labelled set, no model needed."""

from __future__ import annotations

import io

from benchmarks.badges import KNOWN_GREEN_WRONG, badge_cases, bench_badges
from benchmarks.report import Report


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
    wrong green 150 -> 31, right green 216 both ways (63 before a run ending its clause was compared, and before one
    shared character stopped making two names synonyms)."""
    from benchmarks.badges import substituted_answers

    put = substituted_answers(limit=300)
    assert put.right_green[1] == put.right_green[0]  # 64 of 69 on these 300
    assert put.wrong_green[1] <= 0.25 * put.wrong_green[0]  # 44 -> 9 (14 before)


def test_every_case_resolves_its_passage_and_is_labelled() -> None:
    cases = badge_cases()
    assert len({c.id for c in cases}) == len(cases)
    assert all(c.passage and c.answer.rstrip("。.").endswith("[1]") for c in cases)
    assert {c.kind for c in cases if c.right} == {"verbatim", "paraphrase"}
    assert {c.kind for c in cases if not c.right} == {"swapped", "relative", "number", "negation", "antonym"}
    assert {c.split for c in cases} == {"dev", "held-out-1", "held-out-2", "walk-36", "walk-36-bare"}
    assert all(c.question for c in cases if c.split == "walk-36-bare")
