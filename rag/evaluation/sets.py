"""The public retrieval sets in `data/eval/` (English and Chinese): passages and the questions they answer.

Each set is two JSONL files, `NAME.passages.jsonl` (`{"pid", "text"}`) and `NAME.questions.jsonl`
(`{"qid", "question", "pid", ...}`); `data/eval/README.md` gives their sources and licences.
The benchmark ingests each passage as its own document named by its `pid`, so a question's
expected file is its `pid`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.errors import RagError
from rag.evaluation.datasets import DATA_DIR, Passage
from rag.evaluation.questions import Question

EVAL_DIR = DATA_DIR / "eval"
SETS = ("en_race", "zh_c3", "zh_cmrc_trial")
"""The sets, in the order they are reported."""


@dataclass(frozen=True)
class EvalSet:
    name: str
    passages: tuple[Passage, ...]
    """Each keyed by its pid."""
    questions: tuple[Question, ...]
    """Each with `file` = the pid of the passage that answers it (no `expected` text)."""
    answers: tuple[tuple[str, ...], ...] = ()
    """The gold answer texts of each question, in the same order."""

    @property
    def language(self) -> str:
        return self.name.split("_", 1)[0]

    def sample(self, n: int | None) -> tuple[Question, ...]:
        """At most `n` questions, evenly spaced through the set (the same ones every run)."""
        return tuple(self.questions[i] for i in self.sample_indices(n))

    def sample_indices(self, n: int | None) -> range | tuple[int, ...]:
        """The positions of the questions `sample(n)` picks."""
        if n is None or n >= len(self.questions):
            return range(len(self.questions))
        step = len(self.questions) / n
        return tuple(int(i * step) for i in range(n))


def _rows(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RagError(
            f"{path}: cannot read the evaluation set ({exc.strerror or exc}); "
            "restore rag/evaluation/data/eval from the repository"
        ) from exc
    return [json.loads(line) for line in lines if line.strip()]


@functools.cache
def eval_set(name: str) -> EvalSet:
    """One of `SETS`, read from `data/eval/`."""
    if name not in SETS:
        raise RagError(f"unknown evaluation set {name!r} (choose from: {', '.join(SETS)})")
    passages = tuple(Passage(str(p["pid"]), p["text"]) for p in _rows(EVAL_DIR / f"{name}.passages.jsonl"))
    rows = _rows(EVAL_DIR / f"{name}.questions.jsonl")
    questions = tuple(Question(q["question"], "", str(q["pid"])) for q in rows)
    return EvalSet(name, passages, questions, tuple(tuple(q.get("answers", ())) for q in rows))
