"""A generated question set as JSONL: written, read back, and a bad line refused with its number."""

from __future__ import annotations

import json

import pytest

from rag.errors import RagError
from rag.tuning import GeneratedQuestion, dump_questions, load_questions

DOCUMENT = "白沙灯塔由工程师李明远于1801年建造。The Arden lighthouse was built by Mara Quill."
QUESTIONS = [
    GeneratedQuestion("白沙灯塔是由哪位工程师建造的？", "李明远", 8, 11, 0, "zh"),
    GeneratedQuestion("Who built the Arden lighthouse?", "Mara Quill", 54, 64, 20, "en"),
]


def test_a_question_set_survives_the_round_trip() -> None:
    text = dump_questions(QUESTIONS)
    assert text.count("\n") == 2 and "李明远" in text  # one line each, Chinese as itself
    assert json.loads(text.splitlines()[1]) == {
        "question": "Who built the Arden lighthouse?",
        "answer": "Mara Quill",
        "start": 54,
        "end": 64,
        "language": "en",
        "passage_start": 20,
    }
    assert load_questions(text, document=DOCUMENT) == QUESTIONS
    assert load_questions(("\ufeff" + text + "\n\n").encode()) == QUESTIONS  # BOM and blank lines


def test_passage_start_may_be_left_out() -> None:
    line = '{"question": "Who?", "answer": "Mara Quill", "start": 54, "end": 64, "language": "en"}'
    assert load_questions(line)[0].passage_start == 54


GOOD = '{"question": "Who?", "answer": "Mara Quill", "start": 54, "end": 64, "language": "en"}'


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "questions file: line 2: not JSON (Expecting property name enclosed in double quotes)"),
        (
            "[1, 2]",
            'questions file: line 2: expected an object with "question", "answer", "start", "end" and "language"',
        ),
        (GOOD.replace('"Who?"', '""'), "questions file: line 2: 'question' must be a non-empty string, got ''"),
        (GOOD.replace('"Mara Quill"', "7"), "questions file: line 2: 'answer' must be a non-empty string, got 7"),
        (GOOD.replace('"start": 54, ', ""), "questions file: line 2: 'start' is missing"),
        (GOOD.replace("54", '"54"'), "questions file: line 2: 'start' must be a whole number, 0 or more, got '54'"),
        (GOOD.replace("64", "true"), "questions file: line 2: 'end' must be a whole number, 0 or more, got True"),
        (GOOD.replace("64", "50"), "questions file: line 2: the answer's span must have start < end, got 54 and 50"),
        (GOOD.replace('"en"', '"fr"'), "questions file: line 2: language must be one of en, zh, got 'fr'"),
        (
            GOOD.replace("54", "55"),
            "questions file: line 2: the answer 'Mara Quill' is not at 55-64 of the document (found 'ara Quill' there)",
        ),
    ],
)
def test_a_bad_line_is_refused_naming_its_number_and_reason(line: str, message: str) -> None:
    with pytest.raises(RagError) as caught:
        load_questions(GOOD + "\n" + line + "\n" + GOOD, document=DOCUMENT)
    assert str(caught.value) == message and "\n" not in str(caught.value)


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(RagError, match=r"questions.jsonl: not UTF-8 text \(invalid byte at offset 1\)"):
        load_questions(b"{\xff", "questions.jsonl")
