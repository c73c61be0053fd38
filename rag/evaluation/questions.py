"""The questions of a retrieval check, each with the passage that answers it: from a CSV or a table."""
from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass

from rag.errors import RagError

MAX_QUESTIONS = 500


@dataclass(frozen=True)
class Question:
    text: str
    expected: str
    """A passage of the document that answers the question (copied from it)."""


def parse_questions_csv(data: bytes) -> list[Question]:
    """Questions from a CSV with the header `question,expected` (UTF-8, with or without BOM).

    Blank lines are skipped; a row with a missing question or passage, or with more than two
    columns, is an error naming its line.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RagError(
            f"questions CSV: not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        while header is not None and not any(cell.strip() for cell in header):
            header = next(reader, None)
        if header is None:
            raise RagError("questions CSV: the file is empty; the first line must be 'question,expected'")
        names = [cell.strip().lower() for cell in header]
        while names and not names[-1]:
            names.pop()
        if names != ["question", "expected"]:
            raise RagError(
                f"questions CSV: line {reader.line_num}: the header must be 'question,expected', "
                f"got {','.join(header)!r}"
            )
        questions: list[Question] = []
        line = reader.line_num + 1
        for row in reader:
            first_line, line = line, reader.line_num + 1
            cells = [cell.strip() for cell in row]
            while cells and not cells[-1] and len(cells) > 2:
                cells.pop()
            if not any(cells):
                continue
            if len(cells) != 2:
                raise RagError(
                    f"questions CSV: line {first_line}: expected 2 columns (question,expected), got "
                    f"{len(cells)}; put a cell that contains commas in double quotes"
                )
            questions.append(_question(cells[0], cells[1], f"questions CSV: line {first_line}"))
    except csv.Error as exc:
        raise RagError(f"questions CSV: line {reader.line_num}: {exc}") from None
    if not questions:
        raise RagError("questions CSV: no questions below the header 'question,expected'")
    if len(questions) > MAX_QUESTIONS:
        raise RagError(f"questions CSV: {len(questions)} questions; at most {MAX_QUESTIONS} are checked at once")
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
        questions.append(_question(q, e, f"row {number}"))
    if len(questions) > MAX_QUESTIONS:
        raise RagError(f"{len(questions)} questions; at most {MAX_QUESTIONS} are checked at once")
    return questions


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    text = str(value)
    return "" if text in ("nan", "<NA>", "None") and not isinstance(value, str) else text.strip()


def _question(question: str, expected: str, where: str) -> Question:
    if not question:
        raise RagError(f"{where}: the question is empty; type it or delete the row")
    if not expected:
        raise RagError(
            f"{where}: no expected passage for {question[:60]!r}; paste the sentence of the document "
            "that answers it"
        )
    return Question(question, expected)
