"""rag.evaluation.reading: the words the Chunk Lab puts next to a report, on a report built by hand."""

from __future__ import annotations

from rag.chunking import SPRING_DEFAULT
from rag.evaluation import EvaluationReport, Question, reading
from rag.evaluation.ranking import QuestionResult, SettingResult

QUESTIONS = (Question("How much did revenue grow?", "twelve percent"), Question("Who approved it?", "the board"))


def _q(
    question: Question,
    rank: int | None,
    *,
    targets: tuple[int, ...] = (),
    split: bool = False,
    coverage: float = 1.0,
    found: bool = True,
    top: int | None = 0,
) -> QuestionResult:
    return QuestionResult(
        question, rank, 0.5 if rank else None, targets, split, coverage, found, top, 0.9 if top is not None else None
    )


def _setting(label: str, n_chunks: int, *questions: QuestionResult) -> SettingResult:
    return SettingResult(label, SPRING_DEFAULT, n_chunks, ((1, 0.5), (3, 1.0), (5, 1.0)), 0.75, questions)


REPORT = EvaluationReport(
    ks=(1, 3, 5),
    embedder="local:test",
    questions=QUESTIONS,
    embedded=4,
    reused=0,
    results=(
        _setting(
            "A: spring 800",
            3,
            _q(QUESTIONS[0], 1, targets=(0,)),
            _q(QUESTIONS[1], 2, targets=(1, 2), split=True, coverage=0.6),
        ),
        _setting(
            "B: token 128/16",
            40,
            _q(QUESTIONS[0], None, targets=(5,), top=None),
            _q(QUESTIONS[1], None, found=True, targets=()),
        ),
    ),
)


def test_few_chunks_make_hit_at_k_trivial() -> None:
    assert [r.label for r in reading.trivial(REPORT)] == ["A: spring 800"]


def test_notes_per_question() -> None:
    letter = lambda label: label.split(":")[0]  # noqa: E731
    assert reading.question_notes(REPORT, 0, name=letter) == []
    assert reading.question_notes(REPORT, 1, name=letter) == [
        "A: split across chunks, chunk 1, 2 holds 60%",
        "B: the passage is only in text no chunk kept",
    ]
    assert reading.question_notes(REPORT, 1)[0].startswith("A: spring 800: split across chunks")


def test_a_passage_found_nowhere_is_noted_first() -> None:
    lost = EvaluationReport(
        ks=(1,),
        embedder="e",
        questions=QUESTIONS[:1],
        embedded=0,
        reused=0,
        results=(
            _setting("A", 9, _q(QUESTIONS[0], 4, targets=(3,), split=True, coverage=0.5, found=False)),
            _setting("B", 9, _q(QUESTIONS[0], None, found=False, top=None)),
        ),
    )
    assert reading.question_notes(lost, 0) == [
        "passage not found in the document (approximate match)",
        "A: split across chunks, chunk 3 holds 50%",
    ]
    nowhere = EvaluationReport(
        ks=(1,),
        embedder="e",
        questions=QUESTIONS[:1],
        embedded=0,
        reused=0,
        results=(_setting("A", 9, _q(QUESTIONS[0], None, found=False, top=None)),),
    )
    assert reading.question_notes(nowhere, 0) == ["passage not found in the document"]


def test_misses_are_the_pairs_not_ranked_first_with_a_top_chunk() -> None:
    assert [(r.label, q.question.text) for r, q in reading.misses(REPORT)] == [
        ("A: spring 800", "Who approved it?"),
        ("B: token 128/16", "Who approved it?"),
    ]
