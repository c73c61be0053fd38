"""The questions of a retrieval check, each with the passage (or file) that answers it: from JSONL, a CSV
or a table."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from rag.errors import RagError
from rag.evaluation.normalise import normalise
from rag.text import Text

MAX_QUESTIONS = 500


@dataclass(frozen=True)
class Question:
    text: str
    expected: str
    """A passage of the document that answers the question (copied from it); "" when only `file` is given."""
    file: str | None = None
    """The file (`original_filename`) that answers it; None when only `expected` is given."""
    span: tuple[int, int] | None = None
    """[start, end) of the answer in the document's text (`Document.text`, which chunk offsets index), for a
    generated question: any chunk overlapping it answers the question, under every chunking alike
    (rag.evaluation.targets). None for a typed passage, found by its text."""

    def __post_init__(self) -> None:
        if self.span is not None and not 0 <= self.span[0] < self.span[1]:
            raise RagError(
                Text(
                    "the answer's span must have 0 <= start < end, got {start} and {end}",
                    start=self.span[0],
                    end=self.span[1],
                )
            )

    def overlaps(self, filename: str, start: int, end: int) -> bool:
        """Does the chunk of `filename` at [start, end) of its document's text overlap this question's answer
        span? False without a span."""
        if self.span is None or (self.file is not None and filename != self.file):
            return False
        return start < self.span[1] and end > self.span[0]

    def matches(self, filename: str, normalised_content: str) -> bool:
        """Does a chunk of `filename` whose `normalise`d text is `normalised_content` answer this
        question? Both `file` and `expected` must agree when both are given."""
        if self.file is not None and filename != self.file:
            return False
        return not self.expected or self.needle in normalised_content

    @cached_property
    def needle(self) -> str:
        """`normalise(expected)`: what a chunk's normalised text must contain."""
        return normalise(self.expected)


_COLUMNS = ("question", "file", "expected")


def parse_questions(data: bytes, source: str = Text("questions file"), *, limit: int | None = None) -> list[Question]:
    """Questions from JSONL (one `{"question", "file"}` and/or `{"question", "expected"}` object a
    line; `answer` stands for `expected` where that is missing, as the Chunk Lab writes it) or from a CSV
    whose header names `question` and `file` and/or `expected`, in any order.

    The format is told by the first character: `{` is JSONL. `rag eval` reads this; the Chunk
    Lab reads the same CSV (`parse_questions_csv`). Errors name `source` and the line.
    """
    text = _decode(data, source)
    if text.lstrip().startswith("{"):
        questions = _parse_jsonl(text, source)
    else:
        questions = _parse_csv(text, source, need_expected=False)
    if limit is not None and len(questions) > limit:
        raise RagError(
            Text(
                "{source}: {count} questions; at most {limit} are checked at once",
                source=source,
                count=len(questions),
                limit=limit,
            )
        )
    return questions


def parse_questions_csv(data: bytes) -> list[Question]:
    """The Chunk Lab's questions: a CSV with the header `question,expected` (UTF-8, with or without
    BOM; a `file` column may be there too, as in `rag eval`'s files).

    Blank lines are skipped; a row with a missing question or passage, or with more cells than
    the header, is an error naming its line.
    """
    source = Text("questions CSV")
    questions = _parse_csv(_decode(data, source), source, need_expected=True)
    if len(questions) > MAX_QUESTIONS:
        raise RagError(
            Text(
                "{source}: {count} questions; at most {limit} are checked at once",
                source=source,
                count=len(questions),
                limit=MAX_QUESTIONS,
            )
        )
    return questions


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RagError(
            Text(
                "{source}: not UTF-8 text (invalid byte 0x{byte} at offset {offset}); save it as UTF-8",
                source=source,
                byte=f"{data[exc.start]:02x}",
                offset=exc.start,
            )
        ) from None


def _parse_jsonl(text: str, source: str) -> list[Question]:
    questions: list[Question] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = Text("{source}: line {line}", source=source, line=number)
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RagError(
                Text("{where}: not JSON ({error}); write one object per line", where=where, error=exc.msg)
            ) from None
        if not isinstance(row, dict):
            raise RagError(
                Text(
                    '{where}: expected an object like {{"question": ..., "file": ...}}, got {line}',
                    where=where,
                    line=repr(line[:60]),
                )
            )
        cells = {key: row.get(key) for key in _COLUMNS}
        if cells["expected"] is None and isinstance(row.get("answer"), str):
            # The Chunk Lab's download (rag.tuning.files): its quoted answer is the expected passage. `rag eval`
            # refused it ("no expected passage"), though the page offers it to re-run the set.
            cells["expected"] = row["answer"]
        bad = [key for key, value in cells.items() if value is not None and not isinstance(value, str)]
        if bad:
            raise RagError(
                Text(
                    "{where}: {key} must be a string, got {value}",
                    where=where,
                    key=repr(bad[0]),
                    value=repr(cells[bad[0]]),
                )
            )
        questions.append(
            _question(
                (cells["question"] or "").strip(),
                (cells["expected"] or "").strip(),
                where,
                file=(cells["file"] or "").strip() or None,
                need_expected=False,
            )
        )
    if not questions:
        raise RagError(Text('{source}: no questions; write one {{"question", "file"}} object per line', source=source))
    return questions


def _parse_csv(text: str, source: str, *, need_expected: bool) -> list[Question]:
    wanted = "'question,expected'" if need_expected else Text("'question' and 'file' and/or 'expected'")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        while header is not None and not any(cell.strip() for cell in header):
            header = next(reader, None)
        if header is None:
            raise RagError(
                Text("{source}: the file is empty; the first line must be 'question,expected'", source=source)
            )
        names = [cell.strip().lower() for cell in header]
        while names and not names[-1]:
            names.pop()
        known = (
            set(names) <= set(_COLUMNS)
            and len(set(names)) == len(names)
            and "question" in names
            and ("expected" in names if need_expected else len(names) > 1)
        )
        if not known:
            raise RagError(
                Text(
                    "{source}: line {line}: the header must be {wanted}, got {header}",
                    source=source,
                    line=reader.line_num,
                    wanted=wanted,
                    header=repr(",".join(header)),
                )
            )
        questions: list[Question] = []
        line = reader.line_num + 1
        for row in reader:
            first_line, line = line, reader.line_num + 1
            cells = [cell.strip() for cell in row]
            while cells and not cells[-1] and len(cells) > len(names):
                cells.pop()
            if not any(cells):
                continue
            if len(cells) != len(names):
                raise RagError(
                    Text(
                        "{source}: line {line}: expected {count} columns ({names}), got {got}; put a cell that "
                        "contains commas in double quotes",
                        source=source,
                        line=first_line,
                        count=len(names),
                        names=",".join(names),
                        got=len(cells),
                    )
                )
            value = dict(zip(names, cells))
            questions.append(
                _question(
                    value["question"],
                    value.get("expected", ""),
                    Text("{source}: line {line}", source=source, line=first_line),
                    file=value.get("file") or None,
                    need_expected=need_expected,
                )
            )
    except csv.Error as exc:
        raise RagError(
            Text("{source}: line {line}: {error}", source=source, line=reader.line_num, error=str(exc))
        ) from None
    if not questions:
        raise RagError(
            Text("{source}: no questions below the header {header}", source=source, header=repr(",".join(names)))
        )
    return questions


def questions_from_rows(rows: Iterable[tuple[object, object]]) -> list[Question]:
    """Questions from table rows (question, expected); blank rows are skipped.

    A row with only one of the two filled in is an error naming its row (1-based).
    """
    questions: list[Question] = []
    for number, (question, expected) in enumerate(rows, start=1):
        q, e = _cell(question), _cell(expected)
        if not q and not e:
            continue
        questions.append(_question(q, e, Text("row {row}", row=number)))
    if len(questions) > MAX_QUESTIONS:
        raise RagError(
            Text("{count} questions; at most {limit} are checked at once", count=len(questions), limit=MAX_QUESTIONS)
        )
    return questions


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    text = str(value)
    return "" if text in ("nan", "<NA>", "None") and not isinstance(value, str) else text.strip()


def _question(
    question: str, expected: str, where: str, *, file: str | None = None, need_expected: bool = True
) -> Question:
    if not question:
        raise RagError(Text("{where}: the question is empty; type it or delete the row", where=where))
    if not expected and (need_expected or file is None):
        if need_expected:
            raise RagError(
                Text(
                    "{where}: no expected passage for {question}; paste the sentence of the document that answers it",
                    where=where,
                    question=repr(question[:60]),
                )
            )
        raise RagError(
            Text(
                "{where}: no expected passage for {question}; paste the sentence of the document "
                "that answers it, or name the file that does",
                where=where,
                question=repr(question[:60]),
            )
        )
    return Question(question, expected, file)
