"""The evaluation data shipped in `data/`: the Chunk Lab's sample document with its questions, and
the retrieval question set (English and Chinese) that the benchmark and the tests measure with.

Plain files next to this module, so that they are edited as text, not as code.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.evaluation.questions import Question

DATA_DIR = Path(__file__).with_name("data")
SAMPLE_FILENAME = "sample-field-guide.md"


@dataclass(frozen=True)
class Sample:
    """A built-in example, so the Chunk Lab is never empty."""

    filename: str
    text: str
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Passage:
    key: str
    text: str


@dataclass(frozen=True)
class QA:
    question: str
    passage: str
    """The key of the passage that answers it."""


@dataclass(frozen=True)
class RetrievalSet:
    """Each question is answered by exactly one passage, which it paraphrases rather than quotes (so
    keyword search cannot win on copied phrases alone); distractors are near neighbours of the
    answers (same topics, other facts) that make ranking matter."""

    passages: tuple[Passage, ...]
    distractors: tuple[Passage, ...]
    questions: tuple[QA, ...]


def _json(name: str) -> Any:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


@functools.cache
def sample() -> Sample:
    """The Chunk Lab's sample document (a depot field guide) and ten questions on it."""
    questions = tuple(Question(q["question"], q["expected"]) for q in _json("sample-questions.json")["questions"])
    return Sample(SAMPLE_FILENAME, (DATA_DIR / SAMPLE_FILENAME).read_text(encoding="utf-8"), questions)


@functools.cache
def retrieval_set() -> RetrievalSet:
    """The 24-question retrieval set with its passages and distractors."""
    data = _json("retrieval-set.json")
    return RetrievalSet(
        passages=tuple(Passage(p["key"], p["text"]) for p in data["passages"]),
        distractors=tuple(Passage(p["key"], p["text"]) for p in data["distractors"]),
        questions=tuple(QA(q["question"], q["passage"]) for q in data["questions"]),
    )
