"""benchmarks/tune.py's parts that need no model: the rank correlation, placing the sets' real questions in the
long document, comparing two sweeps, the generated questions' cache, and the report lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks import tune
from benchmarks.tune import Comparison, Generation, Outcome, RealQuestions
from rag.chunking import ChunkSettings
from rag.evaluation.datasets import Passage
from rag.evaluation.questions import Question
from rag.evaluation.sets import EvalSet
from rag.tuning import checks
from rag.tuning.questions import GeneratedQuestion, GeneratedQuestions, Rejected
from rag.tuning.recommend import recommend
from rag.tuning.sweep import Grid, PointResult, Search, SweepResult

# --- Spearman -------------------------------------------------------------------------------------------


def test_ranks_average_ties() -> None:
    assert tune.ranks([0.3, 0.1, 0.3, 0.2]) == [3.5, 1.0, 3.5, 2.0]
    assert tune.ranks([]) == []


def test_spearman_by_hand() -> None:
    assert tune.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert tune.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert tune.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)  # 1 - 6*2/(4*15)
    # With ties, Pearson's r of the averaged ranks (scipy.stats.spearmanr gives 0.9486832980505138).
    assert tune.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(0.9486832980505138)
    # Scores differing only by float noise are tied, not ranked.
    assert tune.spearman([0.1 + 0.2, 0.3, 0.5], [1, 1, 2]) == pytest.approx(1.0)


def test_spearman_is_undefined_without_spread() -> None:
    assert tune.spearman([0.5, 0.5, 0.5], [1, 2, 3]) is None
    assert tune.spearman([1], [2]) is None
    with pytest.raises(ValueError, match="3 values against 2"):
        tune.spearman([1, 2, 3], [1, 2])


# --- the long document and the real questions ------------------------------------------------------------


def _set() -> EvalSet:
    passages = (
        Passage("a", "The lighthouse keeper lit the lamp at dusk."),
        Passage("b", "At dusk the ferry left. The keeper's cat slept."),
        Passage("c", "Picked up with what? Knives. Beans were hard."),
        Passage("d", "Nothing here answers anything."),
    )
    questions = (
        Question("When did the ferry leave?", "", "b"),  # "dusk" is in passage a too: placed in b
        Question("What did they use?", "", "c"),  # "Knives." only after normalising
        Question("Who slept?", "", "b"),  # no answer in b: left out
        Question("What was lit?", "", "a"),
        Question("Unused passage?", "", "d"),  # d is not in the document: ignored
    )
    answers = (("at night", "dusk"), ("knives.",), ("the dog",), ("the lamp",), ("anything",))
    return EvalSet("en_test", passages, questions, answers)


def test_the_long_document_keeps_each_passages_place() -> None:
    chosen = _set().passages[:3]
    doc = tune.long_document("en_test", chosen)
    assert doc.text == "\n\n".join(p.text for p in chosen)
    for p in chosen:
        start, end = doc.spans[p.key]
        assert doc.text[start:end] == p.text


def test_real_questions_are_placed_by_an_answer_in_their_own_passage() -> None:
    s = _set()
    doc = tune.long_document("en_test", s.passages[:3])
    real = tune.real_questions(s, doc)
    assert (real.verbatim, real.normalised, real.unplaced) == (2, 1, 1)
    by_text = {q.text: q for q in real.questions}
    ferry = by_text["When did the ferry leave?"]
    assert ferry.span is not None and ferry.expected == "dusk" and ferry.file is None
    b_start, b_end = doc.spans["b"]
    assert b_start <= ferry.span[0] < ferry.span[1] <= b_end  # not the "dusk" of passage a
    knives = by_text["What did they use?"]
    assert knives.span is not None and knives.expected == "Knives." == doc.text[knives.span[0] : knives.span[1]]
    assert "Unused passage?" not in by_text and "Who slept?" not in by_text


def test_locate_answer_tries_every_answer_verbatim_first() -> None:
    text = "xx Knives. and knives."
    # "KNIVES." is found only after normalising, "knives." verbatim: the verbatim one wins though listed second.
    assert tune.locate_answer(text, (0, len(text)), ["KNIVES.", "knives."]) == ((15, 22), True)
    assert tune.locate_answer(text, (0, 11), ["KNIVES."]) == ((3, 10), False)
    assert tune.locate_answer(text, (0, 11), ["", "  ", "forks"]) is None


def test_the_public_sets_place_every_question_inside_its_own_passage() -> None:
    for name in ("en_race", "zh_cmrc_trial"):
        doc, real = tune.build(name, 12)
        assert len(doc.spans) == 12 and real.questions
        spans = list(doc.spans.values())
        for q in real.questions:
            assert q.span is not None and doc.text[q.span[0] : q.span[1]] == q.expected
            assert any(lo <= q.span[0] and q.span[1] <= hi for lo, hi in spans)


def test_evenly_spaces_and_keeps_all_when_few() -> None:
    items = [str(i) for i in range(10)]
    assert tune.evenly(items, 5) == ["0", "2", "4", "6", "8"]
    assert tune.evenly(items[:3], 5) == ["0", "1", "2"]


# --- comparing the two sweeps ----------------------------------------------------------------------------


def _point(size: int, ranks: Sequence[int | None], tokens: float) -> PointResult:
    return PointResult(
        settings=ChunkSettings(strategy="token", chunk_size=size, chunk_overlap=0),
        search=Search("vector"),
        ranks=tuple(ranks),
        chunks=10,
        prompt_tokens=tokens,
        embed_seconds=None,
    )


def _result(points: Sequence[PointResult]) -> SweepResult:
    n = len(points[0].ranks)
    questions = tuple(Question(f"q{i}", f"p{i}") for i in range(n))
    return SweepResult(Grid(), "test", questions, tuple(points), 8, False, 0, 0, 0.0)


def test_compare_ranks_both_sweeps_and_looks_the_recommendation_up_in_the_real_one() -> None:
    generated = _result(
        [_point(100, [1] * 20, 900), _point(200, [None] * 10 + [1] * 10, 300), _point(300, [None] * 20, 100)]
    )
    real = _result(
        [_point(300, [6] * 4, 100), _point(100, [1, 1, 1, 6], 900), _point(200, [1, 1, 6, 6], 300)]
    )  # another order: matched by setting
    rec = recommend(generated)
    c = tune.compare(generated, real, rec)
    assert c.settings == 3 and c.sure and c.recommended == "token 100/0 · vector"
    assert c.rho_mrr == pytest.approx(1.0) and c.rho_hit5 == pytest.approx(1.0)
    assert c.recommended_hit5 == 0.75 and c.best_hit5 == 0.75 and c.gap == 0.0
    with pytest.raises(ValueError, match="no setting in common"):
        tune.compare(generated, _result([_point(400, [1], 10)]), rec)


def test_the_rho_as_many_real_questions_reach_is_drawn_from_the_real_sweep() -> None:
    # 12 questions rank four settings 1-2-3-4, 8 the other way round: all 20 rank them 1, 4, 2, 3 by MRR; a few
    # drawn at random often rank them otherwise, many hardly ever.
    orders = {100: (1, 4), 200: (2, 3), 300: (3, 2), 400: (4, 1)}
    points = [_point(size, [first] * 12 + [second] * 8, 100) for size, (first, second) in orders.items()]
    few, many = tune.sampled_rho(points, 3), tune.sampled_rho(points, 400)
    assert few is not None and many is not None
    assert few[0] < few[1] < 0.9 < many[0] and many[1] == pytest.approx(1.0)
    assert tune.sampled_rho(points, 1) is None and tune.sampled_rho([], 10) is None
    c = tune.compare(_result(points), _result(points), recommend(_result(points)))
    assert c.floor == tune.sampled_rho(points, 20)  # as many as the generated set kept


# --- the cache of generated questions --------------------------------------------------------------------


def test_generated_questions_are_cached_for_the_same_document_model_and_count(tmp_path: Path) -> None:
    text = "The lighthouse keeper lit the lamp at dusk every evening."
    q = GeneratedQuestion("What did the keeper light?", "the lamp", 26, 34, 0, "en")
    generation = Generation((q,), 2, {"too_generic": 1, "duplicate": 0}, 61.5)
    path = tune.cache_path(tmp_path, "en_race", text, "model-a", 6)
    assert path.parent == tmp_path and path.name.startswith("en_race-6q-")
    assert tune.load_generation(path, text, "model-a", 6) is None  # nothing written yet
    tune.save_generation(path, generation, "model-a", 6)
    again = tune.load_generation(path, text, "model-a", 6)
    assert again is not None and again.cached and again.questions == (q,)
    assert (again.asked, dict(again.dropped), again.seconds, again.kept_share) == (2, generation.dropped, 61.5, 0.5)
    assert tune.load_generation(path, text, "model-b", 6) is None
    assert tune.load_generation(path, text, "model-a", 7) is None
    assert tune.load_generation(path, "Another text entirely, where the answer is not.", "model-a", 6) is None
    assert tune.cache_path(tmp_path, "en_race", text + ".", "model-a", 6) != path


def test_the_questions_dropped_as_matching_elsewhere_are_cached_beside_the_kept(tmp_path: Path) -> None:
    text = "The lighthouse keeper lit the lamp at dusk every evening. The ferry left at dawn."
    kept = GeneratedQuestion("What did the keeper light?", "the lamp", 26, 34, 0, "en")
    other = GeneratedQuestion("When did the ferry leave?", "dawn", 76, 80, 58, "en")
    path = tune.cache_path(tmp_path, "en_race", text, "model-a", 2)
    tune.save_generation(path, Generation((kept,), 2, {"matches_elsewhere": 1}, 9.0, elsewhere=(other,)), "model-a", 2)
    again = tune.load_generation(path, text, "model-a", 2)
    assert again is not None and again.questions == (kept,) and again.elsewhere == (other,)
    tune._elsewhere_path(path).unlink()  # a cache written before they were kept: none, not an error
    again = tune.load_generation(path, text, "model-a", 2)
    assert again is not None and again.questions == (kept,) and again.elsewhere == ()


def test_only_questions_dropped_as_matching_elsewhere_with_a_new_span_are_taken() -> None:
    text = "The lighthouse keeper lit the lamp at dusk. 灯塔在夜里亮起来。"
    kept = GeneratedQuestion("What did the keeper light?", "the lamp", 26, 34, 0, "en")
    rejected = (
        Rejected(checks.ELSEWHERE, "What was lit at dusk?", "lamp", 0, 30, 34),
        Rejected(checks.ELSEWHERE, "What was lit?", "lamp", 0, 30, 34),  # the same span again
        Rejected(checks.ELSEWHERE, "Which lamp?", "the lamp", 0, 26, 34),  # the kept question's span
        Rejected(checks.GENERIC, "When?", "at dusk", 0, 35, 42),
        Rejected(checks.ELSEWHERE, "什么亮起来？", "灯塔", 44, 44, 46),
        Rejected(checks.NOT_FOUND, "Who?", "Nobody", 0),
    )
    result = GeneratedQuestions((kept,), rejected, 6, 6, False, 1.0)
    taken = tune.elsewhere_questions(result, text)
    assert [(q.text, q.answer, q.start, q.language) for q in taken] == [
        ("What was lit at dusk?", "lamp", 30, "en"),
        ("什么亮起来？", "灯塔", 44, "zh"),
    ]


def test_variants_recompare_under_other_margins_and_with_the_dropped_questions() -> None:
    generated = _result([_point(100, [1] * 200, 900), _point(200, [1] * 199 + [2], 300)])
    real = _result([_point(100, [1, 1, 1, 1], 900), _point(200, [1, 1, 6, 6], 300)])
    q = GeneratedQuestion("Q?", "A", 0, 1, 0, "en")
    swept: list[int] = []

    def sweep(questions: Sequence[GeneratedQuestion]) -> SweepResult:
        swept.append(len(questions))
        return _result([_point(100, [1] * len(questions), 900), _point(200, [6] * len(questions), 300)])

    plain = tune.variants(Generation((q,), 2, {}, 1.0), generated, real, sweep)
    assert [v.name for v in plain] == ["recommendation margin 0", "recommendation margin 0.05"] and swept == []
    # Margin 0 takes the best (token 100); within 0.05 of it, 200 is the cheaper: real hit@5 0.5 against 1.0.
    assert [v.comparison.gap for v in plain] == [0.0, 0.5]
    loose = tune.variants(Generation((q,), 2, {}, 1.0, elsewhere=(q, q)), generated, real, sweep)
    assert swept == [3] and len(loose) == 2 + 3
    assert loose[2].name == "with the 2 matching other passages too, margin 0.02" and loose[2].questions == 3
    assert tune.variant_line("en", loose[2]).startswith(
        "en (e) with the 2 matching other passages too, margin 0.02, 3 questions: rho by MRR 1.00"
    )


def test_the_number_of_questions_comes_from_the_environment_when_set() -> None:
    assert tune.questions_for_run(True, {}) == tune.QUICK_QUESTIONS
    assert tune.questions_for_run(False, {}) is None  # each set asks its own number (tune.SETS)
    assert tune.questions_for_run(True, {tune.QUESTIONS_ENV: " 12 "}) == 12
    for bad in ("0", "ten", "101", "-3"):
        with pytest.raises(ValueError, match=tune.QUESTIONS_ENV):
            tune.questions_for_run(False, {tune.QUESTIONS_ENV: bad})


# --- the report lines ------------------------------------------------------------------------------------


def _outcome(language: str, comparison: Comparison | None, cached: bool = False) -> Outcome:
    q = GeneratedQuestion("Q?", "A", 0, 1, 0, language)
    return Outcome(
        language,
        "en_race" if language == "en" else "zh_cmrc_trial",
        50,
        66675,
        RealQuestions((Question("r", "A", None, (0, 1)),) * 69, 54, 15, 117),
        Generation((q,) * 4, 6, {"answer_not_found": 1, "too_generic": 1, "duplicate": 0}, 240.0, cached),
        comparison,
        12.4,
    )


def _comparison(rho: float | None, recommended: float, best: float, sure: bool = False) -> Comparison:
    return Comparison(
        24,
        rho,
        0.5,
        "recursive 256/32 · hybrid ×2.5",
        recommended,
        "spring 320 · hybrid ×2.5",
        best,
        sure,
        3,
        "ahead beyond noise" if sure else "cheapest of 4 within 0.05 of the best; 3 within noise",
        (0.3, 0.71, 0.88) if rho else None,
    )


def test_the_lines_give_the_four_figures_and_the_goals() -> None:
    lines = tune.outcome_lines(_outcome("en", _comparison(0.71, 0.80, 0.815)))
    assert lines == [
        "en (en_race): 50 passages as one document of 66,675 characters; 69 real questions placed by their answer "
        "(54 verbatim, 15 after normalising; 117 with no answer in their passage left out)",
        "en (c) generated: 4 kept of 6 asked (67%); dropped: answer_not_found 1, too_generic 1",
        "en (a) rank agreement over 24 settings, Spearman rho: by MRR 0.71 (goal >= 0.7: met), by hit@5 0.50; 4 "
        "real questions drawn at random reach 0.71 by MRR (median of 1,000 draws; 0.30-0.88 from the 10th to the 90th "
        "percentile)",
        "en (b) recommended recursive 256/32 · hybrid ×2.5 (cheapest of 4 within 0.05 of the best; 3 within noise): "
        "real hit@5 0.800; best in "
        "hindsight spring 320 · hybrid ×2.5 0.815; gap 0.015 (goal <= 0.02: met)",
        "en (d) wall time: questions 240 s, 40 s a question; sweeps (generated + real) 12 s",
    ]


def test_the_lines_say_what_was_missed_and_what_came_from_the_cache() -> None:
    lines = tune.outcome_lines(_outcome("zh", _comparison(None, 0.5, 0.6, sure=True), cached=True))
    assert "by MRR undefined (goal >= 0.7: NOT met)" in lines[2] and "drawn at random" not in lines[2]
    assert "(ahead beyond noise)" in lines[3] and "gap 0.100 (goal <= 0.02: NOT met)" in lines[3]
    assert lines[4].startswith("zh (d) wall time: questions 240 s when written (cached, not rerun), 40 s a question")
    assert tune.outcome_lines(_outcome("zh", None))[2] == "zh: no generated question kept: nothing to sweep on"


def test_the_summary_needs_both_goals_in_every_language() -> None:
    good, bad = _comparison(0.8, 0.9, 0.91), _comparison(0.8, 0.8, 0.9)
    met = tune.summary_line([_outcome("en", good), _outcome("zh", good)])
    assert met.endswith("en rho met, hit@5 gap met; zh rho met, hit@5 gap met -> met")
    assert tune.summary_line([_outcome("en", good), _outcome("zh", bad)]).endswith(
        "zh rho met, hit@5 gap NOT met -> NOT met"
    )
    assert tune.summary_line([_outcome("en", good), _outcome("zh", None)]).endswith("zh not scored -> NOT met")
    assert tune.summary_line([_outcome("en", None)]) == "goals: nothing scored"
