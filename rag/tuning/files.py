"""A generated question set as JSONL, one `{"question", "answer", "start", "end", "language"}` object a
line (and `passage_start`, optional), so that a set can be kept, edited and checked again later.

Reading refuses the first bad line with one message naming the line and what is wrong with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from rag.errors import RagError
from rag.evaluation.normalise import normalise
from rag.text import Text
from rag.tuning.questions import GeneratedQuestion

LANGUAGES = ("en", "zh")


def dump_questions(questions: Iterable[GeneratedQuestion]) -> str:
    """The questions as JSONL (UTF-8 text, Chinese written as itself, one line each)."""
    return "".join(
        json.dumps(
            {
                "question": q.text,
                "answer": q.answer,
                "start": q.start,
                "end": q.end,
                "language": q.language,
                "passage_start": q.passage_start,
            },
            ensure_ascii=False,
        )
        + "\n"
        for q in questions
    )


def load_questions(
    data: str | bytes, source: str = Text("questions file"), document: str | None = None
) -> list[GeneratedQuestion]:
    """The questions of a JSONL file written by `dump_questions` (blank lines skipped). With `document`,
    each answer must stand at its [start, end) there (compared as the retrieval check compares text)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise RagError(
                Text("{source}: not UTF-8 text (invalid byte at offset {offset})", source=source, offset=exc.start)
            ) from None
    questions: list[GeneratedQuestion] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if line.strip():
            questions.append(_question(line, document, Text("{source}: line {line}", source=source, line=number)))
    return questions


def _question(line: str, document: str | None, where: str) -> GeneratedQuestion:
    def bad(reason: str) -> RagError:
        return RagError(Text("{where}: {reason}", where=where, reason=reason))

    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise bad(Text("not JSON ({error})", error=exc.msg)) from None
    if not isinstance(row, dict):
        raise bad(Text('expected an object with "question", "answer", "start", "end" and "language"'))
    for key in ("question", "answer", "language"):
        value = row.get(key)
        if not isinstance(value, str) or not value.strip():
            raise bad(Text("{key} must be a non-empty string, got {value}", key=repr(key), value=repr(value)))
    numbers: dict[str, int] = {}
    for key in ("start", "end", "passage_start"):
        if key not in row and key != "passage_start":
            raise bad(Text("{key} is missing", key=repr(key)))
        value = row.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise bad(Text("{key} must be a whole number, 0 or more, got {value}", key=repr(key), value=repr(value)))
        numbers[key] = value
    start, end = numbers["start"], numbers["end"]
    if end <= start:
        raise bad(Text("the answer's span must have start < end, got {start} and {end}", start=start, end=end))
    if row["language"] not in LANGUAGES:
        raise bad(
            Text(
                "language must be one of {choices}, got {value}",
                choices=", ".join(LANGUAGES),
                value=repr(row["language"]),
            )
        )
    if document is not None and normalise(document[start:end]) != normalise(row["answer"]):
        raise bad(
            Text(
                "the answer {answer} is not at {start}-{end} of the document (found {found} there)",
                answer=repr(row["answer"][:60]),
                start=start,
                end=end,
                found=repr(document[start:end][:60]),
            )
        )
    passage_start = numbers["passage_start"] if "passage_start" in row else start
    return GeneratedQuestion(row["question"].strip(), row["answer"], start, end, passage_start, row["language"])
